import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PathState } from '../../src/core/model.js';
import type { PictureRecord } from '../../src/capture/picture.js';
import { parsePersistedRecords } from '../../src/capture/picture-persist.js';
import { countCoverage } from '../../src/capture/picture-coverage.js';
import { FileRecord, fresh, pictured } from '../../src/capture/stat-record.js';
import { plainRecord } from './helpers.js';

// A file's record keeps a state that repeats its stat as two private fields (issue #28: the
// server's memory): whatever state it is given, it must read back as that very state, write the
// plain record as JSON, and come back the same from a delta document.

const stat = fc.record({
  path: fc.stringMatching(/^[a-z]{1,6}(\/[a-z]{1,6}){0,2}$/),
  size: fc.oneof(fc.nat(4096), fc.constant(2 ** 33)),
  mode: fc.constantFrom(0o644, 0o755, 0o600, 0o4755),
  mtimeMs: fc.double({ min: 0, max: 2e12, noNaN: true }),
  ino: fc.oneof(fc.nat(1 << 20), fc.constant(2 ** 40)),
});

type Stat = { path: string; size: number; mode: number; mtimeMs: number; ino: number };

/** A state for `s`: one that repeats its stat (held as two fields), or any other a picture may give a file. */
function stateFor(s: Stat): fc.Arbitrary<PathState> {
  const key = fc.stringMatching(/^[0-9a-f]{16}$/);
  return fc.oneof(
    key.map((hash): PathState => ({ type: 'file', object: `${hash}-${s.size.toString(16)}`, hash, size: s.size, mode: s.mode, ino: s.ino })),
    fc.stringMatching(/^[0-9a-f]{40}$/).map((id): PathState => ({ type: 'file', object: `git:${id}`, hash: `git:${id}`, size: s.size, mode: s.mode, ino: s.ino })),
    key.map((hash): PathState => ({ type: 'file', object: hash, hash, size: s.size + 1, mode: s.mode, ino: s.ino })),
    key.map((hash): PathState => ({ type: 'file', object: hash, hash, size: s.size, mode: s.mode & 0o644, ino: s.ino + 1 })),
    key.map((hash): PathState => ({ type: 'file', object: hash, hash, size: s.size, mode: s.mode })),
    key.map((hash): PathState => ({ type: 'file', object: hash, hash, size: s.size, mode: s.mode, ino: s.ino, sha256: hash.repeat(4) })),
    fc.constantFrom<PathState>({ type: 'uncopied', reason: 'credential', size: s.size, mode: s.mode }, { type: 'uncopied', reason: 'store-busy', size: s.size, mode: s.mode, hash: 'ab' }),
  );
}

const statAndState = stat.chain((s) => stateFor(s).map((state) => ({ s, state })));

/** The plain record a `FileRecord` stands for. */
function plain(s: Stat, state: PathState): PictureRecord {
  return { path: s.path, type: 'file', size: s.size, mode: s.mode, mtimeMs: s.mtimeMs, ino: s.ino, state };
}

describe('a file record that holds its state', () => {
  it('reads back every state it is given, writes the plain record as JSON, and a delta document brings it back the same', () => {
    fc.assert(
      fc.property(statAndState, statAndState, ({ s, state }, later) => {
        const record = pictured(s.path, s.size, s.mode, s.mtimeMs, s.ino, state);
        expect(record).toBeInstanceOf(FileRecord);
        expect(record.state).toEqual(state);
        // Told without a state object: the state is a file state of this very stat, with no SHA-256.
        expect(record.repeatsStat).toBe(state.type === 'file' && state.size === s.size && state.mode === s.mode && state.ino === s.ino && state.sha256 === undefined);
        // The key, told without a state object either: a sweep asks it of every unchanged record.
        expect(record.objectKey).toBe(state.type === 'file' ? state.object : undefined);
        expect(plainRecord(record)).toEqual(plain(s, state));
        expect(JSON.parse(JSON.stringify(record))).toEqual(plain(s, state));
        // Own properties are the plain record's without `state`: nothing private shows.
        expect(Object.keys(record).sort()).toEqual(['ino', 'mode', 'mtimeMs', 'path', 'size', 'type']);
        const parsed = parsePersistedRecords(JSON.parse(JSON.stringify({ base: null, records: [record], removed: [] })));
        // A delta keeps what a picture records; a SHA-256 is a savepoint manifest's, never a picture's.
        const { sha256: _sha256, ...pictureState } = state as PathState & { sha256?: string };
        expect(parsed?.records.map(plainRecord)).toEqual([plain(s, pictureState as PathState)]);
        // A state given later replaces the first, whichever way each is held.
        const laterState = { ...later.state, ...(later.state.type === 'file' || later.state.type === 'uncopied' ? { size: s.size } : {}) } as PathState;
        record.state = laterState;
        expect(record.state).toEqual(laterState);
        expect(record.objectKey).toBe(laterState.type === 'file' ? laterState.object : undefined);
      }),
      { seed: 2812, numRuns: 300 },
    );
  });

  it("the coverage counts read a picture of file records as they read the same picture of plain records", () => {
    fc.assert(
      fc.property(fc.uniqueArray(statAndState, { selector: ({ s }) => s.path, maxLength: 30 }), (entries) => {
        const held = new Map<string, PictureRecord>();
        const plainOnes = new Map<string, PictureRecord>();
        for (const { s, state } of entries) {
          held.set(s.path, pictured(s.path, s.size, s.mode, s.mtimeMs, s.ino, state));
          plainOnes.set(s.path, plain(s, state));
        }
        const counts = countCoverage(plainOnes, 3);
        expect(countCoverage(held, 3)).toEqual(counts);
        expect(counts.onGit).toBe(entries.filter(({ state }) => state.type === 'file' && state.object.startsWith('git:')).length);
      }),
      { seed: 2031, numRuns: 100 },
    );
  });

  it('a state read twice is equal, never the same object, so changing one read changes nothing kept', () => {
    const record = pictured('a/b', 3, 0o644, 10.5, 7, { type: 'file', object: 'k', hash: 'h', size: 3, mode: 0o644, ino: 7 });
    const first = record.state as Extract<PathState, { type: 'file' }>;
    expect(record.state).not.toBe(first);
    first.object = 'changed';
    expect(record.state).toEqual({ type: 'file', object: 'k', hash: 'h', size: 3, mode: 0o644, ino: 7 });
  });

  it('a frozen record (a cached base keeps its records so) refuses a new state, as a frozen plain record does', () => {
    const state: PathState = { type: 'file', object: 'k', hash: 'h', size: 3, mode: 0o644, ino: 7 };
    const record = Object.freeze(pictured('a/b', 3, 0o644, 10.5, 7, state));
    const plainOne = Object.freeze({ ...record, state: record.state });
    const other: PathState = { type: 'uncopied', reason: 'store-busy', size: 3, mode: 0o644 };
    expect(() => {
      (plainOne as PictureRecord).state = other;
    }).toThrow(TypeError);
    expect(() => {
      (record as PictureRecord).state = other;
    }).toThrow(TypeError);
    expect(record.state).toEqual(state);
  });

  it("the scan's new record of a file is one, with no state until a picture gives it; a symlink's stays a plain record", () => {
    const file = fresh('f', 'file', 3, 0o644, 1, 2, undefined);
    expect(file).toBeInstanceOf(FileRecord);
    expect((file as Partial<PictureRecord>).state).toBeUndefined();
    const link = fresh('l', 'symlink', 1, 0o777, 1, 3, 'x');
    expect(link).not.toBeInstanceOf(FileRecord);
    expect(link).toEqual({ path: 'l', type: 'symlink', size: 1, mode: 0o777, mtimeMs: 1, ino: 3, target: 'x', state: undefined });
  });
});
