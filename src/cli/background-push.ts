import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { isPidAlive } from '../admin.js';
import type { CliContext } from './context.js';

// The push at the end of each turn (issue #16: "local first, remote behind"): when the store is on
// S3, the end of a `run` and an agent's turn-end hook start `turnback push --background` as a
// process of its own, detached, and go on without waiting — the agent never waits on the network.
// One background push per store at a time (a pid file in the store's state folder): a push that
// finds one running leaves, and the running one pushes again until nothing new is left, so the
// turn that ended meanwhile is never forgotten. What it could not do goes to the remote log
// beside the store (`<store>.remote.log`), which `status` points at.

/** Where a background push writes what went wrong. */
export function remoteLogPath(context: CliContext): string {
  return `${context.storeDir}.remote.log`;
}

/** Starts a background push when the store is on S3; never throws, never waits. */
export function startBackgroundPush(context: CliContext): void {
  if (context.config.resolved.remote === undefined) return;
  let log: number | undefined;
  try {
    log = openSync(remoteLogPath(context), 'a', 0o600);
    const env = { ...process.env };
    delete env.TURNBACK_RUN;
    // The command file this process runs (the client or main.cjs: either runs `push` in-process).
    const child = spawn(process.execPath, [process.argv[1] as string, 'push', '--background', '--store', context.storeDir], { cwd: context.projectRoot, env, detached: true, stdio: ['ignore', 'ignore', log] });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // No push now: the next turn's end, or `turnback push`, sends it; status counts it.
  } finally {
    if (log !== undefined) closeSync(log);
  }
}

/**
 * Holds the store's background-push slot while `fn` runs; `undefined` (and `fn` not run) when a
 * live process holds it.
 */
export async function withPushSlot<T>(storeDir: string, fn: () => Promise<T>): Promise<T | undefined> {
  const file = path.join(storeDir, 'state', 'remote-push.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, 'wx', 0o600);
    } catch {
      let text: string;
      try {
        text = readFileSync(file, 'utf8').trim();
      } catch {
        continue;
      }
      // Made this instant, its pid not written yet: held.
      if (text === '') return undefined;
      const holder = Number(text);
      if (Number.isSafeInteger(holder) && holder > 0 && isPidAlive(holder)) return undefined;
      // Its holder died mid-push: the slot is free (a push leaves nothing half-published).
      try {
        unlinkSync(file);
      } catch {
        // Another process freed it first.
      }
      continue;
    }
    try {
      writeSync(fd, `${process.pid}\n`);
    } finally {
      closeSync(fd);
    }
    try {
      return await fn();
    } finally {
      try {
        unlinkSync(file);
      } catch {
        // Gone already.
      }
    }
  }
  return undefined;
}
