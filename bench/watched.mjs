// Pictures with the server's watcher on (issue #28), against the full sweep and shadow git, side by
// side in one run. A REPORT, not a test. Needs watchman (a private service is started here).
//
// Usage: npx tsup && node --expose-gc bench/watched.mjs [--sizes=9000,250000] [--reps=7]
//
// In one process, as the command server runs them: an observer per "command" (the server opens
// one per command and leaves its pictures to the next), each taking one picture with `treeMark`
// (the picture, its diff against the last mark, the mark's small document). Rows: a no-change
// picture with the watcher on, one after 10 edits, the same with the watcher off (today's full
// sweep over the stat cache), and shadow git's `add -A && write-tree` of the same tree; the sweep
// and shadow git alternated, right after the tree was written and again once its folders are at rest.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { editFiles, generateTree } from './tree.mjs';
import { git, median, shadowEnv } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIST = process.env.TURNBACK_DIST ? path.resolve(process.env.TURNBACK_DIST) : path.join(HERE, '..', 'dist');
const { CheckpointObserver } = await import(pathToFileURL(path.join(DIST, 'index.js')).href);
const { openStore, ownWatchman, startWatchman, useWatchers, watchReport, closeWatchers, warmStatHelper } = await import(pathToFileURL(path.join(DIST, 'admin.js')).href);
const run = promisify(execFile);
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const sizes = (args.sizes ?? '9000,250000').split(',').map(Number);
const reps = Number(args.reps ?? 7);
const coverage = { maxPictureFiles: 1_000_000, maxWalkEntries: 10_000_000, maxPictureSeconds: 900, maxPictureMib: 100_000 };
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-watched-'));
/** How long after the tree was written its folders count as at rest (LISTING_SETTLE_MS and a margin). */
const REST_MS = 3_500;
const fmt = (ms) => (ms < 100 ? `${ms.toFixed(2)} ms` : `${ms.toFixed(0)} ms`);

// A watchman service of turnback's own, as the server starts it (its config keeps cookies out of
// .git, at the root): its own socket, state, log; shut down at the end.
const wmDir = path.join(work, 'watchman');
const service = await ownWatchman(wmDir);
if ('refused' in service) throw new Error(service.detail);
// The stat helper thread, started as the server starts it (src/server/server.ts): each command is
// its observer's first picture, so without this the bench's first commands ran on one thread.
warmStatHelper();

/**
 * One "command": an observer opened, a call begun (a picture and its baseline) and ended (a
 * picture, the diff, the seal), closed; the time of the call's begin (the picture a hook's
 * before-tool event takes) and of its end.
 */
let serial = 0;
async function command(root, storeDir) {
  const store = await openStore(storeDir, { projectRoot: root });
  const observer = new CheckpointObserver({ store, sessionId: 'bench-watched', coverage });
  const call = `bench-${serial++}`;
  let start = performance.now();
  await observer.callBegin(call);
  const begin = performance.now() - start;
  start = performance.now();
  await observer.callEnd(call);
  const end = performance.now() - start;
  await observer.close();
  await store.close();
  return { begin, end };
}

const rows = [];
try {
  for (const files of sizes) {
    const root = path.join(work, `tree-${files}`);
    fs.mkdirSync(root);
    const gen = generateTree(root, { files, seed: 28, tiny: true, ignoredFiles: 0, logFiles: 0 });
    const writtenAt = Date.now();
    const storeDir = path.join(work, `store-${files}`);
    // Watcher off: today's full sweep over the stat cache (the first picture copies the tree in).
    await useWatchers(undefined);
    await command(root, storeDir);
    // Shadow git of the same tree, nothing changed; its first `add -A` builds its index, as the
    // command above copied the tree in. Then the two alternate, so both meet the same moment
    // after the writes (the kernel still flushing them, its caches warming).
    const gitDir = path.join(work, `git-${files}`);
    const env = shadowEnv(gitDir, root);
    git(['init', '-q'], { env });
    git(['add', '-A'], { env });
    git(['write-tree'], { env });
    const shadowOnce = () => {
      const start = performance.now();
      git(['add', '-A'], { env });
      git(['write-tree'], { env });
      return performance.now() - start;
    };
    const sweep = [];
    const shadow = [];
    for (let i = 0; i < Math.min(reps, 3); i++) {
      sweep.push((await command(root, storeDir)).begin);
      shadow.push(shadowOnce());
    }
    // The same two at rest: a folder listing is reused without a watcher only once the folder's
    // mtime lies LISTING_SETTLE_MS (3 s) before it (src/capture/scan-memo.ts), so the rows above,
    // taken right after the tree was written, list every folder afresh on one thread, which a
    // server that starts on a project in use does not; this is the sweep it does.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, writtenAt + REST_MS - Date.now())));
    await command(root, storeDir);
    const restSweep = [];
    const restShadow = [];
    for (let i = 0; i < Math.min(reps, 3); i++) {
      restSweep.push((await command(root, storeDir)).begin);
      restShadow.push(shadowOnce());
    }
    // Watcher on: the first picture starts it; pictures until status says it vouches.
    await useWatchers((r) => startWatchman(r, { sockname: service.sockname }));
    const realRoot = fs.realpathSync(root);
    let warm = 0;
    for (; warm < 100 && watchReport(realRoot).state !== 'watching'; warm++) await command(root, storeDir);
    const same = [];
    const sameEnd = [];
    for (let i = 0; i < reps; i++) {
      const t = await command(root, storeDir);
      same.push(t.begin);
      sameEnd.push(t.end);
    }
    const edited = [];
    for (let i = 0; i < reps; i++) {
      editFiles(root, gen.covered, 10, 100 + i);
      edited.push((await command(root, storeDir)).begin);
    }
    const row = { files, sweep: median(sweep), shadow: median(shadow), restSweep: median(restSweep), restShadow: median(restShadow), same: median(same), sameEnd: median(sameEnd), edited: median(edited), warm, state: watchReport(realRoot).state };
    rows.push(row);
    console.error(JSON.stringify(row));
    await closeWatchers();
  }
} finally {
  await useWatchers(undefined);
  await run('watchman', [`--sockname=${service.sockname}`, '--no-spawn', 'shutdown-server']).catch(() => service.kill());
  fs.rmSync(work, { recursive: true, force: true });
}
console.log('| files | no-change callBegin, watcher on (goal ≤ 5 ms) | no-change callEnd, watcher on | callBegin after 10 edits, watcher on (goal ≤ 10 ms) | callBegin, watcher off (full sweep), tree just written | shadow git add -A && write-tree | ratio | full sweep, tree at rest | shadow git, at rest | full sweep at rest / shadow git (goal ≤ 1) |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.files.toLocaleString('en')} | ${fmt(r.same)} | ${fmt(r.sameEnd)} | ${fmt(r.edited)} | ${fmt(r.sweep)} | ${fmt(r.shadow)} | ${(r.sweep / r.shadow).toFixed(2)} | ${fmt(r.restSweep)} | ${fmt(r.restShadow)} | ${(r.restSweep / r.restShadow).toFixed(2)} |`);
console.log(`\nmedians of ${reps} (full sweep and shadow git: ${Math.min(reps, 3)}); each row's times are one observer's callBegin (a picture and its baseline) or callEnd (a picture, the diff, the seal), the observer opened and closed per command as the server does; Node ${process.version}, ${os.cpus().length} cores`);
