import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { expect, test } from 'vitest';
import { makeSandbox, openStore } from '/work/main/test/store/helpers.js';

test('smoke perf', async () => {
  const box = await makeSandbox();
  const store = await openStore(box);
  const w = await store.openCheckpoint({ kind: 'turn' });
  const N = 2000;
  const files: string[] = [];
  for (let i = 0; i < N; i++) {
    const f = path.join(box.project, `f${i}.txt`);
    await writeFile(f, `line ${i} `.repeat(1000).slice(0, 10240));
    files.push(f);
  }
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    const ref = await store.putFile(files[i]!);
    await w.append({ op: 'before', path: `f${i}.txt`, state: { type: 'file', ...ref } });
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log('median ms', times[N / 2], 'p90', times[Math.floor(N * 0.9)]);
  const m = await w.seal();
  expect(m.entries.length).toBe(N);
  console.log((await store.verify()).stats, await store.storeSizeBytes());
  await box.cleanup();
});
