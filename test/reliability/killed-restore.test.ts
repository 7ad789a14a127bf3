import { spawn } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { withSeed } from '../helpers/seed.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

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
