import * as net from 'node:net';
import { PROTOCOL_VERSION } from './address.js';
import { readFrames, sendFrame } from './frames.js';

// A command that found no server runs in its own process and starts one (client.ts). Its project's
// watch would start only with the new server's first picture, and watchman's crawl of a big tree
// (seconds) would then fall on that command and the next, which sweep the whole tree meanwhile
// (bench/RESULTS.md, "After the server leaves"). So the command, once its own picture is under
// way (checkpoints are on for that project), tells the server it started which project to watch:
// the crawl runs beside it, and the next command is the first to find the watcher ready.

/**
 * Set on `globalThis` by the client when it started a server for the command it then runs in its
 * own process (`main.cjs`, another bundle of the same process): that server's socket path.
 */
export const LAUNCHED_SERVER: unique symbol = Symbol.for('turnback.launched-server');

/** Tries to reach a server that is still starting: this many times, this far apart (~3 s). */
const ATTEMPTS = 15;
const GAP_MS = 200;

/**
 * Asks the server at `socketPath` to start watching `root`, in the background: retries while the
 * server is not listening yet, gives up quietly on anything else. Never keeps the process alive
 * (its socket and timers are unreferenced), never throws; resolves true once the frame was sent.
 */
export function sendWatchHint(socketPath: string, root: string, attempts: number = ATTEMPTS, gapMs: number = GAP_MS): Promise<boolean> {
  return new Promise((resolve) => {
    const attempt = (left: number): void => {
      const socket = net.connect(socketPath);
      socket.unref();
      let settled = false;
      const finish = (sent: boolean): void => {
        if (settled) return;
        settled = true;
        socket.destroy();
        resolve(sent);
      };
      socket.on('error', (error: NodeJS.ErrnoException) => {
        if (settled) return;
        settled = true;
        socket.destroy();
        if ((error.code === 'ENOENT' || error.code === 'ECONNREFUSED') && left > 1) setTimeout(() => attempt(left - 1), gapMs).unref();
        else resolve(false);
      });
      socket.on('close', () => finish(false));
      readFrames(socket, (frame) => {
        if (frame.t !== 'hello' || frame.protocol !== PROTOCOL_VERSION) {
          finish(false);
          return;
        }
        sendFrame(socket, { t: 'watch', root });
        socket.end(() => finish(true));
      });
    };
    attempt(attempts);
  });
}
