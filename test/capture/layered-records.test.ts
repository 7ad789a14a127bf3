import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PictureRecord } from '../../src/capture/picture.js';
import { LayeredRecords, flattenedIfLarge } from '../../src/capture/layered-records.js';

// A picture's records as the last picture's map plus a layer (issue #28): every read equal to a
// plain Map given the same writes, the root never written, and a layer over a layered map still
// one layer deep.

const PATHS = Array.from({ length: 10 }, (_, i) => `d${i % 3}/f${i}`);

let serial = 0;
function recordAt(p: string): PictureRecord {
  const n = serial++;
  return { path: p, type: 'file', size: n, mode: 0o644, mtimeMs: n, ino: n, state: { type: 'file', object: `o${n}`, hash: `h${n}`, size: n, mode: 0o644 } };
}

type Op = { op: 'set'; path: string } | { op: 'delete'; path: string } | { op: 'layer' } | { op: 'clear' };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('set' as const), path: fc.constantFrom(...PATHS) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), path: fc.constantFrom(...PATHS) }) },
  { weight: 2, arbitrary: fc.constant({ op: 'layer' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'clear' as const }) },
);

/** Everything a consumer can read of a map, in order. */
function reads(map: Map<string, PictureRecord>): unknown {
  const each: unknown[] = [];
  map.forEach((value, key, self) => each.push([key, value, self === map]));
  return {
    size: map.size,
    entries: [...map],
    named: [...map.entries()],
    keys: [...map.keys()],
    values: [...map.values()],
    each,
    gets: PATHS.map((p) => [map.get(p), map.has(p)]),
    copy: [...new Map(map)],
  };
}

describe('LayeredRecords', () => {
  it('reads as a plain Map given the same writes, and never writes the maps it was layered over', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PATHS)), fc.array(op, { maxLength: 40 }), (start, ops) => {
        const root = new Map<string, PictureRecord>(start.map((p) => [p, recordAt(p)]));
        const model = new Map(root);
        let layered = new LayeredRecords(root);
        // Each map layered over, and what it read when the next layer was made over it.
        const frozen: { map: Map<string, PictureRecord>; seen: unknown }[] = [{ map: root, seen: reads(root) }];
        for (const step of ops) {
          if (step.op === 'set') {
            const record = recordAt(step.path);
            expect(layered.set(step.path, record)).toBe(layered);
            model.set(step.path, record);
          } else if (step.op === 'delete') {
            expect(layered.delete(step.path)).toBe(model.delete(step.path));
          } else if (step.op === 'clear') {
            layered.clear();
            model.clear();
          } else {
            frozen.push({ map: layered, seen: reads(layered) });
            layered = new LayeredRecords(layered);
          }
          // Order too: the root's order with the layer's values, then the layer's new paths, as a Map keeps it.
          expect(reads(layered)).toEqual(reads(model));
        }
        for (const { map, seen } of frozen) expect(reads(map)).toEqual(seen);
      }),
      { seed: 2028, numRuns: 300 },
    );
  });

  it('is flattened into a plain Map once its layer outgrows a sixteenth of its root (at least 1,024 paths)', () => {
    const root = new Map<string, PictureRecord>();
    for (let i = 0; i < 20_000; i++) root.set(`f${i}`, recordAt(`f${i}`));
    const layered = new LayeredRecords(root);
    for (let i = 0; i < 1_250; i++) layered.set(`f${i}`, recordAt(`f${i}`));
    expect(flattenedIfLarge(layered)).toBe(layered);
    layered.delete('f19999');
    const flat = flattenedIfLarge(layered);
    expect(flat).not.toBeInstanceOf(LayeredRecords);
    expect([...flat]).toEqual([...layered]);
    expect(root.size).toBe(20_000);
  });
});
