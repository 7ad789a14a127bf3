import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { CheckpointError } from '../core/errors.js';
import { isGitBlob } from '../core/git-blob.js';

// Bytes of files recorded by their blob id, read from the project's own repository: read-only
// (`git cat-file --batch`; turnback never writes into `.git`), one git process per repository for
// however many blobs a restore reads, and each blob checked against its id before it is returned,
// so a blob git no longer has, or a damaged one, is a typed error, never wrong bytes.

interface Waiting {
  id: string;
  resolve: (bytes: Buffer | undefined) => void;
  reject: (error: unknown) => void;
}

/** One `git cat-file --batch` per repository, answering requests in order. */
class BlobReader {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #waiting: Waiting[] = [];
  #buffer: Buffer = Buffer.alloc(0);
  #failed: Error | undefined;

  constructor(projectRoot: string, private readonly onEnd: () => void) {
    this.#child = spawn('git', ['cat-file', '--batch'], { cwd: projectRoot, env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } });
    this.#child.stdout.on('data', (chunk: Buffer) => {
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
      this.#drain();
    });
    const end = (error: Error): void => {
      this.#failed ??= error;
      for (const waiting of this.#waiting.splice(0)) waiting.reject(this.#failed);
      this.onEnd();
    };
    this.#child.on('error', end);
    this.#child.on('close', () => end(new Error('git cat-file ended')));
    this.#child.stdin.on('error', () => undefined);
    this.#child.stderr.resume();
    this.#hold(false);
  }

  /** Keeps the process alive while an answer is awaited, and never when idle. */
  #hold(on: boolean): void {
    for (const handle of [this.#child, this.#child.stdout, this.#child.stdin, this.#child.stderr] as unknown as { ref?: () => void; unref?: () => void }[]) {
      if (on) handle.ref?.();
      else handle.unref?.();
    }
  }

  read(id: string): Promise<Buffer | undefined> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      if (this.#waiting.length === 0) this.#hold(true);
      this.#waiting.push({ id, resolve, reject });
      this.#child.stdin.write(`${id}\n`);
    });
  }

  /** Answers are `<id> blob <size>\n<bytes>\n`, or `<id> missing\n`. */
  #drain(): void {
    for (;;) {
      const waiting = this.#waiting[0];
      if (waiting === undefined) return;
      const newline = this.#buffer.indexOf(10);
      if (newline < 0) return;
      const header = this.#buffer.toString('latin1', 0, newline).split(' ');
      if (header[1] !== 'blob') {
        this.#buffer = this.#buffer.subarray(newline + 1);
        this.#waiting.shift();
        waiting.resolve(undefined);
        if (this.#waiting.length === 0) this.#hold(false);
        continue;
      }
      const size = Number(header[2]);
      if (this.#buffer.length < newline + 1 + size + 1) return;
      const bytes = Buffer.from(this.#buffer.subarray(newline + 1, newline + 1 + size));
      this.#buffer = this.#buffer.subarray(newline + 1 + size + 1);
      this.#waiting.shift();
      waiting.resolve(bytes);
      if (this.#waiting.length === 0) this.#hold(false);
    }
  }
}

/** The readers, by repository and by what their git was started with: one started for one environment never answers another. */
const readers = new Map<string, BlobReader>();

/**
 * What of the environment chooses the git a reader runs and the repository it reads (PATH, GIT_*):
 * in the command server each command has its own `process.env` (src/server/request-env.ts), and a
 * reader outlives the command that started it.
 */
function readerKey(projectRoot: string): string {
  const env = process.env;
  const git = Object.keys(env)
    .filter((name) => name.startsWith('GIT_'))
    .sort()
    .map((name) => `${name}=${env[name] ?? ''}`);
  return [projectRoot, `PATH=${env.PATH ?? ''}`, ...git].join('\0');
}

function readerFor(projectRoot: string): BlobReader {
  const key = readerKey(projectRoot);
  let reader = readers.get(key);
  if (reader === undefined) {
    reader = new BlobReader(projectRoot, () => readers.delete(key));
    readers.set(key, reader);
  }
  return reader;
}

/**
 * The bytes of blob `id` from the repository at `projectRoot`.
 *
 * @throws CheckpointError `INTEGRITY` when git no longer has it (a garbage-collected blob) or the
 *   bytes do not hash to `id`.
 */
export async function readGitBlob(projectRoot: string, id: string): Promise<Buffer> {
  let bytes: Buffer | undefined;
  try {
    bytes = await readerFor(projectRoot).read(id);
  } catch (error) {
    throw new CheckpointError('INTEGRITY', `git's blob ${id} could not be read`, { expected: id, found: 'missing', cause: error });
  }
  if (bytes === undefined) throw new CheckpointError('INTEGRITY', `git no longer has blob ${id} (its file was recorded by that id, not copied)`, { expected: id, found: 'missing' });
  if (!isGitBlob(bytes, id)) throw new CheckpointError('INTEGRITY', `git's blob ${id} does not hash to its id`, { expected: id, found: 'mismatch' });
  return bytes;
}

/** True when the repository at `projectRoot` still has blob `id` (and it hashes to its id). */
export async function hasGitBlob(projectRoot: string, id: string): Promise<boolean> {
  try {
    await readGitBlob(projectRoot, id);
    return true;
  } catch {
    return false;
  }
}
