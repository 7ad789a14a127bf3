import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, watch } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** A private watchman service for one test file: its own socket, state and log, stopped after. */
export interface PrivateWatchman {
  sockname: string;
  pid: number;
  stop(): Promise<void>;
}

/** True when the `watchman` command is installed (the tests that need it fail without it, saying so). */
export function watchmanInstalled(): boolean {
  return spawnSync('watchman', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * Starts a watchman service of its own (never the user's), resolving once its socket exists.
 * @throws Error when watchman is not installed (`apt-get install watchman`).
 */
export async function startPrivateWatchman(): Promise<PrivateWatchman> {
  if (!watchmanInstalled()) throw new Error('these tests need watchman: apt-get install watchman');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'turnback-watchman-'));
  const sockname = path.join(dir, 'sock');
  // The socket appears in `dir`: waited on by a watch of the folder, not a timer.
  const appeared = new Promise<void>((resolve) => {
    const watcher = watch(dir, () => {
      if (existsSync(sockname)) {
        watcher.close();
        resolve();
      }
    });
  });
  const child: ChildProcess = spawn('watchman', ['--foreground', `--sockname=${sockname}`, `--statefile=${dir}/state`, `--logfile=${dir}/log`, `--pidfile=${dir}/pid`, '--no-save-state'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await Promise.race([appeared, exited.then(() => Promise.reject(new Error(`watchman did not start (log: ${dir}/log)`)))]);
  return {
    sockname,
    pid: child.pid as number,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
