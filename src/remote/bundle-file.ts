import { createHash } from 'node:crypto';
import * as fs from 'node:fs/promises';
import { CheckpointError } from '../core/errors.js';
import { BUNDLE_HEAD_PROBE_BYTES, bundleHeaderEnd, parseBundleIndex, type BundleIndex } from './bundle.js';
import type { BackendCallOptions, BackendKey, StoreBackend } from './backend.js';

// A bundle a pull reads, kept on disk (a scratch file of the local store) instead of in memory:
// bundles run to hundreds of MiB, and a pull held each one whole, then a copy, then its objects
// (a 300 MiB bundle cost 984 MiB). The transfer is hashed as it is written, so the bundle is
// checked against its SHA-256 name before any object in it is read; then only its header and
// the objects the pull needs are read back, one at a time.

/** A downloaded, checked bundle: its objects read back one at a time; `close` removes the file. */
export interface BundleOnDisk {
  /** The bytes of `key`, or `undefined` when the bundle does not hold it. */
  read(key: string): Promise<Buffer | undefined>;
  close(): Promise<void>;
}

/**
 * Downloads the bundle `name` under `key` into `file`, checking its bytes against the name.
 * `undefined` when the remote has no such bundle.
 * @throws CheckpointError `INTEGRITY` when the bytes are not that bundle (the file is removed);
 *   the backend's typed errors.
 */
export async function downloadBundle(backend: StoreBackend, key: BackendKey, name: string, file: string, options: BackendCallOptions = {}): Promise<BundleOnDisk | undefined> {
  const chunks = await backend.getStream(key, options);
  if (chunks === undefined) return undefined;
  const handle = await fs.open(file, 'wx+', 0o600);
  try {
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of chunks) {
      hash.update(chunk);
      await handle.write(chunk);
      size += chunk.length;
    }
    if (hash.digest('hex') !== name) throw new CheckpointError('INTEGRITY', `remote bundle ${name} does not match its name (damaged or cut short)`, { expected: name });
    const index = await readIndex(handle, name, size);
    return {
      read: async (object) => {
        const at = index.get(object);
        if (at === undefined) return undefined;
        return readRange(handle, at.start, at.end);
      },
      close: async () => {
        await handle.close().catch(() => undefined);
        await fs.unlink(file).catch(() => undefined);
      },
    };
  } catch (error) {
    await handle.close().catch(() => undefined);
    await fs.unlink(file).catch(() => undefined);
    throw error;
  }
}

async function readIndex(handle: fs.FileHandle, name: string, size: number): Promise<BundleIndex> {
  const probe = await readRange(handle, 0, Math.min(size, BUNDLE_HEAD_PROBE_BYTES));
  const headerEnd = bundleHeaderEnd(name, probe);
  if (headerEnd > size) throw new CheckpointError('INTEGRITY', `remote bundle ${name} is cut short`, { expected: name });
  return parseBundleIndex(name, await readRange(handle, 0, headerEnd), size);
}

async function readRange(handle: fs.FileHandle, start: number, end: number): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(end - start);
  let done = 0;
  while (done < bytes.length) {
    const { bytesRead } = await handle.read(bytes, done, bytes.length - done, start + done);
    if (bytesRead === 0) throw new CheckpointError('INTEGRITY', 'a downloaded bundle ended before its header said');
    done += bytesRead;
  }
  return bytes;
}
