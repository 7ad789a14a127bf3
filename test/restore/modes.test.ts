import { describe, expect, it } from 'vitest';
import { restoredMode } from '../../src/restore/modes.js';

describe('restoredMode exact', () => {
  it.each([
    [0o644, 0o644],
    [0o755, 0o755],
    [0o600, 0o600],
    [0o400, 0o400],
    [0o777, 0o777],
    [0o4755, 0o755], // setuid stripped
    [0o2755, 0o755], // setgid stripped
    [0o1777, 0o777], // sticky stripped
    [0o100644, 0o644], // file-type bits from st_mode ignored
  ])('recorded %o -> %o', (recorded, expected) => {
    expect(restoredMode('exact', recorded, 0o600)).toBe(expected);
    expect(restoredMode('exact', recorded)).toBe(expected);
  });
});

describe('restoredMode never-widen', () => {
  it.each([
    // [recorded, destination, expected]
    [0o644, 0o644, 0o644],
    [0o755, undefined, 0o644], // exec never granted to a missing destination
    [0o755, 0o644, 0o644], // exec not granted to a non-exec destination
    [0o666, 0o644, 0o644], // group/other write not granted
    [0o666, 0o664, 0o664], // group write kept when the destination has it
    [0o666, 0o666, 0o666], // other write kept when the destination has it
    [0o400, 0o644, 0o600], // owner read+write always kept
    [0o000, undefined, 0o600],
    [0o644, 0o755, 0o755], // an executable destination keeps its own bits
    [0o600, 0o711, 0o711],
    [0o4755, 0o644, 0o644], // setuid stripped, exec not granted
    [0o4644, undefined, 0o644],
    [0o640, 0o600, 0o640], // read bits may come from the record
  ] as [number, number | undefined, number][])('recorded %o, destination %s -> %o', (recorded, destination, expected) => {
    expect(restoredMode('never-widen', recorded, destination)).toBe(expected);
  });

  it('an executable destination with setuid keeps only its permission bits', () => {
    expect(restoredMode('never-widen', 0o644, 0o4755)).toBe(0o755);
  });
});
