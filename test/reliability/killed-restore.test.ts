import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { withSeed } from '../helpers/seed.js';
import { listing, openObserver, sandbox, writeTree } from '../session/helpers.js';

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/admin.js');

// Writes every file, then restores, in a loop; in round `round` it kills itself `ticks`
// event-loop turns after the apply's first stage or displaced file appears (it watches the first
// folder the apply writes in), so the kill lands inside the apply.
const CHILD = `
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
const { openStore, openObserver } = await import(${JSON.stringify(DIST)});
const [project, storeDir, round, ticks] = process.argv.slice(2).map((v, i) => (i < 2 ? v : Number(v)));
const observer = openObserver(await openStore(storeDir, { projectRoot: project }), { sessionId: 'dying' });
for (let r = 0; ; r++) {
  const turn = await observer.beginTurn({ label: 'round ' + r });
  for (let i = 0; i < 1500; i++) {
    const rel = 'd' + (i % 15) + '/f' + i + '.txt';
    await observer.beforeWrite(rel);
    await fs.writeFile(path.join(project, rel), 'round ' + r + ' file ' + i);
    await observer.afterWrite(rel);
  }
  if (r === round) {
    const { readdirSync } = await import('node:fs');
    let n = -1;
    const tick = () => {
      if (n < 0 && readdirSync(path.join(project, 'd0')).some((name) => name.startsWith('.turnback-') && !name.includes('not-ours'))) n = 0;
      if (n >= 0 && ++n >= ticks) process.kill(process.pid, 'SIGKILL');
      setImmediate(tick);
    };
    setImmediate(tick);
  }
  await observer.restore(turn);
}
`;

async function leftovers(dir: string, rel = ''): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const r = rel === '' ? entry.name : `${rel}/${entry.name}`;
    if (entry.name.startsWith('.turnback-')) found.push(r);
    else if (entry.isDirectory()) found.push(...(await leftovers(path.join(dir, entry.name), r)));
  }
  return found.sort();
}

describe('a restore killed mid-apply leaves no .turnback-* files for long', () => {
  it('the next restore removes exactly what the killed one recorded, and reports it', () =>
    withSeed(31337, async (random) => {
      const { base, project, storeDir } = await sandbox();
      await writeTree(project, Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`d${i % 15}/f${i}.txt`, `original ${i}`])));
      await fs.writeFile(path.join(project, 'd0', '.turnback-stage-not-ours'), 'a name that is not from the killed restore');
      const script = path.join(base, 'child.mjs');
      await fs.writeFile(script, CHILD);
      // A kill that lands in the commit, after its unlinks, leaves nothing: then the child runs again
      // (seeded, at most three times) until one leaves stage or displaced files behind.
      let left: string[] = [];
      for (let attempt = 0; attempt < 3 && left.length === 0; attempt++) {
        const child = spawn(process.execPath, [script, project, storeDir, '0', String(random.int(1, 3))], { stdio: ['ignore', 'ignore', 'inherit'] });
        await new Promise((resolve) => child.once('exit', resolve));
        left = (await leftovers(project)).filter((name) => name !== 'd0/.turnback-stage-not-ours');
      }
      expect(left.length).toBeGreaterThan(0);
      const observer = await openObserver(project, storeDir, { sessionId: 'after' });
      const first = (await observer.store.list()).find((m) => m.kind === 'turn');
      const report = await observer.restore(first!.id);
      expect(report.removedLeftovers).toEqual(left);
      // A name the killed restore did not make is reported for a person, never removed.
      expect(report.cleanupPending).toEqual(['d0/.turnback-stage-not-ours']);
      expect((await leftovers(project)).filter((name) => name !== 'd0/.turnback-stage-not-ours')).toEqual([]);
      await observer.close();
      // A name the killed restore did not make is never removed.
      expect(await fs.readFile(path.join(project, 'd0', '.turnback-stage-not-ours'), 'utf8')).toBe('a name that is not from the killed restore');
    }));
});

// Issue #27: a SIGKILLed `turnback undo` is rolled back by the next command that opens the store,
// which says so once. The undo is killed deterministically: a preload counts its file-system calls
// on `.turnback-*` names (stage, displace, publish) and SIGKILLs the process at a seeded one.
const KILLER = `
const fs = require('node:fs');
const at = Number(process.env.TURNBACK_TEST_KILL_AT);
let calls = 0;
const ours = (args) => args.some((a) => typeof a === 'string' && a.includes('.turnback-'));
const count = (args) => { if (ours(args) && ++calls >= at) process.kill(process.pid, 'SIGKILL'); };
for (const name of ['openSync', 'linkSync', 'renameSync', 'unlinkSync', 'symlinkSync']) {
  const real = fs[name];
  fs[name] = function (...args) { count(args); return real.apply(this, args); };
}
for (const name of ['open', 'link', 'rename', 'unlink', 'symlink']) {
  const real = fs.promises[name];
  fs.promises[name] = function (...args) { count(args); return real.apply(this, args); };
}
`;

describe('a SIGKILLed undo (issue #27)', () => {
  it('the next command rolls it back, removes its leftovers, says so once, and the next undo needs no --force', () =>
    withSeed(2027, async (random) => {
      const { cliRepo, CLI } = await import('../cli/harness.js');
      const COUNT = 2000;
      const repo = await cliRepo(Object.fromEntries(Array.from({ length: COUNT }, (_, i) => [`d${i % 20}/f${i}.txt`, `orig ${i}\n`])));
      const script = `const fs=require('fs');for(let i=0;i<${COUNT};i++)fs.writeFileSync('d'+(i%20)+'/f'+i+'.txt','agent '+i+'\\n')`;
      expect(repo.tb(['run', '--', process.execPath, '-e', script]).code).toBe(0);
      const agent = await listing(repo.proj);
      const killer = path.join(repo.home, 'killer.cjs');
      await fs.writeFile(killer, KILLER);
      // Every file costs the undo at least two calls on `.turnback-*` names: a point up to 1,500 lands mid-apply.
      const killAt = random.int(100, 1500);
      const child = spawn(process.execPath, ['--no-warnings', '--require', killer, CLI, 'undo', '--yes'], {
        cwd: repo.proj,
        env: { ...repo.env, TURNBACK_SERVER: 'off', TURNBACK_TEST_KILL_AT: String(killAt) },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let killedStderr = '';
      child.stderr.on('data', (d: Buffer) => (killedStderr += d.toString()));
      const [, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('close', (c, s) => resolve([c, s])));
      expect(signal, killedStderr).toBe('SIGKILL');
      let writtenBack = 0;
      for (let i = 0; i < COUNT; i++) {
        const text = await fs.readFile(path.join(repo.proj, `d${i % 20}`, `f${i}.txt`), 'utf8').catch(() => 'missing');
        if (text.startsWith('orig')) writtenBack += 1;
      }
      // Stopped half way: some files written back, not all, and its temp files in the project.
      expect(writtenBack, killedStderr).toBeLessThan(COUNT);
      expect((await leftovers(repo.proj)).length).toBeGreaterThan(0);

      const status = repo.tb(['status']);
      expect(status.code).toBe(0);
      expect(status.stderr).toMatch(/an undo was killed after writing back [\d,]+ of 2,000 files; rolled back: every file is as it was before that undo/);
      expect(await leftovers(repo.proj)).toEqual([]);
      expect(await listing(repo.proj)).toEqual(agent);
      // Once: the next command has nothing to say about it.
      expect(repo.tb(['list']).stderr).not.toContain('was killed after writing back');
      expect(repo.tb(['list']).stdout).toContain('cancelled, nothing changed');

      const undo = repo.tb(['undo', '--yes']);
      expect(undo.code, undo.stdout + undo.stderr).toBe(0);
      expect(undo.stdout + undo.stderr).not.toContain('no record');
      for (let i = 0; i < COUNT; i += 97) expect(await fs.readFile(path.join(repo.proj, `d${i % 20}`, `f${i}.txt`), 'utf8')).toBe(`orig ${i}\n`);
      expect(await leftovers(repo.proj)).toEqual([]);
    }), 120_000);
});

describe('a SIGKILLed restore leaves no stage for the next command to find (issue #27)', () => {
  it('list removes the dead restore\'s stage files and says so once; a live process\'s are never touched, a reused pid\'s are', () =>
    withSeed(2028, async (random) => {
      const { CLI } = await import('../cli/harness.js');
      // This process's start time as /proc/PID/stat gives it (field 22).
      const stat = await fs.readFile(`/proc/${process.pid}/stat`, 'utf8');
      const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      const { base, project, storeDir } = await sandbox();
      await writeTree(project, Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`d${i % 15}/f${i}.txt`, `original ${i}`])));
      const script = path.join(base, 'child.mjs');
      await fs.writeFile(script, CHILD);
      let left: string[] = [];
      for (let attempt = 0; attempt < 3 && left.length === 0; attempt++) {
        const child = spawn(process.execPath, [script, project, storeDir, '0', String(random.int(1, 3))], { stdio: ['ignore', 'ignore', 'inherit'] });
        await new Promise((resolve) => child.once('exit', resolve));
        left = await leftovers(project);
      }
      expect(left.length).toBeGreaterThan(0);
      // A restore of this (live) process, and one whose pid lives on in another process (its start time differs).
      const live = { pid: process.pid, startTime, base: 'aaaaaaaaaaaa', folders: ['d1'] };
      const reused = { pid: process.pid, startTime: '1', base: 'bbbbbbbbbbbb', folders: ['d2'] };
      for (const record of [live, reused]) {
        await fs.writeFile(path.join(storeDir, 'state', `applying-${record.pid}-${record.base}.json`), JSON.stringify(record));
        await fs.writeFile(path.join(project, record.folders[0] as string, `.turnback-stage-${record.base}0001`), 'staged');
      }
      const env = { PATH: process.env.PATH, HOME: base, NO_COLOR: '1', TURNBACK_SERVER: 'off' };
      const tb = (args: string[]) => spawnSync(process.execPath, ['--no-warnings', CLI, ...args, '--project', project, '--store', storeDir], { cwd: project, env, encoding: 'utf8' });
      const first = tb(['list']);
      expect(first.status, first.stderr).toBe(0);
      expect(first.stderr).toMatch(/removed|rolled back/);
      expect(await leftovers(project)).toEqual(['d1/.turnback-stage-aaaaaaaaaaaa0001']);
      const second = tb(['status']);
      expect(second.stderr).not.toMatch(/removed|rolled back|was killed/);
      expect(await leftovers(project)).toEqual(['d1/.turnback-stage-aaaaaaaaaaaa0001']);
    }), 120_000);
});
