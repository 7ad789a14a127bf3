import { describe, expect, it } from 'vitest';
import type { PictureRecord } from '../../src/capture/picture.js';
import { noteChange, pictureChange } from '../../src/capture/picture-change.js';

function mapOf(count: number): Map<string, PictureRecord> {
  const records = new Map<string, PictureRecord>();
  for (let i = 0; i < count; i++) records.set(`f${i}`, { path: `f${i}`, type: 'file', size: 0, mode: 0o644, mtimeMs: 0, ino: i, state: { type: 'uncopied', reason: 'unreadable', size: 0, mode: 0o644 } });
  return records;
}

describe('noteChange', () => {
  it('keeps a change naming up to half the map, and none naming more (a pass over the map costs as much, and the list would outlive it)', () => {
    const from = mapOf(1_000);
    const small = mapOf(1_000);
    noteChange(small, { from, paths: [...small.keys()].slice(0, 500) });
    expect(pictureChange(small)?.paths).toHaveLength(500);
    const large = mapOf(1_000);
    noteChange(large, { from, paths: [...large.keys()].slice(0, 501) });
    expect(pictureChange(large)).toBeUndefined();
    // A small map's change is kept whatever it names.
    const tiny = mapOf(10);
    noteChange(tiny, { from, paths: [...tiny.keys()] });
    expect(pictureChange(tiny)?.paths).toHaveLength(10);
  });
});
