// The least a Node process can do for a first picture of a git work tree: read git's index and
// `lstat` each entry's path, nothing else (no record, no ignore rule, no listing, no store).
// Run by bench/stat-floor.mjs as a fresh process; prints one JSON line of milliseconds, timed
// inside the process (a server is already running when it pictures, so Node's start is not counted).
//
// Usage: node bench/stat-floor-probe.mjs REPO
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

const repo = path.resolve(process.argv[2] ?? '.');

/** The paths of an index file of version 2 or 3 (git's default); `undefined` for anything else. */
function indexPaths(bytes) {
  if (bytes.toString('latin1', 0, 4) !== 'DIRC') return undefined;
  const version = bytes.readUInt32BE(4);
  if (version !== 2 && version !== 3) return undefined;
  const count = bytes.readUInt32BE(8);
  const paths = new Array(count);
  let at = 12;
  for (let i = 0; i < count; i++) {
    const flags = bytes.readUInt16BE(at + 60);
    const extended = version === 3 && (flags & 0x4000) !== 0 ? 2 : 0;
    const start = at + 62 + extended;
    const end = bytes.indexOf(0, start);
    paths[i] = bytes.toString('utf8', start, end);
    at += (62 + extended + (end - start) + 8) & ~7;
  }
  return paths;
}

// Node's own binding, as src/fs/fast-lstat.ts uses it: no `Stats` object a call.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
let binding; try { binding = process.binding('fs'); } catch {}
const lstat = binding !== undefined && typeof binding.lstat === 'function' ? (p) => binding.lstat(p, false, undefined, false) : (p) => fs.lstatSync(p, { throwIfNoEntry: false });
let sum = 0;
const { root, paths, from, to } = workerData;
for (let i = from; i < to; i++) { const s = lstat(root + '/' + paths[i]); if (s !== undefined) sum += 1; }
parentPort.postMessage(sum);
`;

let binding;
try {
  binding = process.binding('fs');
} catch {
  binding = undefined;
}
const lstat = binding !== undefined && typeof binding.lstat === 'function' ? (p) => binding.lstat(p, false, undefined, false) : (p) => fs.lstatSync(p, { throwIfNoEntry: false });

function statRange(paths, from, to) {
  let found = 0;
  for (let i = from; i < to; i++) if (lstat(`${repo}/${paths[i]}`) !== undefined) found++;
  return found;
}

const readStart = performance.now();
const paths = indexPaths(fs.readFileSync(path.join(repo, '.git', 'index')));
const readMs = performance.now() - readStart;
if (paths === undefined) {
  process.stdout.write(`${JSON.stringify({ error: 'index version not 2 or 3' })}\n`);
  process.exit(0);
}

const oneStart = performance.now();
const foundOne = statRange(paths, 0, paths.length);
const oneMs = performance.now() - oneStart;

// Two threads: this one takes the first half while a helper (started inside the timed span, as a
// picture's would be) takes the second; the helper's share is sent once, as a structured clone.
const twoStart = performance.now();
const half = paths.length >> 1;
const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { root: repo, paths: paths.slice(half), from: 0, to: paths.length - half } });
const helper = new Promise((resolve, reject) => {
  worker.once('message', resolve);
  worker.once('error', reject);
});
const foundHere = statRange(paths, 0, half);
const foundThere = await helper;
const twoMs = performance.now() - twoStart;
await worker.terminate();

process.stdout.write(`${JSON.stringify({ entries: paths.length, found: foundOne, foundTwo: foundHere + foundThere, readMs, oneMs, twoMs, binding: binding !== undefined })}\n`);
