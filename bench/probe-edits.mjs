// Probe (not a bench row): a kept tree, the watcher on, N commands after 10 edits each, timed;
// run under --cpu-prof to find the O(tree) passes. Usage:
//   node --expose-gc bench/probe-edits.mjs --files=250000 --dir=/tmp/x [--reps=5] [--edits=10]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { editFiles, generateTree } from './tree.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIST = process.env.TURNBACK_DIST ? path.resolve(process.env.TURNBACK_DIST) : path.join(HERE, '..', 'dist');
const { CheckpointObserver } = await import(pathToFileURL(path.join(DIST, 'index.js')).href);
const { openStore, ownWatchman, startWatchman, useWatchers, watchReport, closeWatchers } = await import(pathToFileURL(path.join(DIST, 'admin.js')).href);
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const files = Number(args.files ?? 250000);
const reps = Number(args.reps ?? 5);
const edits = Number(args.edits ?? 10);
const dir = args.dir;
const coverage = { maxPictureFiles: 1_000_000, maxWalkEntries: 10_000_000, maxPictureSeconds: 900, maxPictureMib: 100_000 };
const root = path.join(dir, `tree-${files}`);
let gen;
if (!fs.existsSync(root)) {
  fs.mkdirSync(root, { recursive: true });
  gen = generateTree(root, { files, seed: 28, tiny: true, ignoredFiles: 0, logFiles: 0 });
  fs.writeFileSync(path.join(dir, `covered-${files}.json`), JSON.stringify(gen.covered));
} else gen = { covered: JSON.parse(fs.readFileSync(path.join(dir, `covered-${files}.json`), 'utf8')) };
const storeDir = path.join(dir, `store-${files}-${process.pid}`);
const service = await ownWatchman(path.join(dir, `wm-${process.pid}`));
let serial = 0;
async function command() {
  const store = await openStore(storeDir, { projectRoot: root });
  const observer = new CheckpointObserver({ store, sessionId: 'probe', coverage });
  const call = `p-${serial++}`;
  const start = performance.now();
  await observer.callBegin(call);
  const begin = performance.now() - start;
  await observer.callEnd(call);
  await observer.close();
  await store.close();
  return begin;
}
await useWatchers((r) => startWatchman(r, { sockname: service.sockname }));
const realRoot = fs.realpathSync(root);
for (let w = 0; w < 100 && watchReport(realRoot).state !== 'watching'; w++) await command();
for (let i = 0; i < 3; i++) await command();
const times = [];
const phaseStart = Number(process.hrtime.bigint() / 1000n);
for (let i = 0; i < reps; i++) {
  if (edits > 0) editFiles(root, gen.covered, edits, 100 + i + Number(args.round ?? 0));
  times.push((await command()).toFixed(2));
}
console.log(JSON.stringify({ files, phaseStart, times, state: watchReport(realRoot).state }));
await closeWatchers();
await useWatchers(undefined);
service.kill?.();
fs.rmSync(storeDir, { recursive: true, force: true });
process.exit(0);
