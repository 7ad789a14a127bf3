// A process of the fault campaign (test/faults/): it works on a project and store through the
// built package, as an agent's process would, and can be made to SIGKILL itself just before its
// N-th file-system call that writes, moves or removes (`killAt`, counted from `arm()`: the
// campaign first runs it with no kill point to count the calls, then draws points from them).
// The calls are counted by wrapping node:fs before the package is loaded.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const job = JSON.parse(process.argv[2]);
const fsSync = require('node:fs');
const fsp = require('node:fs/promises');
let calls = 0;
let armed = false;
const hit = () => {
  if (!armed) return;
  calls += 1;
  if (calls === job.killAt) process.kill(process.pid, 'SIGKILL');
};
const SYNC = ['openSync', 'writeSync', 'renameSync', 'linkSync', 'unlinkSync', 'mkdirSync', 'rmdirSync', 'fsyncSync', 'ftruncateSync', 'writeFileSync', 'appendFileSync', 'symlinkSync', 'fchmodSync', 'copyFileSync', 'lchownSync'];
const ASYNC = ['open', 'rename', 'link', 'unlink', 'mkdir', 'rmdir', 'writeFile', 'appendFile', 'symlink', 'copyFile', 'rm', 'chmod', 'truncate', 'lchown'];
for (const name of SYNC) {
  const original = fsSync[name];
  fsSync[name] = function (...args) {
    hit();
    return original.apply(this, args);
  };
}
for (const name of ASYNC) {
  const original = fsp[name];
  fsp[name] = function (...args) {
    hit();
    return original.apply(this, args);
  };
}
syncBuiltinESMExports();

const { openStore, openObserver } = await import(path.join(job.dist, 'admin.js'));
const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

/** Content a capture round writes: some files past the 256 KiB small-file path. */
const content = (round, i) => `round ${round} write ${i} `.padEnd(i % 5 === 4 ? 300_000 : 40 + i * 50, 'x');

const store = await openStore(job.storeDir, { projectRoot: job.project });
if (job.kind === 'capture') {
  const observer = openObserver(store, { sessionId: job.sessionId });
  armed = true;
  for (let round = 0; round < job.rounds; round++) {
    const turn = await observer.beginTurn({ label: `round ${round}` });
    say({ turn });
    for (let i = 0; i < 20; i++) {
      const rel = `f${i % 7}.txt`;
      await observer.beforeWrite(rel);
      await fsp.writeFile(path.join(job.project, rel), content(round, i));
      await observer.afterWrite(rel);
    }
  }
  await observer.close();
} else if (job.kind === 'restore') {
  const observer = openObserver(store, { sessionId: job.sessionId });
  armed = true;
  const report = await observer.restore(job.turn, { created: 'delete' });
  say({ failed: report.failed, refused: report.refused.length });
  await observer.close();
} else if (job.kind === 'prune') {
  armed = true;
  const report = await store.prune({ retain: job.retain, graceMs: 0 });
  say({ removed: report.removedCheckpoints.length });
} else {
  throw new Error(`unknown job ${job.kind}`);
}
say({ calls });
await store.close();
