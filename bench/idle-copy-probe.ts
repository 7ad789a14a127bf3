// Probe (bundled with esbuild, run by bench/idle-copy-yield.mjs): while the server's idle copier
// copies a large tree's resting blobs in, requests arrive at seeded random moments; each is timed
// from the moment it was due (a timer) to when the event loop ran it, and then it "serves" for a
// short while (awaiting a timer) during which the loop's delay is measured too.
import * as fs from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { CheckpointObserver } from '../src/session/observer.js';
import { CheckpointStore } from '../src/store/store.js';
import { ServerLife } from '../src/server/life.js';
import { servedProject, startIdleCopies } from '../src/server/idle-copies.js';
import { installRequestEnvironment } from '../src/server/request-env.js';

const [project, storeRoot, requestsText] = process.argv.slice(2) as [string, string, string];
const requests = Number(requestsText ?? '40');
let seed = 28;
const rng = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

installRequestEnvironment();
fs.rmSync(storeRoot, { recursive: true, force: true });
{
  const t = performance.now();
  const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
  const observer = new CheckpointObserver({ store, sessionId: 's', coverage: { maxPictureFiles: 1 } });
  await observer.callBegin('c0');
  await observer.callEnd('c0');
  await observer.close();
  await store.close();
  console.error(`first picture ${Math.round(performance.now() - t)} ms`);
}
{
  const t = performance.now();
  const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
  const opened = performance.now();
  const left = (await store.restingOnGit()).length;
  const scanned = performance.now();
  await store.close();
  console.error(`open ${Math.round(opened - t)} ms, finding what is left ${Math.round(scanned - opened)} ms (${left} blobs)`);
}
const life = new ServerLife(600_000, { mainFile: 'x', version: null, tz: null });
life.start();
const copier = startIdleCopies(life);
{
  const done = life.busy();
  servedProject(storeRoot, project);
  done();
}
const started = performance.now();
const late: number[] = [];
const serving: number[] = [];
let served = 0;
while (served < requests && (copier.state().running || copier.state().pending > 0)) {
  const idle = 20 + Math.floor(rng() * 600);
  const due = performance.now() + idle;
  await sleep(idle);
  late.push(performance.now() - due);
  const done = life.busy();
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  // A request's own work: a few turns of the loop over 100 ms (its frames, its files).
  const t = performance.now();
  for (let i = 0; i < 10; i++) await sleep(10);
  histogram.disable();
  serving.push(performance.now() - t - 100);
  done();
  served += 1;
}
while (copier.state().running || copier.state().pending > 0) await sleep(50);
const total = performance.now() - started;
const state = copier.state();
await copier.close();
life.stop();
const sorted = (list: number[]): number[] => [...list].sort((a, b) => a - b);
const q = (list: number[], p: number): number => Math.round(sorted(list)[Math.min(list.length - 1, Math.floor(p * list.length))] ?? 0);
console.log(JSON.stringify({ served, total: Math.round(total), looks: state.looks, copied: state.copied, lastLook: state.lastLook, lateMedian: q(late, 0.5), lateP90: q(late, 0.9), lateMax: q(late, 1), servingExtraMedian: q(serving, 0.5), servingExtraP90: q(serving, 0.9), servingExtraMax: q(serving, 1) }));
process.exit(0);
