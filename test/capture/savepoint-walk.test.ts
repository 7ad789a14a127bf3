import { describe, expect, it } from 'vitest';
import { SAVEPOINT_BOUNDS, SAVEPOINT_DEFAULTS, walkSavepoint } from '../../src/capture/savepoint-walk.js';
import { tempFolder, writeTree } from '../helpers/temp.js';

// The 16 MiB manifest bound of a savepoint cannot be reached through the tool (its file ceilings
// keep the manifest under 9 MiB), so the walk is given a smaller bound here: the same rule, cut
// short when an entry would pass the bound, and marked truncated when it is reached exactly.

/** What one more file entry costs the estimate: its path plus 256 bytes of state. */
const entry = (name: string): number => name.length + 256;
/** The estimate of an empty manifest. */
const EMPTY = 1024;

describe("a savepoint's manifest bound", () => {
  it('stops before the entry that would pass it, and counts reaching it exactly as cut short', async () => {
    const root = await tempFolder('turnback-spwalk-');
    await writeTree(root, { 'f1.txt': '1\n', 'f2.txt': '2\n', 'f3.txt': '3\n', 'f4.txt': '4\n' });
    const exactly = EMPTY + 3 * entry('f1.txt');
    const reached = walkSavepoint(root, ['.'], SAVEPOINT_DEFAULTS, [], { ...SAVEPOINT_BOUNDS, manifestBytes: exactly });
    expect(reached.files.map((f) => f.path)).toEqual(['f1.txt', 'f2.txt', 'f3.txt']);
    expect(reached.truncated).toBe(true);
    expect(reached.shortfalls).toEqual([{ reason: 'picture-budget', detail: `the savepoint's manifest reached ${exactly} bytes` }]);

    const passed = walkSavepoint(root, ['.'], SAVEPOINT_DEFAULTS, [], { ...SAVEPOINT_BOUNDS, manifestBytes: exactly - 1 });
    expect(passed.files.map((f) => f.path)).toEqual(['f1.txt', 'f2.txt']);
    expect(passed.truncated).toBe(true);

    const whole = walkSavepoint(root, ['.'], SAVEPOINT_DEFAULTS, [], { ...SAVEPOINT_BOUNDS, manifestBytes: EMPTY + 4 * entry('f1.txt') + 1 });
    expect(whole.files).toHaveLength(4);
    expect(whole.truncated).toBe(false);
    // The real bound: these four are nowhere near it.
    expect(walkSavepoint(root, ['.'], SAVEPOINT_DEFAULTS).truncated).toBe(false);
  });
});

describe('a savepoint walk and names that are not valid UTF-8', () => {
  it('holds such a file under its raw-byte name, in a folder with such a name too', async () => {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const root = await tempFolder('turnback-spwalk-raw-');
    mkdirSync(Buffer.concat([Buffer.from(`${root}/d`), Buffer.of(0xfe)]));
    writeFileSync(Buffer.concat([Buffer.from(`${root}/d`), Buffer.of(0xfe), Buffer.from('/f'), Buffer.of(0xff)]), 'raw\n');
    const walk = walkSavepoint(root, ['.'], SAVEPOINT_DEFAULTS);
    expect(walk.files.map((f) => [f.path, Buffer.from(f.bytes).toString()])).toEqual([['d\udcfe/f\udcff', 'raw\n']]);
    expect(walk.shortfalls).toEqual([]);
  });
});
