// How close any first picture can come to `git status` (issue #28's first-picture goal): a stat
// sweep of git's index entries and nothing else, in Node and in C, side by side with
// `git status --porcelain` (untracked cache on) and with git kept to one thread. A REPORT, not a
// test: prints one row per pass, always exits 0.
//
// Usage: node bench/stat-floor.mjs [--files=250000] [--passes=5] [--tree=DIR]
//
// The tree is bench/first-picture.mjs's (seed 28, tiny files, committed, `core.untrackedCache`
// on), generated into `--tree` (default under the temp folder) if it is not there yet. Each pass
// runs, in turn, a pause apart: `git status --porcelain`; the same with `core.preloadIndex=false`
// (git's stat sweep on one thread); bench/stat-floor-probe.mjs (a fresh Node process: read the
// index, `lstat` each entry on one thread, then on two; timed inside the process, so Node's start
// is not counted, as a running server's picture would not pay it); and bench/stat-floor.c the
// same in C when `cc` is present (compiled into a temp folder). git status is warmed twice first.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, fmtRatio, git, median } from './lib.mjs';
import { committedBenchTree, GAP_MS, timedProcess } from './processes.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const files = Number(args.files ?? 250_000);
const passes = Number(args.passes ?? 5);
const base = path.resolve(args.tree ?? path.join(os.tmpdir(), `turnback-first-picture-${files}`));
const say = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const repo = committedBenchTree(base, files, say);

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-stat-floor-'));
const pause = new Int32Array(new SharedArrayBuffer(4));
/** One JSON line from a probe, run a pause after the previous process. */
function probe(file, probeArgs) {
  Atomics.wait(pause, 0, 0, GAP_MS);
  const result = spawnSync(file, probeArgs, { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (result.status !== 0) throw new Error(`${file} exited ${result.status}: ${result.stderr.slice(0, 300)}`);
  return JSON.parse(result.stdout.trim().split('\n').pop());
}

let cProbe;
if (spawnSync('cc', ['--version']).status === 0) {
  cProbe = path.join(work, 'stat-floor');
  const built = spawnSync('cc', ['-O2', '-pthread', '-o', cProbe, path.join(HERE, 'stat-floor.c')], { encoding: 'utf8' });
  if (built.status !== 0) {
    say(`cc failed, no C column: ${built.stderr.slice(0, 300)}`);
    cProbe = undefined;
  }
}
const list = path.join(work, 'paths');
fs.writeFileSync(list, git(['ls-files', '-z'], { cwd: repo }));

try {
  const status = (extra) => timedProcess('git', [...extra, 'status', '--porcelain'], { cwd: repo });
  status([]);
  status([]);
  const rows = [];
  for (let pass = 1; pass <= passes; pass++) {
    say(`pass ${pass}`);
    const gitMs = status([]);
    const gitOneMs = status(['-c', 'core.preloadIndex=false']);
    const node = probe(process.execPath, [path.join(HERE, 'stat-floor-probe.mjs'), repo]);
    const c = cProbe !== undefined ? probe(cProbe, [repo, list]) : undefined;
    if (node.error !== undefined) throw new Error(node.error);
    rows.push({ pass, gitMs, gitOneMs, node, c });
  }
  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  const entries = rows[0].node.entries;
  console.log(`## The floor of a first picture: ${entries.toLocaleString('en-US')} index entries statted, nothing else (${new Date().toISOString()}, load: ${load}, ${os.cpus().length} cores, Node ${process.version}, ${spawnSync('git', ['--version'], { encoding: 'utf8' }).stdout.trim()})`);
  console.log('');
  console.log('| pass | `git status --porcelain` | the same, one thread (`core.preloadIndex=false`) | Node: read the index | Node: `lstat` each entry, one thread | Node: two threads | C: one thread | C: two threads | Node two threads / git status |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const { pass, gitMs, gitOneMs, node, c } of rows) {
    console.log(`| ${pass} | ${fmtMs(gitMs)} | ${fmtMs(gitOneMs)} | ${fmtMs(node.readMs)} | ${fmtMs(node.oneMs)} | ${fmtMs(node.twoMs)} | ${c !== undefined ? fmtMs(c.oneMs) : '—'} | ${c !== undefined ? fmtMs(c.twoMs) : '—'} | ${fmtRatio(node.twoMs / gitMs)} |`);
  }
  const med = (pick) => median(rows.map(pick));
  console.log(`| median | ${fmtMs(med((r) => r.gitMs))} | ${fmtMs(med((r) => r.gitOneMs))} | ${fmtMs(med((r) => r.node.readMs))} | ${fmtMs(med((r) => r.node.oneMs))} | ${fmtMs(med((r) => r.node.twoMs))} | ${cProbe !== undefined ? fmtMs(med((r) => r.c.oneMs)) : '—'} | ${cProbe !== undefined ? fmtMs(med((r) => r.c.twoMs)) : '—'} | ${fmtRatio(med((r) => r.node.twoMs / r.gitMs))} |`);
  console.log('');
  console.log(`Every probe found ${rows.every((r) => r.node.found === entries && r.node.foundTwo === entries && (r.c === undefined || (r.c.found === entries && r.c.foundTwo === entries))) ? 'all' : 'NOT all'} ${entries.toLocaleString('en-US')} entries. Node's probe ${rows[0].node.binding ? "used Node's fs binding (no `Stats` object a call, as src/fs/fast-lstat.ts)" : 'used fs.lstatSync'}.`);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
