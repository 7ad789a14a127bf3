/**
 * Seeded randomness for tests whose inputs are drawn at random (kill points, orders): the same
 * seed gives the same draws, and a failure names the seed so it can be replayed with
 * `TURNBACK_TEST_SEED=<seed> npx vitest run <file>`.
 */
export interface Seeded {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number;
}

/** A mulberry32 generator from `seed`. */
export function seededRandom(seed: number): Seeded {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { seed, next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)) };
}

/** The seed of this run: `TURNBACK_TEST_SEED` when set, else `fallback` (fixed, so CI replays). */
export function testSeed(fallback: number): number {
  const fromEnv = process.env.TURNBACK_TEST_SEED;
  return fromEnv !== undefined && /^\d+$/.test(fromEnv) ? Number(fromEnv) : fallback;
}

/** Runs `body` with a generator; a failure is rethrown with the seed that replays it. */
export async function withSeed<T>(fallback: number, body: (random: Seeded) => Promise<T>): Promise<T> {
  const random = seededRandom(testSeed(fallback));
  try {
    return await body(random);
  } catch (error) {
    if (error instanceof Error) error.message = `${error.message}\n(seed ${random.seed}: replay with TURNBACK_TEST_SEED=${random.seed})`;
    throw error;
  }
}
