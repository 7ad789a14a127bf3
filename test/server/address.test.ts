import { describe, expect, it } from 'vitest';
import { relevantEnvironment, socketKey } from '../../src/server/address.js';

describe("the server socket's name", () => {
  it('is 20 hex digits, the same for the same text, and different for 50,000 near-identical environments', () => {
    const base = { HOME: '/home/someone', PATH: '/usr/bin:/bin', XDG_DATA_HOME: '/home/someone/.local/share' };
    const key = socketKey(relevantEnvironment(base));
    expect(key).toMatch(/^[0-9a-f]{20}$/);
    expect(socketKey(relevantEnvironment({ ...base }))).toBe(key);
    const seen = new Set<string>();
    for (let i = 0; i < 50_000; i++) seen.add(socketKey(relevantEnvironment({ ...base, HOME: `/home/someone${i}` })));
    // One character apart, or the same characters moved: every one a name of its own.
    for (const text of ['ab', 'ba', 'a\u0000b', 'b\u0000a', '']) seen.add(socketKey(text));
    expect(seen.size).toBe(50_005);
  });
});
