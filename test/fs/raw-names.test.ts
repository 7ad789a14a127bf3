import fc from 'fast-check';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { hasRawBytes, kernelBytes, nameFromBytes, pathForKernel } from '../../src/core/raw-names.js';
import { shownPath } from '../../src/report/escape.js';
import { tempFolder } from '../helpers/temp.js';

describe('raw names: bytes ↔ strings', () => {
  it('every byte string comes back byte for byte', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const name = nameFromBytes(bytes);
        expect(kernelBytes(name).equals(Buffer.from(bytes))).toBe(true);
        // The string survives JSON (manifests, journals, state documents).
        expect(JSON.parse(JSON.stringify(name))).toBe(name);
      }),
    );
  });

  it('valid UTF-8 decodes as usual and stays a plain string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (text) => {
        const bytes = Buffer.from(text, 'utf8');
        expect(nameFromBytes(bytes)).toBe(text);
        expect(hasRawBytes(text)).toBe(false);
        expect(pathForKernel(text)).toBe(text);
      }),
    );
  });

  it('a byte that is not UTF-8 becomes U+DC80+byte, and only such a name goes to the kernel as bytes', () => {
    expect(nameFromBytes(Buffer.from([0x66, 0xff, 0x2e, 0x74]))).toBe('f\udcff.t');
    expect(nameFromBytes(Buffer.from([0x61, 0xc3]))).toBe('a\udcc3');
    // Overlong forms and encoded surrogates are not UTF-8: escaped byte by byte, so a decoded name
    // never holds a surrogate of its own.
    expect(nameFromBytes(Buffer.from([0xc0, 0xaf]))).toBe('\udcc0\udcaf');
    expect(nameFromBytes(Buffer.from([0xed, 0xb3, 0xbf]))).toBe('\udced\udcb3\udcbf');
    // A real U+FFFD in a name is kept as it is.
    expect(nameFromBytes(Buffer.from('a\uFFFDb', 'utf8'))).toBe('a\uFFFDb');
    // A surrogate pair (an emoji) is not a raw byte.
    expect(hasRawBytes('\u{1F600}')).toBe(false);
    expect(Buffer.isBuffer(pathForKernel('/p/f\udcff'))).toBe(true);
  });

  it('a raw byte is shown as \\xNN to a person', () => {
    expect(shownPath('dir\udcfe/f\udcff.txt')).toBe('"dir\\xfe/f\\xff.txt"');
    expect(shownPath('\u{1F600}.txt')).toBe('\u{1F600}.txt');
  });
});

describe('the file-system seam reaches names that are not UTF-8', () => {
  it('random byte names: listed, read, renamed and removed through their strings', async () => {
    const root = await tempFolder('turnback-raw-names-');
    const nameBytes = fc
      .uint8Array({ minLength: 1, maxLength: 24 })
      .filter((b) => !b.includes(0) && !b.includes(0x2f) && !(b.length <= 2 && b.every((x) => x === 0x2e)));
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(nameBytes, { minLength: 1, maxLength: 6, selector: (b) => Buffer.from(b).toString('hex') }), async (names) => {
        const dir = path.join(root, String(round++));
        await mkdir(dir);
        for (const [i, bytes] of names.entries()) await writeFile(Buffer.concat([Buffer.from(`${dir}/`), bytes]), `content ${i}`);
        const listed = (await nodeFileSystem.readdir(dir)).sort();
        expect(listed).toEqual(names.map((b) => nameFromBytes(b)).sort());
        for (const [i, bytes] of names.entries()) {
          const name = path.join(dir, nameFromBytes(bytes));
          expect((await nodeFileSystem.readFile(name)).toString()).toBe(`content ${i}`);
          await nodeFileSystem.rename(name, `${name}.moved`);
          expect(nodeFileSystem.sync?.lstatSync(`${name}.moved`).isFile()).toBe(true);
          await nodeFileSystem.unlink(`${name}.moved`);
        }
        expect(await readdir(dir)).toEqual([]);
      }),
      { numRuns: 25 },
    );
  });
});
