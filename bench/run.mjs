// turnback benchmark REPORT (not a test): prints figures, ratios and PASS/MISS per goal; always exits 0.
// Usage: node --expose-gc bench/run.mjs [--quick] [--only=overhead,restore,pictures,memory,als,fresh,savepoint,acp,hooks,remote,store-size]
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { collect, diskUsage, fmtBytes, fmtMs, fmtRatio, git, median, parseArgs, say, shadowEnv, TempRoot, timeAsync, timeSync } from './lib.mjs';
import { editFiles, generateTree, mulberry32 } from './tree.mjs';
import { benchFresh } from './fresh.mjs';
import { benchSavepoint } from './savepoint.mjs';
import { benchAcpProxy } from './acp-proxy.mjs';
import { benchHooks } from './hooks.mjs';
import { benchRemote } from './remote.mjs';
import { benchStoreSize } from './store-size.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BENCHES = ['overhead', 'restore', 'pictures', 'memory', 'als', 'fresh', 'savepoint', 'acp', 'hooks', 'remote', 'store-size'];

const args = parseArgs(process.argv.slice(2));
if (args.help) {
  console.log(`node --expose-gc bench/run.mjs [--quick] [--only=${BENCHES.join(',')}]`);
  process.exit(0);
}
for (const name of args.only ?? []) if (!BENCHES.includes(name)) throw new Error(`unknown bench ${name}; one of ${BENCHES.join(', ')}`);

// TURNBACK_DIST points the bench at another build (e.g. `npm run bench:build -- X` → .bench-build/X).
const DIST = process.env.TURNBACK_DIST ? path.resolve(process.env.TURNBACK_DIST) : path.join(HERE, '..', 'dist');
let api;
let admin;
try {
  api = await import(pathToFileURL(path.join(DIST, 'index.js')).href);
  admin = await import(pathToFileURL(path.join(DIST, 'admin.js')).href);
} catch (error) {
  console.error(`cannot load ${DIST}/index.js and admin.js (run \`npx tsup\` first): ${error.message}`);
  process.exit(0);
}
const { CheckpointObserver } = api;
const { openStore } = admin;

const quick = args.quick;
// Node's warnings (e.g. a FileHandle closed on GC) are counted and summarised, not printed one by one.
const warnings = new Map();
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  const key = `${warning.name}: ${String(warning.message).replace(/\d+/g, 'N')}`;
  warnings.set(key, (warnings.get(key) ?? 0) + 1);
});
const temp = new TempRoot();
/** Rows of the final table: { figure, value, goal, status } (status: PASS, MISS, or '' for information). */
const rows = [];
const notes = [];
const row = (figure, value, goal = '—', status = '') => {
  rows.push({ figure, value, goal, status });
  say(`  ${figure}: ${value}${status ? `  [${status}]` : ''}`);
};
const verdict = (ok) => (ok ? 'PASS' : 'MISS');

async function openObserver(projectRoot, storeDir, extra = {}) {
  const store = await openStore(storeDir, { projectRoot });
  return { store, observer: new CheckpointObserver({ store, sessionId: 'bench', ...extra }) };
}

// ---------------------------------------------------------------------------------------------
// 1. Observer overhead: beforeWrite + write + afterWrite vs a plain fs.writeFile.
async function benchOverhead() {
  say('\n## overhead: beforeWrite + writeFile + afterWrite vs writeFile');
  const project = temp.dir('overhead-project');
  const { store, observer } = await openObserver(project, temp.path('overhead-store'));
  const sizes = [
    ['1 KB', 1024],
    ['10 KB', 10 * 1024],
    ['100 KB', 100 * 1024],
    ['10 MB', 10 * 1024 * 1024],
  ];
  for (const [label, size] of sizes) {
    const big = size >= 1024 * 1024;
    const n = big ? (quick ? 4 : 10) : quick ? 60 : 250;
    const warm = big ? 1 : Math.min(10, n >> 2);
    const total = n + warm;
    const rng = mulberry32(size);
    const base = Buffer.allocUnsafe(size);
    for (let i = 0; i + 4 <= size; i += 4) base.writeUInt32LE(Math.floor(rng() * 2 ** 32), i);
    // Existing files with unique content, so each first touch really copies a pre-image (no dedup).
    const dir = path.join(project, `s${size}`);
    fs.mkdirSync(dir, { recursive: true });
    const plainPath = (i) => path.join(dir, `plain-${i}.bin`);
    const obsPath = (i) => path.join(dir, `obs-${i}.bin`);
    for (let i = 0; i < total; i++) {
      base.writeUInt32LE(i, 0);
      fs.writeFileSync(plainPath(i), base);
      base.writeUInt32LE(i + 0x40000000, 0);
      fs.writeFileSync(obsPath(i), base);
    }
    const next = Buffer.from(base);
    next.fill(0x58, 4, 64);
    await observer.beginTurn({ label: `overhead ${label}` });
    collect();
    const plain = [];
    const observed = [];
    const doPlain = (i) => timeAsync(() => fsp.writeFile(plainPath(i), next));
    // The observer's own time in each observed iteration (beforeWrite + afterWrite, the write
    // excluded): the added cost measured directly, free of the plain write's variance.
    let inside = 0;
    const doObserved = (i) =>
      timeAsync(async () => {
        const p = obsPath(i);
        const t0 = performance.now();
        await observer.beforeWrite(p);
        const t1 = performance.now();
        await fsp.writeFile(p, next);
        const t2 = performance.now();
        await observer.afterWrite(p);
        inside = t1 - t0 + (performance.now() - t2);
      });
    const observerOnly = [];
    const rObserverOnly = [];
    for (let i = 0; i < total; i++) {
      // Alternate which goes first, so neither always runs on a warmer cache.
      let a;
      let b;
      if (i % 2 === 0) {
        a = await doPlain(i);
        b = await doObserved(i);
      } else {
        b = await doObserved(i);
        a = await doPlain(i);
      }
      if (i >= warm) {
        plain.push(a);
        observed.push(b);
        observerOnly.push(inside);
      }
    }
    const firstAdded = median(observed) - median(plain);
    const firstRatio = median(observed) / median(plain);
    // Repeat touches: the same path again and again within the same turn.
    const m = big ? (quick ? 4 : 10) : quick ? 100 : 400;
    const rPlain = [];
    const rObserved = [];
    for (let i = 0; i < m + warm; i++) {
      let a;
      let b;
      if (i % 2 === 0) {
        a = await doPlain(0);
        b = await doObserved(0);
      } else {
        b = await doObserved(0);
        a = await doPlain(0);
      }
      if (i >= warm) {
        rPlain.push(a);
        rObserved.push(b);
        rObserverOnly.push(inside);
      }
    }
    const repeatAdded = median(rObserved) - median(rPlain);
    const repeatRatio = median(rObserved) / median(rPlain);
    say(`  ${label}: plain ${fmtMs(median(plain))}, first touch ${fmtMs(median(observed))}, repeat ${fmtMs(median(rObserved))} (plain ${fmtMs(median(rPlain))}); n=${n}/${m}`);
    const goalFirst = size === 10 * 1024;
    const firstInside = median(observerOnly);
    const repeatInside = median(rObserverOnly);
    row(
      `overhead, first touch, ${label}: observer calls (median ms); side by side (added ms; ratio)`,
      `${fmtMs(firstInside)}; +${fmtMs(firstAdded)} (${fmtRatio(firstRatio)}; plain ${fmtMs(median(plain))})`,
      goalFirst ? '≤ 0.5 ms added' : '—',
      goalFirst ? verdict(firstInside <= 0.5) : '',
    );
    row(
      `overhead, repeat touch same turn, ${label}: observer calls; side by side`,
      `${fmtMs(repeatInside)}; +${fmtMs(repeatAdded)} (${fmtRatio(repeatRatio)})`,
      goalFirst ? '≤ 0.05 ms added' : '—',
      goalFirst ? verdict(repeatInside <= 0.05) : '',
    );
    fs.rmSync(dir, { recursive: true, force: true });
  }
  notes.push('overhead: the goal is judged on the observer calls timed directly (beforeWrite + afterWrite in each observed iteration, median); the side-by-side difference of medians and the ratio against a plain write are printed beside it (under load the plain write alone varies by more than the goal). Files exist before the first touch (unique content, so the pre-image is really copied); the write is fs.promises.writeFile for both sides; plain and observed iterations alternate.');
  await observer.close();
  await store.close();
}

// ---------------------------------------------------------------------------------------------
// 2. Restore of 1,000 changed files vs `git checkout -- .`.
async function benchRestore() {
  say('\n## restore: 1,000 changed files, observer.restore(turn) vs git checkout -- .');
  const N = 1000;
  const reps = quick ? 2 : 3;
  const rel = (i) => `pkg${i % 10}/mod${(i >> 3) % 6}/part${i % 3}/file-${i}.txt`;
  const content = (i, round) => {
    const rng = mulberry32(i * 31 + 7);
    const size = 1800 + Math.floor(rng() * 500);
    let s = `file ${i} round ${round}\n`;
    while (s.length < size) s += `line ${Math.floor(rng() * 1e9).toString(36)} of file ${i} round ${round}\n`;
    return s.slice(0, size);
  };
  const writeAll = (root, round) => {
    for (let i = 0; i < N; i++) {
      const p = path.join(root, rel(i));
      if (round === 0) fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, content(i, round));
    }
  };
  const repo = temp.dir('restore-git');
  writeAll(repo, 0);
  git(['init', '-q'], { cwd: repo });
  git(['add', '-A'], { cwd: repo });
  git(['commit', '-q', '-m', 'base'], { cwd: repo });
  const project = temp.dir('restore-project');
  writeAll(project, 0);
  const { store, observer } = await openObserver(project, temp.path('restore-store'));
  const gitStart = median(Array.from({ length: 7 }, () => timeSync(() => git(['--version'])))) ;
  const gitTimes = [];
  const tbTimes = [];
  const captureTimes = [];
  let problems = 0;
  const runGit = (rep) => {
    writeAll(repo, rep + 1);
    const t = timeSync(() => git(['checkout', '--', '.'], { cwd: repo }));
    if (fs.readFileSync(path.join(repo, rel(N - 1)), 'utf8') !== content(N - 1, 0)) problems++;
    gitTimes.push(t);
  };
  const runTurnback = async (rep) => {
    const turn = await observer.beginTurn({ label: `restore ${rep}` });
    captureTimes.push(
      await timeAsync(async () => {
        for (let i = 0; i < N; i++) {
          const p = path.join(project, rel(i));
          await observer.beforeWrite(p);
          await fsp.writeFile(p, content(i, rep + 1));
          await observer.afterWrite(p);
        }
      }),
    );
    collect();
    let report;
    tbTimes.push(await timeAsync(async () => (report = await observer.restore(turn))));
    if (report.restored.length !== N || report.failed.length > 0 || report.refused.length > 0) {
      problems++;
      say(`  restore: restored ${report.restored.length}, refused ${report.refused.length}, failed ${report.failed.length}`);
    }
    if (fs.readFileSync(path.join(project, rel(N - 1)), 'utf8') !== content(N - 1, 0)) problems++;
  };
  for (let rep = 0; rep < reps; rep++) {
    if (rep % 2 === 0) {
      runGit(rep);
      await runTurnback(rep);
    } else {
      await runTurnback(rep);
      runGit(rep);
    }
    say(`  rep ${rep}: git ${fmtMs(gitTimes.at(-1))}, turnback ${fmtMs(tbTimes.at(-1))}`);
  }
  const ratio = median(tbTimes) / median(gitTimes);
  row('restore 1,000 changed files: turnback restore(turn)', fmtMs(median(tbTimes)));
  row('restore 1,000 changed files: git checkout -- . (incl. process start)', `${fmtMs(median(gitTimes))} (git start alone ${fmtMs(gitStart)})`);
  row('restore ratio turnback / git', fmtRatio(ratio), '≤ 1', verdict(ratio <= 1 && problems === 0));
  row('capture of the 1,000 writes (before+write+after, for reference)', fmtMs(median(captureTimes)));
  if (problems > 0) notes.push(`restore: ${problems} rep(s) did not restore everything — check the log above.`);
  notes.push('restore: git time is spawnSync of `git checkout -- .`, so it includes one git process start; turnback time is observer.restore(turn) only (plan + pre-restore save + apply).');
  await observer.close();
  await store.close();
}

// ---------------------------------------------------------------------------------------------
// 3. Pictures vs a shadow git repository.
async function benchPictures() {
  say('\n## pictures: 10,000-file tree, callBegin/callEnd vs shadow git (GIT_DIR outside the tree)');
  const tree = temp.dir('pictures-tree');
  let gen;
  const genMs = timeSync(() => (gen = generateTree(tree, { files: 10_000, seed: 42 })));
  say(`  generated ${gen.files.length} files (${gen.covered.length} not ignored), ${fmtBytes(gen.bytes)}, ${gen.folders} folders in ${fmtMs(genMs)}`);
  const reps = quick ? 1 : 2;
  const K = quick ? 3 : 6;
  const rounds = 20;
  const gitFirst = [];
  const tbFirst = [];
  const gitNoop = [];
  const tbNoopBegin = [];
  const tbNoopEnd = [];
  const callInProcess = [];
  const callShell = [];
  const shellAlone = [];
  let sizes;
  let editRound = 0;
  let partial = false;
  for (let rep = 0; rep < reps; rep++) {
    const gitDir = temp.path(`shadow-git-${rep}`);
    const env = shadowEnv(gitDir, tree);
    const storeDir = temp.path(`pictures-store-${rep}`);
    const doGit = () => {
      git(['init', '-q'], { env });
      collect();
      gitFirst.push(
        timeSync(() => {
          git(['add', '-A'], { env });
          git(['commit', '-q', '--no-verify', '-m', 'first'], { env });
        }),
      );
      for (let k = 0; k < K; k++) {
        gitNoop.push(
          timeSync(() => {
            git(['add', '-A'], { env });
            git(['write-tree'], { env });
          }),
        );
      }
    };
    let opened;
    const doTurnback = async () => {
      opened = await openObserver(tree, storeDir);
      collect();
      let begin;
      tbFirst.push(await timeAsync(async () => (begin = await opened.observer.callBegin(`first-${rep}`))));
      partial ||= begin.partial;
      if (begin.partial) say(`  first picture partial: ${begin.summary}`);
      tbNoopEnd.push(await timeAsync(() => opened.observer.callEnd(`first-${rep}`)));
      for (let k = 0; k < K; k++) {
        tbNoopBegin.push(await timeAsync(() => opened.observer.callBegin(`noop-${rep}-${k}`)));
        tbNoopEnd.push(await timeAsync(() => opened.observer.callEnd(`noop-${rep}-${k}`)));
      }
    };
    if (rep % 2 === 0) {
      doGit();
      await doTurnback();
    } else {
      await doTurnback();
      doGit();
    }
    say(`  rep ${rep}: first git ${fmtMs(gitFirst.at(-1))} / turnback ${fmtMs(tbFirst.at(-1))}; nothing changed git ${fmtMs(median(gitNoop.slice(-K)))} / turnback ${fmtMs(median(tbNoopBegin.slice(-K)))}`);
    if (rep === 0) {
      // 20 pictures with 10 edited files each, then compare store sizes.
      for (let r = 0; r < rounds; r++) {
        editFiles(tree, gen.covered, 10, ++editRound);
        git(['add', '-A'], { env });
        git(['commit', '-q', '--no-verify', '-m', `round ${r}`], { env });
      }
      const { observer } = opened;
      // The git side's 20 rounds above edited 200 files behind turnback's back: one untimed call
      // takes them in, so each timed call below is what the goal names, a call around a command
      // that changes 10 files (not one that also absorbs 200 outside edits).
      await observer.callBegin('absorb-outside-edits');
      await observer.callEnd('absorb-outside-edits');
      for (let r = 0; r < rounds; r++) {
        const id = `round-${r}`;
        let attribution;
        callInProcess.push(
          await timeAsync(async () => {
            await observer.callBegin(id);
            editFiles(tree, gen.covered, 10, ++editRound);
            attribution = await observer.callEnd(id);
          }),
        );
        if (attribution.changes.length !== 10) say(`  call ${id}: ${attribution.changes.length} changes attributed (expected 10)`);
      }
      const storeUse = diskUsage(storeDir);
      const gitUse = diskUsage(gitDir);
      git(['gc', '-q'], { env });
      const gitPacked = diskUsage(gitDir);
      sizes = { storeUse, gitUse, gitPacked };
      // The same call with the change made by a spawned shell.
      for (let r = 0; r < (quick ? 3 : 7); r++) {
        const id = `shell-${r}`;
        const targets = gen.covered.filter((p) => p !== '.gitignore').slice(100 + r * 10, 110 + r * 10);
        const script = targets.map((p) => `echo "// shell ${r}" >> '${p}'`).join('; ');
        callShell.push(
          await timeAsync(async () => {
            await observer.callBegin(id, { command: 'sh -c edits' });
            shellAlone.push(timeSync(() => spawnSync('sh', ['-c', script], { cwd: tree })));
            await observer.callEnd(id);
          }),
        );
      }
    }
    await opened.observer.close();
    await opened.store.close();
  }
  const noop = median(tbNoopBegin);
  const gitNoopMed = median(gitNoop);
  row('picture, nothing changed (callBegin, same process)', `${fmtMs(noop)} (callEnd ${fmtMs(median(tbNoopEnd))})`, '≤ 45 ms', verdict(noop <= 45));
  row('shadow git add -A && write-tree, nothing changed', fmtMs(gitNoopMed), '—');
  row('picture nothing changed: turnback / git', fmtRatio(noop / gitNoopMed), '< 1', verdict(noop < gitNoopMed));
  const firstRatio = median(tbFirst) / median(gitFirst);
  row('first picture into an empty store (callBegin)', fmtMs(median(tbFirst)), '—');
  row('shadow git first add -A && commit', fmtMs(median(gitFirst)), '—');
  row('first picture: turnback / git', fmtRatio(firstRatio), '≤ 0.30', verdict(firstRatio <= 0.3));
  if (sizes) {
    const sizeRatio = sizes.storeUse.bytes / sizes.gitUse.bytes;
    row('store on disk after first + 20×10 edits: turnback', `${fmtBytes(sizes.storeUse.bytes)} (${sizes.storeUse.files} files)`);
    row('store on disk: shadow git (loose objects)', `${fmtBytes(sizes.gitUse.bytes)} (${sizes.gitUse.files} files; after git gc ${fmtBytes(sizes.gitPacked.bytes)})`);
    row('store size: turnback / git', fmtRatio(sizeRatio), '≤ 0.60', verdict(sizeRatio <= 0.6));
    const call = median(callInProcess);
    row('callBegin + callEnd, 10 files changed in-process', fmtMs(call), '≤ 60 ms', verdict(call <= 60));
    row('callBegin + callEnd, 10 files changed by spawned sh -c', `${fmtMs(median(callShell))} (sh alone ${fmtMs(median(shellAlone))})`, '—');
  }
  notes.push(
    `pictures: tree of ${gen.files.length} files (${gen.covered.length} not ignored by .gitignore), ${fmtBytes(gen.bytes)}, seed 42; git runs as separate processes (spawnSync, process start included), default config with gc.auto=0; disk usage = sum of st_blocks×512 over regular files.${partial ? ' WARNING: a first picture was partial.' : ''}`,
  );
}

// ---------------------------------------------------------------------------------------------
// 3b. Memory of a picture of a 100,000-file tree, in a child process.
async function benchMemory() {
  say('\n## memory: picture of a 100,000-file tree in a child process');
  const tree = temp.dir('memory-tree');
  let gen;
  const genMs = timeSync(() => (gen = generateTree(tree, { files: 100_000, seed: 7, tiny: true, ignoredFiles: 100, logFiles: 0 })));
  say(`  generated ${gen.files.length} tiny files in ${gen.folders} folders in ${fmtMs(genMs)}`);
  const child = path.join(HERE, 'picture-child.mjs');
  const spawnOptions = { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 16 * 1024 * 1024 };
  const idle = spawnSync(process.execPath, ['--no-warnings', child, tree, temp.path('memory-idle-store'), 'idle'], spawnOptions);
  const idleKb = JSON.parse(idle.stdout?.trim().split('\n').at(-1) || '{}').idleMaxRssKb ?? Number.NaN;
  const run = spawnSync(process.execPath, ['--no-warnings', child, tree, temp.path('memory-store')], { ...spawnOptions, timeout: 240_000 });
  say(`  child exit ${run.status ?? run.signal}${run.error ? ` (${run.error.message})` : ''}`);
  const line = run.stdout?.trim().split('\n').at(-1);
  if (run.status !== 0 || !line) {
    row('picture of 100,000 files: peak RSS', `child failed (${run.signal ?? run.status}${run.error ? `, ${run.error.message}` : ''})`, '< 200 MB', 'MISS');
    return;
  }
  const result = JSON.parse(line);
  const mib = result.maxRssKb / 1024;
  // The goal is in MB (10^6 bytes): 200 MB is 190.7 MiB.
  const mb = (result.maxRssKb * 1024) / 1e6;
  row('picture of 100,000 files: child peak RSS (maxRSS)', `${mb.toFixed(0)} MB = ${mib.toFixed(0)} MiB (idle node + library ${(idleKb / 1024).toFixed(0)} MiB)`, '< 200 MB', verdict(mb < 200));
  row('picture of 100,000 files: first / second picture time', `${fmtMs(result.firstMs)} / ${fmtMs(result.secondMs)}${result.partial ? ` (partial: ${result.summary})` : ''}`);
  // The same with two more pictures: a session's repeat pictures (the helper thread of repeat
  // pictures stays off above 50,000 paths, so this is the calling thread's cost).
  const three = spawnSync(process.execPath, ['--no-warnings', child, tree, temp.path('memory-store-3'), 'three'], { ...spawnOptions, timeout: 240_000 });
  const threeLine = three.stdout?.trim().split('\n').at(-1);
  if (three.status === 0 && threeLine) {
    const r3 = JSON.parse(threeLine);
    row('picture of 100,000 files, four pictures: peak RSS', `${((r3.maxRssKb * 1024) / 1e6).toFixed(0)} MB; third + fourth ${fmtMs(r3.thirdMs)}`, '—');
  } else {
    row('picture of 100,000 files, four pictures: peak RSS', `child failed (${three.signal ?? three.status})`, '—');
  }
  notes.push('memory: 100,000 files of 16–64 B; the child raises maxPictureFiles/maxWalkEntries/maxPictureSeconds so the whole tree is pictured (defaults stop at 10,000 copied files); peak RSS after callBegin (first picture, empty store) and callEnd (second picture).');
}

// ---------------------------------------------------------------------------------------------
// 4. AsyncLocalStorage cost of withToolCall on a promise-heavy workload.
async function benchAls() {
  say('\n## als: 100,000 awaited async calls inside vs outside withToolCall');
  const project = temp.dir('als-project');
  const { store, observer } = await openObserver(project, temp.path('als-store'));
  const N = 100_000;
  const reps = quick ? 5 : 15;
  const step = async (i) => i;
  const work = async () => {
    let sum = 0;
    for (let i = 0; i < N; i++) sum += await step(i);
    return sum;
  };
  // Long warm-up: the loop must be optimised before the baseline, or "before" reads slow.
  for (let i = 0; i < 20; i++) await work();
  const before = [];
  for (let r = 0; r < reps; r++) before.push(await timeAsync(work));
  const inside = [];
  const concurrent = [];
  const after = [];
  for (let r = 0; r < reps; r++) {
    const scope = { sessionId: 'bench', scopeId: `als-${r}` };
    inside.push(
      await observer.withToolCall(scope, async () => {
        const start = performance.now();
        await work();
        return performance.now() - start;
      }),
    );
    let release;
    const gate = new Promise((resolve) => (release = resolve));
    const held = observer.withToolCall({ sessionId: 'bench', scopeId: `als-held-${r}` }, () => gate);
    concurrent.push(await timeAsync(work));
    release();
    await held;
    after.push(await timeAsync(work));
  }
  const base = median(before);
  row('ALS: 100k awaits outside any tool call (before first use)', fmtMs(base));
  row('ALS: inside withToolCall / outside', `${fmtRatio(median(inside) / base)} (${fmtMs(median(inside))})`);
  row('ALS: outside, while another tool call is open / outside', `${fmtRatio(median(concurrent) / base)} (${fmtMs(median(concurrent))})`);
  const afterRatio = median(after) / base;
  row('ALS: after the tool call ended / outside', `${fmtRatio(afterRatio)} (${fmtMs(median(after))})`, '≤ 1.10 (cost is scoped)', verdict(afterRatio <= 1.1));
  await observer.close();
  await store.close();
}

// ---------------------------------------------------------------------------------------------
const table = { overhead: benchOverhead, restore: benchRestore, pictures: benchPictures, memory: benchMemory, als: benchAls, fresh: () => benchFresh({ temp, row, notes, quick, dist: DIST }), savepoint: () => benchSavepoint({ temp, row, notes, quick, dist: DIST, openObserver }), acp: () => benchAcpProxy({ temp, row, notes, quick, dist: DIST }), hooks: () => benchHooks({ temp, row, notes, quick, dist: DIST }), remote: () => benchRemote({ temp, row, notes, quick, dist: DIST, openObserver }), 'store-size': () => benchStoreSize({ temp, row, notes, openObserver }) };
const startedAt = performance.now();
const cleanup = () => temp.remove();
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});
say(`turnback bench${quick ? ' (quick)' : ''}: node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ${os.platform()} ${os.release()}, temp ${temp.root}`);
for (const name of BENCHES) {
  if (args.only && !args.only.includes(name)) continue;
  try {
    await table[name]();
  } catch (error) {
    say(`  ${name} failed: ${error.stack ?? error}`);
    row(`${name}: bench failed`, String(error.message ?? error).split('\n')[0].slice(0, 120), '—', 'MISS');
  }
  collect();
}
cleanup();

const esc = (s) => String(s).replaceAll('|', '\\|');
console.log(`\n### Benchmarks (node ${process.version}, ${os.cpus().length} CPUs, ${os.platform()}${quick ? ', --quick' : ''}; medians)\n`);
console.log('| figure | value | goal | result |');
console.log('| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${esc(r.figure)} | ${esc(r.value)} | ${esc(r.goal)} | ${r.status} |`);
if (notes.length > 0) {
  console.log('');
  for (const note of notes) console.log(`- ${note}`);
}
for (const [message, count] of warnings) console.log(`- process warning ×${count} during the run: ${message}`);
const passed = rows.filter((r) => r.status === 'PASS').length;
const missed = rows.filter((r) => r.status === 'MISS').length;
console.log(`\n${passed} goal(s) met, ${missed} missed; total ${((performance.now() - startedAt) / 1000).toFixed(0)} s.`);
process.exit(0);
