import type { Socket } from 'node:net';
import { MAX_RELAYED_CHARS } from './environment.js';

// The frames between the command client and the server: one JSON object per line, both ways.
//
//   server → client   hello · taken (the request arrived) · accepted (a hook's deadline, before it changes
//                     anything) · out (stdout text)
//                     · err (stderr text) · spawn (run's command) · exit · pong
//   client → server   request (argv, folder, pid, terminals, environment, a hook's payload) · signal · child (how run's
//                     command ended) · ping · stop · watch (a project to start watching: watch-hint.ts)

/** What a client asks the server. */
export type ClientFrame =
  | { t: 'request'; argv: string[]; cwd: string; pid: number; env: Record<string, string>; stdout: TerminalShape; stderr: TerminalShape; startedAt?: number; input?: string; inputGap?: string }
  | { t: 'signal'; signal: NodeJS.Signals }
  | { t: 'child'; code: number; signal: NodeJS.Signals | null; spawnError?: string }
  | { t: 'ping' }
  | { t: 'stop' }
  | { t: 'watch'; root: string };

/** What the server tells a client. */
export type ServerFrame =
  | { t: 'hello'; protocol: number; pid: number }
  | { t: 'taken' }
  | { t: 'accepted'; deadline: number; log: string }
  | { t: 'out'; text: string }
  | { t: 'err'; text: string }
  | { t: 'spawn'; argv: string[]; sessionId: string }
  | { t: 'exit'; code: number }
  | ({ t: 'pong' } & ServerReport);

/** What a server says about itself (`turnback server status`). */
export interface ServerReport {
  pid: number;
  /** When it started (ISO 8601). */
  startedAt: string;
  /** Commands it has served. */
  served: number;
  /** Commands it is serving now. */
  active: number;
  /** Its protocol version (address.ts). */
  protocol: number;
  /** The version of the turnback package it runs, `null` when its package.json cannot be read. */
  version: string | null;
  /** The command file it runs (`…/dist/cli/main.cjs`): which install or build it is. */
  mainFile: string;
  /** Since when it has had nothing to do (ISO 8601), `null` while it serves a command. */
  idleSince: string | null;
  /** The idle time after which it leaves, in seconds. */
  idleSeconds: number;
  /** Its resident memory, in bytes. */
  rss: number;
  /** The time zone it was started with (`null`: TZ unset): it serves only clients with the same. */
  tz: string | null;
  /** What its idle copier is doing (an older server does not say). */
  idleCopies?: IdleCopyState;
}

/** The last look of the idle copier at one store: when it ended, and what it found there. */
export interface IdleCopyLook {
  /** When the look ended (ISO 8601). */
  at: string;
  /** The store it looked at. */
  storeRoot: string;
  /** Blobs it copied in, and their bytes. */
  copied: number;
  bytes: number;
  /** Blob ids still resting only on git after it, and of those the ones git could not give (their pre-images are lost). */
  left: number;
  lost: number;
  /** True when a command arrived and the look stopped at a slice's end (the next idle moment takes it up again). */
  stopped: boolean;
  /** Why the store could not be looked at (it cannot be opened or written now), when it could not. */
  failed?: string;
}

/** The idle copier's state (src/server/idle-copies.ts), as `turnback server status` shows it. */
export interface IdleCopyState {
  /** True while a look runs (the server is idle and copying). */
  running: boolean;
  /** Stores a served command noted that wait for a look (the next idle moment). */
  pending: number;
  /** Looks since the server started, and the blobs they copied in (with their bytes). */
  looks: number;
  copied: number;
  bytes: number;
  /** The last look, `null` before the first. */
  lastLook: IdleCopyLook | null;
  /** Stores whose last look left nothing to copy: not looked at again before `nextRescan`. */
  settled: number;
  /** When the soonest settled store may be looked at again (ISO 8601; its next served command notes it from then), `null` when none is settled. */
  nextRescan: string | null;
}

/** Whether a client's output is a terminal, and its width. */
export interface TerminalShape {
  tty: boolean;
  columns?: number;
}

/**
 * The longest line either side accepts: a request with a hook's payload (at most 8 MiB,
 * src/cli/hook-input.ts; valid JSON text at most doubles when escaped) and the client's
 * environment (at most MAX_RELAYED_CHARS characters, which JSON writes in at most six each) is the
 * largest frame; anything longer is not a client of ours.
 */
export const MAX_LINE: number = 16 * 1024 * 1024 + 6 * MAX_RELAYED_CHARS + 64 * 1024;

/** Writes one frame. */
export function sendFrame(socket: Socket, frame: ClientFrame | ServerFrame): void {
  if (!socket.destroyed && socket.writable) socket.write(`${JSON.stringify(frame)}\n`);
}

/**
 * Cuts text that arrives in pieces into lines, looking at each character once: a line's pieces are
 * kept apart until its newline comes, and a line past `maxLine` is refused as soon as it passes it.
 */
export class LineSplitter {
  private pieces: string[] = [];
  private pending = 0;
  /** Characters searched for a newline so far (each once). */
  scanned = 0;

  constructor(private readonly maxLine: number = MAX_LINE) {}

  /** The lines `chunk` completes, or `undefined` once a line is longer than the limit. */
  push(chunk: string): string[] | undefined {
    const lines: string[] = [];
    let from = 0;
    for (let newline = chunk.indexOf('\n'); newline >= 0; newline = chunk.indexOf('\n', from)) {
      this.scanned += newline + 1 - from;
      if (this.pending + newline - from > this.maxLine) return undefined;
      this.pieces.push(chunk.slice(from, newline));
      lines.push(this.pieces.join(''));
      this.pieces = [];
      this.pending = 0;
      from = newline + 1;
    }
    this.scanned += chunk.length - from;
    if (from < chunk.length) {
      this.pending += chunk.length - from;
      if (this.pending > this.maxLine) return undefined;
      this.pieces.push(chunk.slice(from));
    }
    return lines;
  }
}

/**
 * Calls `onFrame` with each JSON object that arrives on `socket`, one per line. A line that is
 * not a JSON object, or is too long, ends the connection at once: the other side is not speaking
 * this protocol.
 */
export function readFrames(socket: Socket, onFrame: (frame: Record<string, unknown>) => void): void {
  const splitter = new LineSplitter();
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    if (socket.destroyed) return;
    const lines = splitter.push(chunk);
    if (lines === undefined) {
      socket.destroy();
      return;
    }
    for (const line of lines) {
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
      if (socket.destroyed) return;
    }
  });
}
