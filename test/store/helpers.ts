import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import * as path from 'node:path';
import { CheckpointStore } from '../../src/store/store.js';
import { removeFolder, tempFolder } from '../helpers/temp.js';

/** A fresh temp folder with a project and a store root beside it. */
export interface Sandbox {
  dir: string;
  project: string;
  storeRoot: string;
  cleanup(): Promise<void>;
}

export async function makeSandbox(): Promise<Sandbox> {
  const dir = await tempFolder('turnback-store-');
  const project = path.join(dir, 'project');
  await mkdir(project);
  return { dir, project, storeRoot: path.join(dir, 'store'), cleanup: () => removeFolder(dir) };
}

/**
 * A fresh sandbox and an open store for every test of the calling file (opened in `beforeEach`,
 * closed and removed in `afterEach`). Read `box` and `store` inside tests, not at module level.
 */
export function storePerTest(): { readonly box: Sandbox; readonly store: CheckpointStore } {
  let box: Sandbox | undefined;
  let store: CheckpointStore | undefined;
  beforeEach(async () => {
    box = await makeSandbox();
    store = await openStore(box);
  });
  afterEach(async () => {
    await store?.close();
    await box?.cleanup();
  });
  return {
    get box(): Sandbox {
      if (box === undefined) throw new Error('storePerTest: no test is running');
      return box;
    },
    get store(): CheckpointStore {
      if (store === undefined) throw new Error('storePerTest: no test is running');
      return store;
    },
  };
}

/** Bundles the store's TypeScript source into `dir` as CommonJS, for child processes that run the real store code. */
export async function bundleStore(dir: string): Promise<string> {
  const bundle = path.join(dir, 'store.cjs');
  await build({
    entryPoints: [fileURLToPath(new URL('../../src/store/store.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outfile: bundle,
    logLevel: 'error',
  });
  return bundle;
}

export async function openStore(box: Sandbox, lockTimeoutMs?: number): Promise<CheckpointStore> {
  return CheckpointStore.open(box.storeRoot, { projectRoot: box.project, ...(lockTimeoutMs === undefined ? {} : { lockTimeoutMs }) });
}

/**
 * Where an object's stored bytes live: a loose file (encoding byte + body), a one-object record
 * inside a pack (the same), or a block record (`block`: the compressed body of all its members).
 */
export interface StoredObject {
  /** The loose file or the pack file. */
  file: string;
  /** Offset of the stored bytes in `file`. */
  storedOffset: number;
  /** Offset of the whole record (packs) or 0 (loose). */
  recordOffset: number;
  /** Record length (packs) or file size (loose). */
  recordLength: number;
  stored: Buffer;
  /** For a block member: the block's body encoding (0 raw, 2 brotli) and its member count. */
  block?: { encoding: number; members: number };
}

const BLOCK_MAGIC = 0x54424231;

export async function storedObject(store: CheckpointStore, key: string): Promise<StoredObject> {
  const { readFile } = await import('node:fs/promises');
  const infos = (await store.listObjects()).filter((info) => info.key === key);
  const info = infos[0];
  if (!info) throw new Error(`object ${key} not found`);
  const data = await readFile(info.path);
  if (info.offset === undefined) return { file: info.path, storedOffset: 0, recordOffset: 0, recordLength: data.length, stored: data };
  if (data.readUInt32LE(info.offset) === BLOCK_MAGIC) {
    // magic u32, body length u32, member count u16, encoding u8, table length u32, the table, body, xxh32.
    const bodyLength = data.readUInt32LE(info.offset + 4);
    const members = data.readUInt16LE(info.offset + 8);
    const storedOffset = info.offset + 15 + data.readUInt32LE(info.offset + 11);
    const recordLength = storedOffset - info.offset + bodyLength + 4;
    return { file: info.path, storedOffset, recordOffset: info.offset, recordLength, stored: data.subarray(storedOffset, storedOffset + bodyLength), block: { encoding: data[info.offset + 10] as number, members } };
  }
  const storedLength = data.readUInt32LE(info.offset + 4);
  const keyLength = data[info.offset + 8] as number;
  const storedOffset = info.offset + 9 + keyLength;
  return { file: info.path, storedOffset, recordOffset: info.offset, recordLength: 9 + keyLength + storedLength + 4, stored: data.subarray(storedOffset, storedOffset + storedLength) };
}

/** Makes every object and pack look older than the prune grace period (sealing this process's pack first, as an idle writer would). */
export async function ageStore(store: CheckpointStore, minutes = 20): Promise<void> {
  const { utimes } = await import('node:fs/promises');
  await store.close();
  const old = new Date(Date.now() - minutes * 60_000);
  for (const file of new Set((await store.listObjects()).map((info) => info.path))) await utimes(file, old, old);
}

/**
 * The store's code bundled once for this test file's child processes (see {@link bundleStore}):
 * `path` is the bundle's, set before the file's tests run; the bundle's folder goes after them.
 */
export function storeBundlePerFile(): { readonly path: string } {
  let bundleDir: Sandbox | undefined;
  let bundlePath = '';
  beforeAll(async () => {
    bundleDir = await makeSandbox();
    bundlePath = await bundleStore(bundleDir.dir);
  });
  afterAll(async () => {
    await bundleDir?.cleanup();
  });
  return {
    get path() {
      return bundlePath;
    },
  };
}

/** Deterministic, incompressible bytes (a seeded generator): objects that must not compress. */
export function incompressibleBytes(seed: number, size: number): Buffer {
  const out = Buffer.alloc(size);
  let x = (seed * 2654435761 + 1) >>> 0;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}
