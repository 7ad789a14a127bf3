import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PictureRecord } from '../../src/capture/picture.js';
import { deltaAfter, pictureDelta, type PersistedRecords, type PictureBase } from '../../src/capture/picture-persist.js';
import { pictured } from '../../src/capture/stat-record.js';

// The delta of a picture against its persisted base, taken from the last picture's delta and the
// paths that changed since (`deltaAfter`), against the full pass over every record (`pictureDelta`).

const PATHS = Array.from({ length: 12 }, (_, i) => `d${i % 3}/f${i}`);

let serial = 0;
/** A new record at `p`: a stored copy (what a base holds), a symlink, or a file whose copy is of another size (never in a base). */
function recordAt(p: string, kind: 'copy' | 'symlink' | 'stale'): PictureRecord {
  const n = serial++;
  if (kind === 'symlink') return { path: p, type: 'symlink', size: 1, mode: 0o777, mtimeMs: n, ino: n, target: 'x', state: { type: 'symlink', target: 'x' } };
  const size = 10 + (n % 5);
  return { path: p, type: 'file', size, mode: 0o644, mtimeMs: n, ino: n, state: { type: 'file', object: `o${n}`, hash: `h${n}`, size: kind === 'copy' ? size : size + 1, mode: 0o644 } };
}

/** What each path holds in a map: nothing, the base's own record, or a new record of a kind. */
const choice = fc.constantFrom('absent', 'base', 'copy', 'symlink', 'stale');
type Choice = 'absent' | 'base' | 'copy' | 'symlink' | 'stale';

function mapOf(choices: Choice[], base: ReadonlyMap<string, PictureRecord> | undefined, from?: ReadonlyMap<string, PictureRecord>, keep?: boolean[]): Map<string, PictureRecord> {
  const records = new Map<string, PictureRecord>();
  PATHS.forEach((p, i) => {
    const old = from?.get(p);
    if (keep?.[i] === true) {
      if (old !== undefined) records.set(p, old);
      return;
    }
    const c = choices[i] as Choice;
    if (c === 'absent') return;
    const own = base?.get(p);
    records.set(p, c === 'base' ? (own ?? recordAt(p, 'copy')) : recordAt(p, c));
  });
  return records;
}

function asComparable(delta: PersistedRecords): { base: unknown; records: Set<PictureRecord>; removed: string[] } {
  return { base: delta.base, records: new Set(delta.records), removed: [...delta.removed].sort() };
}

describe('picture delta from the change', () => {
  it('deltaAfter(the last delta, the changed paths) is the full pass, with a base and without', () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { minLength: PATHS.length, maxLength: PATHS.length }),
        fc.array(choice, { minLength: PATHS.length, maxLength: PATHS.length }),
        fc.array(choice, { minLength: PATHS.length, maxLength: PATHS.length }),
        fc.array(fc.boolean(), { minLength: PATHS.length, maxLength: PATHS.length }),
        fc.boolean(),
        (inBase, lastChoices, nextChoices, kept, withBase) => {
          const baseRecords = new Map<string, PictureRecord>();
          PATHS.forEach((p, i) => {
            if (inBase[i] === true) baseRecords.set(p, recordAt(p, 'copy'));
          });
          // A base map may hold records a base never writes (a symlink): pictureDelta ignores them.
          baseRecords.set('link', recordAt('link', 'symlink'));
          const base: PictureBase | undefined = withBase ? { ref: { generation: 'g', chunks: 1, count: baseRecords.size }, records: baseRecords } : undefined;
          const last = mapOf(lastChoices as Choice[], base?.records);
          const next = mapOf(nextChoices as Choice[], base?.records, last, kept);
          // The change: every path whose record is not the last map's own object.
          const changed = PATHS.filter((p) => next.get(p) !== last.get(p));
          const incremental = deltaAfter(pictureDelta(last, base), next, changed, base);
          expect(asComparable(incremental)).toEqual(asComparable(pictureDelta(next, base)));
        },
      ),
      { seed: 2028, numRuns: 400 },
    );
  });

  it('the delta of the very map a base was written from (no lookup per path) is what the full pass finds against a copy of that map', () => {
    // Plain records and file records of every kind: a stored copy of this very stat (held as its
    // key), one of another size or mode, a symlink.
    const kinds = fc.constantFrom('copy', 'symlink', 'stale', 'own', 'own-other-size', 'own-other-mode');
    fc.assert(
      fc.property(fc.array(kinds, { minLength: 0, maxLength: PATHS.length }), (chosen) => {
        const records = new Map<string, PictureRecord>();
        chosen.forEach((kind, i) => {
          const p = PATHS[i] as string;
          if (kind === 'copy' || kind === 'symlink' || kind === 'stale') records.set(p, recordAt(p, kind));
          else {
            const size = 10 + i;
            const state = { type: 'file' as const, object: `o${i}`, hash: `h${i}`, size: kind === 'own-other-size' ? size + 1 : size, mode: kind === 'own-other-mode' ? 0o600 : 0o644, ino: i };
            records.set(p, pictured(p, size, 0o644, i, i, state));
          }
        });
        const ref = { generation: 'g', chunks: 1, count: records.size };
        const written: PictureBase = { ref, records };
        const copied: PictureBase = { ref, records: new Map(records) };
        expect(asComparable(pictureDelta(records, written))).toEqual(asComparable(pictureDelta(records, copied)));
      }),
      { seed: 2029, numRuns: 300 },
    );
  });
});
