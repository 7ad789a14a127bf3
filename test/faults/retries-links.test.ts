import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import { AGENTS } from '../../src/hooks/agents.js';
import { tempFolder } from '../helpers/temp.js';
import { CLI } from '../cli/harness.js';
import { listing, sandbox, writeTree } from '../session/helpers.js';
import { observerPerEvent, Tally, trials } from './campaign.js';

// Two classes of issue #30.
//
// Retried call ids: an agent's tool call begun again under its id (Pre, Pre, …, Post), each event
// in an observer of its own as the hooks run, with changes to a few files between the events, in
// seeded random orders and counts. Held: undoing the call brings every file back to what it was
// before the first Pre, byte for byte, and so does undoing the turn.
//
// Linked config paths: every agent's settings path, with a link at the file or at a folder on its
// way, pointing at an outside file or folder; install and uninstall (project and --user). Held:
// nothing outside changes, and the command refuses (exit 1) instead of reporting an install.

const FILES = ['a.txt', 'b.txt', 'd/c.txt'];

function expectEqual(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: ${a} instead of ${e}`);
}

describe('fault campaign: retried call ids', () => {
  it('Pre, Pre…, Post under one id with changes between: the undo always reaches the original', async () => {
    const tally = new Tally('retried call ids', 3030);
    for (let t = 0; t < trials(60, 6); t++) {
      const pres = tally.random.int(2, 4);
      const scoped = tally.random.int(0, 1) === 1;
      await tally.trial(`trial ${t}: ${pres} before events, ${scoped ? 'named files' : 'whole tree'}`, async () => {
        const { project, storeDir } = await sandbox();
        await writeTree(project, { 'a.txt': 'a original\n', 'b.txt': 'b original\n', 'd/c.txt': 'c original\n', 'keep.txt': 'keep\n' });
        const start = await listing(project);
        const event = observerPerEvent(storeDir, project);
        const boundary = await event((o) => o.beginTurn({ label: 'retried' }));
        for (let pre = 0; pre < pres; pre++) {
          await event((o) => o.callBegin('toolu_retry', { detached: true, ...(scoped ? { paths: FILES } : {}) }));
          // What this attempt does: rewrite, delete or create some of the files.
          for (const file of FILES) {
            const choice = tally.random.int(0, 3);
            const absolute = path.join(project, file);
            if (choice === 1) await fs.writeFile(absolute, `${file} attempt ${pre} ${tally.random.int(0, 1e6)}\n`);
            else if (choice === 2) await fs.rm(absolute, { force: true });
            else if (choice === 3) {
              await fs.mkdir(path.dirname(absolute), { recursive: true });
              await fs.writeFile(absolute, `${file} again ${pre}\n`);
            }
          }
        }
        const attribution = await event((o) => o.callEnd('toolu_retry'));
        const report = await event((o) => o.restoreCall(boundary, attribution));
        if (report.refused.length > 0) throw new Error(`the call undo refused ${report.refused.map((r) => r.path).join(', ')}`);
        expectEqual(await listing(project), start, 'after undoing the call');
        const again = await event((o) => o.restore(boundary));
        if (again.refused.length > 0) throw new Error(`the turn undo refused ${again.refused.map((r) => r.path).join(', ')}`);
        expectEqual(await listing(project), start, 'after undoing the turn');
      });
    }
    tally.finish();
  });
});

describe('fault campaign: linked config paths', () => {
  it('a link out of the project or home at each settings path: install and uninstall change nothing outside', async () => {
    const tally = new Tally('linked config paths', 3031);
    const specs = Object.values(AGENTS);
    for (let t = 0; t < trials(48, 6); t++) {
      const spec = specs[tally.random.int(0, specs.length - 1)] as (typeof specs)[number];
      const user = tally.random.int(0, 1) === 1;
      const relative = user ? spec.files.user : spec.files.project;
      const parts = relative.split('/');
      // Which component is the link: one of the folders on the way, or the file itself.
      const at = tally.random.int(1, parts.length);
      const command = tally.random.int(0, 1) === 0 ? 'install' : 'uninstall';
      await tally.trial(`${spec.name} ${user ? '--user' : 'project'} ${parts.slice(0, at).join('/')} linked, ${command}`, async () => {
        const root = await tempFolder('turnback-fault-links-');
        const home = path.join(root, 'home');
        const proj = path.join(root, 'proj');
        const outside = await tempFolder('turnback-outside-');
        await fs.mkdir(home);
        await fs.mkdir(proj);
        spawnSync('git', ['init', '-q'], { cwd: proj });
        const base = user ? home : proj;
        const linkPath = path.join(base, ...parts.slice(0, at));
        await fs.mkdir(path.dirname(linkPath), { recursive: true });
        if (at === parts.length) {
          await fs.writeFile(path.join(outside, 'victim.json'), '{ "mine": 1 }\n');
          await fs.symlink(path.join(outside, 'victim.json'), linkPath);
        } else await fs.symlink(outside, linkPath);
        const before = await listing(outside);
        const env = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1', TURNBACK_SERVER: 'off' };
        const result = spawnSync(process.execPath, ['--no-warnings', CLI, 'hooks', command, spec.name, ...(user ? ['--user'] : [])], { cwd: proj, env, encoding: 'utf8' });
        expectEqual(await listing(outside), before, 'the outside folder');
        if (result.status !== 1) throw new Error(`exit ${String(result.status)}: ${result.stdout}${result.stderr}`);
        if (!result.stderr.includes(linkPath)) throw new Error(`the refusal does not name ${linkPath}: ${result.stderr}`);
      });
    }
    tally.finish();
  });
});
