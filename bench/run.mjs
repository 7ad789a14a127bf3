// turnback benchmark REPORT (not a test): prints figures, ratios and PASS/MISS per goal; always exits 0.
// Usage: node --expose-gc bench/run.mjs [--quick] [--only=overhead,restore,pictures,memory,als,fresh,savepoint,acp,hooks,hook-beside-big,remote,store-size]
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { collect, fmtMs, fmtRatio, git, median, parseArgs, say, TempRoot, timeAsync, timeSync } from './lib.mjs';
import { mulberry32 } from './tree.mjs';
import { benchFresh } from './fresh.mjs';
import { benchSavepoint } from './savepoint.mjs';
import { benchAcpProxy } from './acp-proxy.mjs';
import { benchHooks } from './hooks.mjs';
import { benchHookBesideBig } from './hook-beside-big.mjs';
import { benchRemote } from './remote.mjs';
import { benchStoreSize } from './store-size.mjs';
import { benchMemory, benchPictures } from './pictures.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BENCHES = ['overhead', 'restore', 'pictures', 'memory', 'als', 'fresh', 'savepoint', 'acp', 'hooks', 'hook-beside-big', 'remote', 'store-size'];

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
const table = { overhead: benchOverhead, restore: benchRestore, pictures: () => benchPictures({ temp, row, notes, quick, openObserver }), memory: () => benchMemory({ temp, row, notes }), als: benchAls, fresh: () => benchFresh({ temp, row, notes, quick, dist: DIST }), savepoint: () => benchSavepoint({ temp, row, notes, quick, dist: DIST, openObserver }), acp: () => benchAcpProxy({ temp, row, notes, quick, dist: DIST }), hooks: () => benchHooks({ temp, row, notes, quick, dist: DIST }), 'hook-beside-big': () => benchHookBesideBig({ temp, row, notes, quick, dist: DIST }), remote: () => benchRemote({ temp, row, notes, quick, dist: DIST, openObserver }), 'store-size': () => benchStoreSize({ temp, row, notes, openObserver }) };
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
