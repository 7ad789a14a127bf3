import { spawn, type ChildProcess } from 'node:child_process';
import * as net from 'node:net';
import { readFrames, sendFrame, type ClientFrame } from './frames.js';
import { SERVE_FLAG, type ServerAddress } from './address.js';
import { serverEnvironment } from './environment.js';

/**
 * V8 flags for the server's own command line (Node refuses heap flags in NODE_OPTIONS). A 2 MiB
 * semi-space instead of V8's default of up to 16 MiB: the server's short-lived garbage (stat records,
 * path strings of a picture) is promoted or collected sooner, and its new space stops holding
 * ~32 MiB of resident pages (CHECKPOINT-DESIGN.md, "Where a server's memory goes"). The old
 * generation grows by at most 25% of what the last full collection kept (`--heap-growing-percent`;
 * V8 grows it by up to 4× on a machine with more than 16 GB): at 250,000 files the garbage of a few
 * commands and the idle copy-in is collected before it adds ~70 MiB to the peak. No heap cap:
 * a cap could crash the server on a big tree, which would be a gap. Accepted by Node 20, 22 and 24.
 */
export const SERVER_V8_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--heap-growing-percent=25'];

/**
 * Starts the server for `address` in the background: its own session (the person's Ctrl-C and a
 * closed terminal never reach it), no terminal, the root folder as its working folder (it pins no
 * project folder), and the person's environment without TURNBACK_RUN.
 */
export function launchServer(address: ServerAddress, env: NodeJS.ProcessEnv, stdout: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
  const child = spawn(process.execPath, [...SERVER_V8_FLAGS, address.mainFile, SERVE_FLAG, address.socket], { detached: true, stdio: ['ignore', stdout, 'ignore'], cwd: '/', env: serverEnvironment(env) });
  child.on('error', () => undefined);
  child.unref();
  return child;
}

/** One frame asked of the server at `socket`, and its answer; `undefined` when none answers. */
export function askServer(socket: string, frame: ClientFrame, timeoutMs = 2000): Promise<Record<string, unknown> | undefined> {
  return new Promise((resolve) => {
    const connection = net.connect(socket);
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    let answered = false;
    const finish = (answer: Record<string, unknown> | undefined): void => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      connection.destroy();
      resolve(answer);
    };
    connection.on('error', () => finish(undefined));
    connection.on('close', () => finish(undefined));
    readFrames(connection, (answer) => {
      if (answer.t === 'hello') sendFrame(connection, frame);
      else finish(answer);
    });
  });
}
