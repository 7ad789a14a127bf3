import { constants as fsConstants } from 'node:fs';
import { writeAllSync, type FileSystem } from '../fs/file-system.js';

// A store's open (issue #28): every served hook event opens its store, and the open is some
// twenty small file-system calls — the store folder resolved and checked, `STORE.json` read, its
// folders made sure of and checked not to be links, the presence mark written. Through the
// promise API each is a round trip to the thread pool, on a 2-core machine shared with the agent
// a good part of a millisecond apiece; on the calling thread they are microseconds. Same calls,
// same order, same errors: only where they run changes.

/** Runs `call` now, as a promise that settles with what it returned or threw. */
function now<T>(call: () => T): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * `fs` with the calls a store's open makes (`lstat`, `realpath`, `readdir`, `mkdir`, a small
 * `readFile` as text and an exclusive `writeFile` of text) made on the calling thread, when `fs`
 * has a sync path; `fs` itself when it has none (fault-injection tests leave it out so each call
 * can fail). Every other call is `fs`'s own.
 */
export function openingFileSystem(fs: FileSystem): FileSystem {
  const sync = fs.sync;
  if (sync === undefined) return fs;
  const readText = (file: string): string => {
    const fd = sync.openSync(file, fsConstants.O_RDONLY);
    try {
      const chunks: Buffer[] = [];
      const buffer = Buffer.allocUnsafe(Math.max(4096, Number(sync.fstatSync(fd).size) + 1));
      for (;;) {
        const read = sync.readSync(fd, buffer, 0, buffer.length, null);
        if (read === 0) break;
        chunks.push(Buffer.from(buffer.subarray(0, read)));
      }
      return Buffer.concat(chunks).toString('utf8');
    } finally {
      sync.closeSync(fd);
    }
  };
  const writeExclusive = (file: string, text: string, mode: number): void => {
    const fd = sync.openSync(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, mode);
    try {
      writeAllSync(fd, Buffer.from(text), sync.writeSync);
    } finally {
      sync.closeSync(fd);
    }
  };
  return {
    ...fs,
    lstat: ((file: string, options?: unknown) => now(() => sync.lstatSync(file, options as undefined))) as FileSystem['lstat'],
    realpath: ((file: string, options?: unknown) => (options === undefined ? now(() => sync.realpathSync(file)) : fs.realpath(file, options as Parameters<FileSystem['realpath']>[1]))) as FileSystem['realpath'],
    readdir: ((dir: string, options?: unknown) => now(() => sync.readdirSync(dir, options as undefined))) as FileSystem['readdir'],
    mkdir: ((dir: string, options?: unknown) => now(() => sync.mkdirSync(dir, options as undefined))) as FileSystem['mkdir'],
    readFile: ((file: unknown, options?: unknown) =>
      typeof file === 'string' && (options === 'utf8' || options === 'utf-8') ? now(() => readText(file)) : fs.readFile(file as string, options as Parameters<FileSystem['readFile']>[1])) as FileSystem['readFile'],
    writeFile: ((file: unknown, data: unknown, options?: unknown) => {
      const flag = (options as { flag?: unknown } | undefined)?.flag;
      const mode = (options as { mode?: unknown } | undefined)?.mode;
      if (typeof file === 'string' && typeof data === 'string' && flag === 'wx' && typeof mode === 'number') return now(() => writeExclusive(file, data, mode));
      return fs.writeFile(file as string, data as string, options as undefined);
    }) as FileSystem['writeFile'],
  };
}
