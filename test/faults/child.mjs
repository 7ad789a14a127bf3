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
// With `pauseAtJournal` (a FIFO), the first journal line written after arming waits until the
// campaign writes to the FIFO: a point inside a capture, after its dedupe hit and before its
// record is down, where another process can act.
const journals = new Set();
let pauseArmed = false;
const openSyncCounted = fsSync.openSync;
fsSync.openSync = function (file, ...rest) {
  const fd = openSyncCounted.call(this, file, ...rest);
  if (String(file).endsWith('.journal')) journals.add(fd);
  return fd;
};
const writeSyncCounted = fsSync.writeSync;
fsSync.writeSync = function (fd, ...rest) {
  if (pauseArmed && journals.has(fd)) {
    pauseArmed = false;
    say({ paused: true });
    const fifo = openSyncCounted(job.pauseAtJournal, 'r');
    fsSync.readSync(fifo, Buffer.alloc(1));
    fsSync.closeSync(fifo);
  }
  return writeSyncCounted.call(this, fd, ...rest);
};
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
} else if (job.kind === 'dedupe') {
  // Captures f0.txt (whose bytes another process already stored) paused before its record, then
  // overwrites it, and ends: its turn is restored by another process later.
  const observer = openObserver(store, { sessionId: job.sessionId });
  const turn = await observer.beginTurn({ label: 'dedupes against another process' });
  pauseArmed = true;
  await observer.beforeWrite('f0.txt');
  await fsp.writeFile(path.join(job.project, 'f0.txt'), 'overwritten by the agent');
  await observer.afterWrite('f0.txt');
  say({ turn });
  await observer.close();
} else if (job.kind === 'mixed') {
  await mixed();
} else {
  throw new Error(`unknown job ${job.kind}`);
}

/**
 * One of several processes on one store: seeded turns (writing its own files, with contents drawn
 * from a pool all processes share, so captures dedupe against each other's objects), restores of
 * its last turn (checked against what it wrote), listings, verifies, prunes, and a drop of its
 * own session now and then (the zero-grace prune that once deleted another process's object).
 * One line per operation: `{ op, ok }` or `{ op, broke }`.
 */
async function mixed() {
  let seed = job.seed >>> 0;
  const random = () => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = (n) => Math.floor(random() * n);
  const pool = Array.from({ length: 12 }, (_, i) => `shared content ${i} `.repeat(1 + i * 40));
  const files = Array.from({ length: 5 }, (_, i) => `${job.name}/f${i}.txt`);
  await fsp.mkdir(path.join(job.project, job.name), { recursive: true });
  for (const file of files) await fsp.writeFile(path.join(job.project, file), `start of ${file}`);
  const read = async () => Object.fromEntries(await Promise.all(files.map(async (file) => [file, await fsp.readFile(path.join(job.project, file), 'utf8')])));
  let generation = 0;
  let observer = openObserver(store, { sessionId: `${job.name}-0` });
  let last; // { turn, before }
  for (let op = 0; op < job.ops; op++) {
    const roll = random();
    const kind = roll < 0.45 ? 'turn' : roll < 0.65 ? 'restore' : roll < 0.75 ? 'list' : roll < 0.85 ? 'verify' : roll < 0.95 ? 'prune' : 'drop';
    try {
      if (kind === 'turn') {
        const before = await read();
        const turn = await observer.beginTurn({ label: `${job.name} op ${op}` });
        for (let w = 0; w < 3; w++) {
          const file = files[pick(files.length)];
          await observer.beforeWrite(file);
          await fsp.writeFile(path.join(job.project, file), pool[pick(pool.length)]);
          await observer.afterWrite(file);
        }
        last = { turn, before };
      } else if (kind === 'restore' && last !== undefined) {
        // Its own files only: a restore of a turn takes the whole project back, other processes' work too.
        const report = await observer.restore(last.turn, { paths: files });
        if (report.failed.length > 0 || report.refused.length > 0) throw new Error(`restore: ${JSON.stringify({ failed: report.failed, refused: report.refused.map((e) => [e.path, e.reason]) })}`);
        const now = await read();
        for (const file of files) if (now[file] !== last.before[file]) throw new Error(`restore left ${file} wrong`);
        last = undefined;
      } else if (kind === 'list') {
        await store.list();
      } else if (kind === 'verify') {
        const report = await store.verify();
        if (!report.ok) throw new Error(`verify: ${JSON.stringify(report.problems.slice(0, 3))}`);
      } else if (kind === 'prune') {
        await store.prune({ retain: 40 });
      } else if (kind === 'drop') {
        await observer.drop(`${job.name}-${generation}`);
        await observer.close();
        generation += 1;
        observer = openObserver(store, { sessionId: `${job.name}-${generation}` });
        last = undefined;
      }
      say({ op: kind, ok: true });
    } catch (error) {
      // A typed refusal that says why is an honest answer, not a broken promise: the store busy
      // past its wait, or this process's last turn pruned by `retain` (the store keeps the newest
      // 40 of all processes' checkpoints here).
      if (error?.code === 'STORE_BUSY') say({ op: kind, busy: true });
      else if (kind === 'restore' && error?.code === 'UNKNOWN_CHECKPOINT' && /was pruned/.test(error.message)) say({ op: kind, pruned: true });
      else say({ op: kind, broke: `${error?.code ?? ''} ${error?.message ?? String(error)}` });
    }
  }
  await observer.close();
}
say({ calls });
await store.close();
