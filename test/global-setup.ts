import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Builds dist/ once when the CLI is missing, so end-to-end tests can run `node dist/cli/main.cjs`;
 * and, when no S3 server is named (TURNBACK_TEST_S3_*) but Ceph is installed, starts one for the
 * whole run in the background (test/remote/s3-server.ts waits for it only in the files that need it).
 */
export default function setup(): () => void {
  const cli = path.join(root, 'dist', 'cli', 'main.cjs');
  if (!existsSync(cli)) {
    try {
      execFileSync('npx', ['tsup'], { cwd: root, stdio: 'inherit' });
    } catch (error) {
      // A failing declaration build still leaves the JavaScript in place; only its absence is fatal.
      if (!existsSync(cli)) throw error;
    }
  }
  const started = startSharedS3();
  return () => started?.stop();
}

/** The run's shared S3 server, starting; its folder is handed to the test processes in TURNBACK_TEST_S3_START_DIR. */
function startSharedS3(): { stop(): void } | undefined {
  if (process.env.TURNBACK_TEST_S3_ENDPOINT !== undefined) return undefined;
  if (spawnSync('sh', ['-c', 'command -v radosgw && command -v ceph-mon && command -v ceph-osd'], { stdio: 'ignore' }).status !== 0) return undefined;
  const dir = path.join(os.tmpdir(), `turnback-s3-run-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const port = 20_000 + ((process.pid * 13) % 20_000);
  const child: ChildProcess = spawn(path.join(root, '.ci', 's3-start'), [dir, String(port)], { stdio: 'ignore' });
  let running = true;
  child.on('exit', (code) => {
    running = false;
    // What s3-server.ts waits for when the start fails: the reason, instead of s3.env.
    if (code === 0) return;
    try {
      writeFileSync(path.join(dir, 'start-failed'), `.ci/s3-start exited with ${code}\n`);
    } catch {
      // The run is over and its folder gone already.
    }
  });
  process.env.TURNBACK_TEST_S3_START_DIR = dir;
  return {
    stop: () => {
      child.removeAllListeners('exit');
      if (running) child.kill('SIGTERM');
      spawnSync(path.join(root, '.ci', 's3-stop'), [dir], { stdio: 'ignore' });
    },
  };
}
