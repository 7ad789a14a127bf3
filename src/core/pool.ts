/** Options of {@link mapLimit}. */
export interface MapLimitOptions {
  /**
   * Give the event loop a turn after this many milliseconds of work (callers whose `fn` runs
   * synchronous system calls for small files). @default undefined (never)
   */
  yieldEveryMs?: number;
  /** Stop taking new items once one `fn` has thrown (the rest stay unstarted). @default false */
  stopOnError?: boolean;
}

/**
 * Runs `fn` over `items` with at most `limit` calls in flight, in order of start, and returns
 * the results in the items' order. The first error (in item order) is rethrown as it was once
 * every started call has settled, so nothing is still running when the caller sees it.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>, options: MapLimitOptions = {}): Promise<R[]> {
  const results = new Array<R>(items.length);
  const errors = new Map<number, unknown>();
  const { yieldEveryMs, stopOnError = false } = options;
  let next = 0;
  let lastYield = performance.now();
  const more = (): boolean => next < items.length && !(stopOnError && errors.size > 0);
  const worker = async (): Promise<void> => {
    while (more()) {
      if (yieldEveryMs !== undefined && performance.now() - lastYield > yieldEveryMs) {
        lastYield = performance.now();
        await new Promise<void>((resolve) => setImmediate(resolve));
        // Other workers ran meanwhile: the queue may be empty now.
        if (!more()) break;
      }
      const index = next++;
      try {
        results[index] = await fn(items[index] as T, index);
      } catch (error) {
        errors.set(index, error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(0, Math.min(limit, items.length)) }, worker));
  if (errors.size > 0) throw errors.get(Math.min(...errors.keys()));
  return results;
}
