import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A private watchman service for one test file: its own socket, state and log, stopped after. */
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
 * Starts a watchman service of its own (never the user's): `watchman get-sockname` with a socket,
 * state and log of this test's starts the service and returns once it answers.
 * @throws Error when watchman is not installed (`apt-get install watchman`).
 */
export async function startPrivateWatchman(): Promise<PrivateWatchman> {
  if (!watchmanInstalled()) throw new Error('these tests need watchman: apt-get install watchman');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'turnback-watchman-'));
  const sockname = path.join(dir, 'sock');
  const flags = [`--sockname=${sockname}`, `--statefile=${dir}/state`, `--logfile=${dir}/log`, `--pidfile=${dir}/pid`, '--no-save-state'];
  await run('watchman', [...flags, 'get-sockname'], { timeout: 60_000 });
  const pid = Number(readFileSync(path.join(dir, 'pid'), 'utf8').trim());
  return {
    sockname,
    pid,
    async stop() {
      await run('watchman', [...flags, '--no-spawn', 'shutdown-server'], { timeout: 60_000 }).catch(() => process.kill(pid, 'SIGKILL'));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
