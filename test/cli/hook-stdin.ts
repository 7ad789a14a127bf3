import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import { writeFile } from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { CLI, type CliRepo } from './harness.js';
import { tempFolder } from '../helpers/temp.js';

// A hook process fed as an agent feeds it: through a real pipe (a FIFO, so the hook's stdin is a
// pipe and not the socket pair Node's own `stdio: 'pipe'` makes), in as many writes as the test
// chooses, with the pipe left open as long as it chooses.

/** Blank bytes a write pads its piece with: larger than any pipe's buffer, so a finished write proves the hook has read the piece. */
export const PIPE_PAST_BUFFER = 1024 * 1024;

/** One hook process and the writer end of its stdin. */
export interface FedHook {
  /** Writes `text`; resolves once the kernel took all of it (the hook has read all but a pipe's buffer); rejects (EPIPE) when the hook stopped reading. */
  write(text: string | Buffer): Promise<void>;
  /** Closes the pipe: the hook reads its end. */
  end(): Promise<void>;
  /** How the hook ended, and after how long (ms, from its start to its exit). */
  exited: Promise<{ code: number | null; ms: number; stdout: string; stderr: string }>;
  pid: number;
}

/** Starts `turnback hook AGENT EVENT` in the repository with a FIFO as its stdin. */
export async function feedHook(repo: CliRepo, agent: string, event: string, env: NodeJS.ProcessEnv = {}): Promise<FedHook> {
  const fifo = path.join(await tempFolder('turnback-fifo-'), 'stdin');
  // Made without blocking this process, as an agent's event loop is never held while it feeds
  // other hooks' stdin: 24 synchronous mkfifo processes, one per parallel hook, held the loop
  // 3 s on a loaded machine, and every hook already started saw its payload stop for that long.
  await promisify(execFile)('mkfifo', [fifo]);
  // A reader first (without waiting for a writer), so opening the writer does not block either.
  const reader = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  // Written as an agent built on Node writes a child's stdin: on the event loop, never a blocked
  // thread of the pool (four of them would hold the other hooks' payloads back).
  const writer = new net.Socket({ fd: fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK), readable: false, writable: true });
  writer.on('error', () => undefined);
  const started = Date.now();
  const child = spawn(process.execPath, ['--no-warnings', CLI, 'hook', agent, event], { cwd: repo.proj, env: { ...repo.env, ...env }, stdio: [reader, 'pipe', 'pipe'] });
  fs.closeSync(reader);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let closed = false;
  // Writes under way: the writer closes only after them (a write the hook stopped reading fails with EPIPE, not EBADF).
  const writing = new Set<Promise<unknown>>();
  const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, ms: Date.now() - started, stdout, stderr }));
  return {
    pid: child.pid as number,
    write(text) {
      const done = new Promise<void>((resolve, reject) => {
        writer.write(text, (error) => (error ? reject(error) : resolve()));
      });
      const settled = done.catch(() => undefined);
      writing.add(settled);
      void settled.then(() => writing.delete(settled));
      return done;
    },
    async end() {
      if (closed) return;
      closed = true;
      await new Promise<void>((resolve) => writer.end(resolve));
      writer.destroy();
    },
    exited: exited.finally(async () => {
      await Promise.all(writing);
      if (!closed) {
        closed = true;
        writer.destroy();
      }
    }),
  };
}

/**
 * Sends `payload` to a new hook in two writes: its first character and a pad of blanks (JSON
 * allows them) past any pipe's buffer, then — once that write finished, so the hook has provably
 * read the first piece — the rest. Resolves with how the hook ended.
 *
 * Fed by a process of its own (`cat` of the two pieces into the pipe a shell makes, as an agent's
 * hook command runs through a shell), not by this process: parallel hooks are started from here,
 * and each start blocks this process's event loop (24 starts held it 2.6 s on a loaded machine),
 * so a hook fed from here saw its payload stop mid-way for that long — an artefact of the test's
 * writer, which an agent writing a payload of the usual size (one write, into an empty pipe) has not.
 */
export async function fireSplit(repo: CliRepo, agent: string, event: string, payload: unknown, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; ms: number; stdout: string; stderr: string }> {
  const text = JSON.stringify(payload);
  const folder = await tempFolder('turnback-split-');
  const first = path.join(folder, 'first');
  const rest = path.join(folder, 'rest');
  await writeFile(first, `${text.slice(0, 1)}${' '.repeat(PIPE_PAST_BUFFER)}`);
  await writeFile(rest, text.slice(1));
  const started = Date.now();
  const child = spawn('sh', ['-c', 'cat "$1" "$2" | exec "$0" --no-warnings "$3" hook "$4" "$5"', process.execPath, first, rest, CLI, agent, event], { cwd: repo.proj, env: { ...repo.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, ms: Date.now() - started, stdout, stderr };
}
