import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cephMissing, S3_REQUIRED } from './remote/s3-needs.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Builds dist/ once when the CLI is missing, so end-to-end tests can run `node dist/cli/main.cjs`;
 * and decides where the run's S3 test server comes from: the one `.ci/run` named
 * (TURNBACK_TEST_S3_*), else one started by the first test file that needs it (test/remote/
 * s3-server.ts, through `.ci/s3-up`) and stopped here when the run ends, else — Ceph not
 * installed — none: the S3 files are skipped, said here in one line, unless TURNBACK_TEST_S3=required.
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
  const shared = sharedS3();
  return () => shared?.stop();
}

/** The folder the run's S3 server starts in, on the first file's demand; nothing when it is named or cannot be had. */
function sharedS3(): { stop(): void } | undefined {
  if (process.env.TURNBACK_TEST_S3_ENDPOINT !== undefined) return undefined;
  const missing = cephMissing();
  if (missing !== undefined) {
    if (S3_REQUIRED) throw new Error(`TURNBACK_TEST_S3=required, but ${missing}`);
    console.log(`S3 remote-store tests skipped: ${missing} (TURNBACK_TEST_S3=required makes this a failure)`);
    return undefined;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'turnback-s3-run-'));
  process.env.TURNBACK_TEST_S3_START_DIR = dir;
  return { stop: () => void spawnSync(path.join(root, '.ci', 's3-stop'), [dir], { stdio: 'ignore' }) };
}
