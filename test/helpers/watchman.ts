import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ownWatchman } from '../../src/fs/watchman-service.js';

const run = promisify(execFile);

/** A private watchman service for one test file: its own socket, state, log and config, stopped after. */
export interface PrivateWatchman {
  sockname: string;
  /** The service's process (for SIGSTOP in the overflow test). */
  pid: number;
  stop(): Promise<void>;
}

/** True when the `watchman` command is installed (the tests that need it fail without it, saying so). */
export function watchmanInstalled(): boolean {
  return spawnSync('watchman', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * Starts a watchman service of its own (never the user's), the way the command server starts
 * its own (`ownWatchman`, with turnback's global config), in a temporary folder; returns once it answers.
 * @throws Error when watchman is not installed (`apt-get install watchman`).
 */
export async function startPrivateWatchman(): Promise<PrivateWatchman> {
  if (!watchmanInstalled()) throw new Error('these tests need watchman: apt-get install watchman');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'turnback-watchman-'));
  const service = await ownWatchman(dir);
  if ('refused' in service) throw new Error(`the private watchman service did not start: ${service.detail}`);
  const pid = service.pid;
  if (pid === undefined) throw new Error('the private watchman service wrote no pid');
  return {
    sockname: service.sockname,
    pid,
    async stop() {
      await run('watchman', [`--sockname=${service.sockname}`, '--no-spawn', 'shutdown-server'], { timeout: 60_000 }).catch(() => service.kill());
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
