import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withThousands } from '../../src/core/numbers.js';

describe('withThousands', () => {
  it('writes whole numbers as toLocaleString("en-US") does (seeded property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }), (value) => withThousands(value) === value.toLocaleString('en-US')),
      { seed: Number(process.env.TURNBACK_TEST_SEED ?? 2026), numRuns: 500 },
    );
    expect(withThousands(0)).toBe('0');
    expect(withThousands(1234567)).toBe('1,234,567');
  });
});
