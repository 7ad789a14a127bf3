import { execFileSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { tempFolder } from '../helpers/temp.js';
import { PARALLEL_MIN_PATHS, ParallelLstat, lstatInto } from '../../src/fs/parallel-lstat.js';
import { KIND_FAILED, KIND_FILE, KIND_MISSING, NATIVE_ENV, STAT_FIELDS, agreesWithNode, loadNativeLstat, nativeLstat, nativeLstatFile, type NativeLstat } from '../../src/fs/stat-batch.js';

let dir: string;

beforeEach(async () => {
  dir = await tempFolder('turnback-native-');
});

/** The accelerator npm install built here; these tests are about it, so it must be there. */
function accelerator(): NativeLstat {
  const native = loadNativeLstat(nativeLstatFile());
  if (native === undefined) throw new Error(`no native accelerator at ${nativeLstatFile()}: run npm install (or npm run build:native)`);
  return native;
}

function jsStats(base: string, rels: readonly string[]): number[] {
  const out = new Float64Array(rels.length * STAT_FIELDS);
  lstatInto(base, rels, 0, rels.length, out);
  return Array.from(out);
}

function nativeStats(native: NativeLstat, base: string, rels: readonly string[]): number[] {
  const out = new Float64Array(rels.length * STAT_FIELDS);
  lstatInto(base, rels, 0, rels.length, out, native);
  return Array.from(out);
}

/** Every kind of entry the JavaScript loop tells apart, plus names that are hard to pass around. */
function mixedTree(): string[] {
  nodeFs.writeFileSync(path.join(dir, 'file'), 'hello');
  nodeFs.chmodSync(path.join(dir, 'file'), 0o4751);
  nodeFs.writeFileSync(path.join(dir, 'ünï cödé ✓'), 'x'.repeat(5000));
  nodeFs.writeFileSync(path.join(dir, 'new\nline'), '');
  nodeFs.symlinkSync('file', path.join(dir, 'link'));
  nodeFs.symlinkSync('nowhere', path.join(dir, 'dangling'));
  nodeFs.symlinkSync('loop', path.join(dir, 'loop'));
  nodeFs.mkdirSync(path.join(dir, 'folder/deeper'), { recursive: true });
  nodeFs.writeFileSync(path.join(dir, 'folder/deeper/inside'), 'in');
  execFileSync('mkfifo', [path.join(dir, 'fifo')]);
  return [
    'file',
    'ünï cödé ✓',
    'new\nline',
    'link',
    'dangling',
    'loop/x', // ELOOP: failed, not missing
    'folder',
    'folder/deeper/inside',
    'fifo',
    'missing',
    'file/below-a-file', // ENOTDIR: missing
    '', // the base itself
    'n'.repeat(300), // ENAMETOOLONG for one component: failed
    `${'d/'.repeat(2100)}x`, // longer than PATH_MAX: failed
  ];
}

describe('native accelerator', () => {
  it('is built by npm install on this machine and is what nativeLstat() returns, unless TURNBACK_NATIVE=0', () => {
    expect(nativeLstatFile()).toBe(path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../build/Release/turnback_lstat.node'));
    expect(nativeLstat()?.file).toBe(process.env[NATIVE_ENV] === '0' ? undefined : accelerator().file);
  });

  it('TURNBACK_NATIVE=0 turns it off', () => {
    const before = process.env[NATIVE_ENV];
    process.env[NATIVE_ENV] = '0';
    try {
      expect(nativeLstat()).toBeUndefined();
      expect(new ParallelLstat().native).toBe(false);
    } finally {
      if (before === undefined) delete process.env[NATIVE_ENV];
      else process.env[NATIVE_ENV] = before;
    }
  });

  it('writes exactly the numbers the JavaScript loop writes, for every kind of entry and error', () => {
    const rels = mixedTree();
    const native = nativeStats(accelerator(), dir, rels);
    expect(native).toEqual(jsStats(dir, rels));
    const kinds = rels.map((_, i) => native[i * STAT_FIELDS]);
    expect(kinds).toEqual([1, 1, 1, 2, 2, KIND_FAILED, 3, 1, 4, KIND_MISSING, KIND_MISSING, 3, KIND_FAILED, KIND_FAILED]);
    const stats = nodeFs.lstatSync(path.join(dir, 'file'));
    expect(native.slice(0, STAT_FIELDS)).toEqual([KIND_FILE, 0o4751, 5, stats.mtimeMs, stats.ino]);
  });

  it('writes only its part of a larger array (a subarray view), leaving the rest alone', () => {
    const rels = mixedTree();
    const out = new Float64Array(rels.length * STAT_FIELDS).fill(-1);
    lstatInto(dir, rels, 3, 7, out, accelerator());
    const js = jsStats(dir, rels);
    expect(Array.from(out.subarray(0, 3 * STAT_FIELDS))).toEqual(new Array(3 * STAT_FIELDS).fill(-1));
    expect(Array.from(out.subarray(3 * STAT_FIELDS, 7 * STAT_FIELDS))).toEqual(js.slice(3 * STAT_FIELDS, 7 * STAT_FIELDS));
    expect(Array.from(out.subarray(7 * STAT_FIELDS))).toEqual(new Array((rels.length - 7) * STAT_FIELDS).fill(-1));
  });

  it('agrees with the JavaScript loop on random trees (property)', () => {
    const native = accelerator();
    const name = fc.stringMatching(/^[a-zA-Z0-9 ._é✓-]{1,12}$/).filter((n) => n !== '.' && n !== '..');
    const entry = fc.record({ name, kind: fc.constantFrom('file', 'exec', 'link', 'folder', 'missing'), size: fc.nat(3000) });
    let round = 0;
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 30 }), (entries) => {
        const root = path.join(dir, `r${round++}`);
        nodeFs.mkdirSync(root);
        const rels: string[] = [''];
        for (const { name: entryName, kind, size } of entries) {
          const at = path.join(root, entryName);
          rels.push(entryName, `${entryName}/child`);
          if (nodeFs.lstatSync(at, { throwIfNoEntry: false }) !== undefined || kind === 'missing') continue;
          if (kind === 'folder') nodeFs.mkdirSync(at);
          else if (kind === 'link') nodeFs.symlinkSync(`target-${size}`, at);
          else nodeFs.writeFileSync(at, Buffer.alloc(size, 7), { mode: kind === 'exec' ? 0o755 : 0o600 });
        }
        expect(nativeStats(native, root, rels)).toEqual(jsStats(root, rels));
      }),
      { numRuns: 60 },
    );
  });

  it('cuts any text into paths exactly as split would, past its end too (property)', () => {
    const native = accelerator();
    nodeFs.writeFileSync(path.join(dir, 'x'), 'x');
    const rel = fc.oneof(fc.constant('x'), fc.constant(''), fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => !s.includes('\0')));
    fc.assert(
      fc.property(fc.array(rel, { maxLength: 8 }), fc.nat(3), (rels, extra) => {
        const joined = rels.join('\0');
        const count = rels.length + extra;
        const out = new Float64Array(count * STAT_FIELDS);
        native.lstatJoined(dir, joined, count, out);
        const parts = rels.length === 0 ? [''] : joined.split('\0');
        const expected = new Float64Array(count * STAT_FIELDS);
        lstatInto(dir, parts.slice(0, count), 0, Math.min(count, parts.length), expected);
        for (let i = parts.length; i < count; i++) expected[i * STAT_FIELDS] = KIND_FAILED;
        expect(Array.from(out)).toEqual(Array.from(expected));
      }),
      { numRuns: 300 },
    );
  });

  it('the helper thread uses it too, with the same results as the JavaScript loop', async () => {
    const rels = mixedTree();
    const paths: string[] = [];
    while (paths.length < PARALLEL_MIN_PATHS * 2) paths.push(...rels);
    const parallel = new ParallelLstat({ native: accelerator() });
    try {
      expect(parallel.native).toBe(true);
      parallel.warm();
      for (let i = 0; i < 500 && !parallel.parallel; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(parallel.parallel).toBe(true);
      expect(Array.from(await parallel.lstatAll(dir, paths))).toEqual(jsStats(dir, paths));
    } finally {
      await parallel.close();
    }
  });

  it('refuses bad arguments with a TypeError and never reads past its text', () => {
    const native = accelerator();
    const out = new Float64Array(3 * STAT_FIELDS);
    expect(() => native.lstatJoined(dir, 'a', 4, out)).toThrow(TypeError); // out too short
    expect(() => native.lstatJoined(dir, 'a', 1, new Float32Array(5) as unknown as Float64Array)).toThrow(TypeError);
    expect(() => native.lstatJoined(42 as unknown as string, 'a', 1, out)).toThrow(TypeError);
    expect(() => (native.lstatJoined as unknown as (...args: unknown[]) => void)(dir, 'a')).toThrow(TypeError);
    nodeFs.writeFileSync(path.join(dir, 'a'), 'a');
    // A NUL in the base fails every path, as lstatSync does, instead of statting a shorter path.
    const cut = new Float64Array(STAT_FIELDS);
    native.lstatJoined(`${dir}\0/elsewhere`, 'a', 1, cut);
    expect(cut[0]).toBe(KIND_FAILED);
    expect(nativeStats(native, `${dir}\0`, ['a', ''])).toEqual(jsStats(`${dir}\0`, ['a', '']));
    // Three paths asked for, one given: the missing two are failures, not reads of other memory.
    native.lstatJoined(dir, 'a', 3, out);
    expect([out[0], out[STAT_FIELDS], out[2 * STAT_FIELDS]]).toEqual([KIND_FILE, KIND_FAILED, KIND_FAILED]);
  });

  it('is not used when the file is missing, is not an addon, or answers wrongly', () => {
    expect(loadNativeLstat(undefined)).toBeUndefined();
    expect(loadNativeLstat(path.join(dir, 'absent.node'))).toBeUndefined();
    const fake = path.join(dir, 'fake.node');
    nodeFs.writeFileSync(fake, 'not a shared object');
    expect(loadNativeLstat(fake)).toBeUndefined();
    // A copy of the real addon elsewhere loads and passes the check on itself.
    const copy = path.join(dir, 'copy.node');
    nodeFs.copyFileSync(accelerator().file, copy);
    expect(loadNativeLstat(copy)?.file).toBe(copy);
  });

  it('the load check rejects an accelerator whose numbers differ from lstat in any field', () => {
    const probe = path.join(dir, 'probe');
    nodeFs.writeFileSync(probe, 'probe');
    const real = accelerator();
    expect(agreesWithNode(real, probe)).toBe(true);
    for (let field = 0; field < 2 * STAT_FIELDS; field++) {
      const skewed: NativeLstat = {
        file: real.file,
        lstatJoined(base, joined, count, out) {
          real.lstatJoined(base, joined, count, out);
          out[field] = (out[field] as number) + 1;
        },
      };
      expect(agreesWithNode(skewed, probe)).toBe(false);
    }
  });
});
