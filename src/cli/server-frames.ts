import type { Socket } from 'node:net';

// The frames between the command client and the server: one JSON object per line, both ways.
//
//   server → client   hello · out (stdout text) · err (stderr text) · spawn (run's command) · exit · pong
//   client → server   request (argv, folder, pid, terminals) · signal · child (how run's command ended) · ping · stop

/** What a client asks the server. */
export type ClientFrame =
  | { t: 'request'; argv: string[]; cwd: string; pid: number; stdout: TerminalShape; stderr: TerminalShape; input?: string }
  | { t: 'signal'; signal: NodeJS.Signals }
  | { t: 'child'; code: number; signal: NodeJS.Signals | null; spawnError?: string }
  | { t: 'ping' }
  | { t: 'stop' };

/** What the server tells a client. */
export type ServerFrame =
  | { t: 'hello'; protocol: number; pid: number }
  | { t: 'out'; text: string }
  | { t: 'err'; text: string }
  | { t: 'spawn'; argv: string[]; sessionId: string }
  | { t: 'exit'; code: number }
  | { t: 'pong'; pid: number; startedAt: string; served: number; active: number };

/** Whether a client's output is a terminal, and its width. */
export interface TerminalShape {
  tty: boolean;
  columns?: number;
}

/** The longest line either side accepts: a hook's payload (at most 8 MiB, escaped) is the largest frame; anything longer is not a client of ours. */
const MAX_LINE = 32 * 1024 * 1024;

/** Writes one frame. */
export function sendFrame(socket: Socket, frame: ClientFrame | ServerFrame): void {
  if (!socket.destroyed && socket.writable) socket.write(`${JSON.stringify(frame)}\n`);
}

/**
 * Calls `onFrame` with each JSON object that arrives on `socket`, one per line. A line that is
 * not a JSON object, or is too long, ends the connection: the other side is not speaking this
 * protocol.
 */
export function readFrames(socket: Socket, onFrame: (frame: Record<string, unknown>) => void): void {
  let pending = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    pending += chunk;
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      let frame: unknown;
      try {
        frame = JSON.parse(line);
      } catch {
        socket.destroy();
        return;
      }
      if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) {
        socket.destroy();
        return;
      }
      onFrame(frame as Record<string, unknown>);
    }
    if (pending.length > MAX_LINE) socket.destroy();
  });
}
