import { describe, expect, it } from 'vitest';
import { assertNever, isCheckpointError } from '../../src/core/errors.js';
import { mapLimit } from '../../src/core/pool.js';
import { openObserver, sandbox } from '../session/helpers.js';

describe('honest error codes', () => {
  it('an observer used after close is CLOSED, not the caller\'s bad argument', async () => {
    const { project, storeDir } = await sandbox();
    const observer = await openObserver(project, storeDir);
    await observer.close();
    const error = await observer.beginTurn().catch((e: unknown) => e);
    expect(isCheckpointError(error, 'CLOSED')).toBe(true);
  });

  it('assertNever is INTERNAL: a state the code believed impossible', () => {
    expect(() => assertNever('surprise' as never)).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
  });
});

describe('mapLimit', () => {
  it('keeps the order of results, never runs more than the limit at once, and rethrows the first error in item order once all settle', async () => {
    let running = 0;
    let most = 0;
    const results = await mapLimit([5, 1, 4, 2, 3], 2, async (n) => {
      running += 1;
      most = Math.max(most, running);
      for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
      running -= 1;
      return n * 10;
    });
    expect(results).toEqual([50, 10, 40, 20, 30]);
    expect(most).toBe(2);
    const settled: number[] = [];
    const error = await mapLimit([1, 2, 3], 3, async (n) => {
      for (let i = 0; i < 4 - n; i++) await new Promise((resolve) => setImmediate(resolve));
      settled.push(n);
      if (n >= 2) throw new Error(`item ${n}`);
      return n;
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe('item 2');
    expect(settled.sort()).toEqual([1, 2, 3]);
  });
});
