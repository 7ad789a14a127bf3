/**
 * The helper thread's program (see {@link ParallelLstat}): it receives a batch of `\0`-joined
 * relative paths and answers with their stats, plus one number more at the end — how long it
 * took, so the caller can balance the next split. Built as its own file (`dist/lstat-worker.js`).
 */
import { parentPort } from 'node:worker_threads';
import { STAT_FIELDS, lstatJoinedInto } from './stat-batch.js';

interface Batch {
  base: string;
  text: string;
  count: number;
}

parentPort?.on('message', ({ base, text, count }: Batch) => {
  const started = performance.now();
  const out = new Float64Array(count * STAT_FIELDS + 1);
  lstatJoinedInto(base, text, count, out);
  out[out.length - 1] = performance.now() - started;
  parentPort?.postMessage(out, [out.buffer]);
});
