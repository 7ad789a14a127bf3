import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { whenFolderSays } from '../helpers/watch.js';
import { cephMissing } from './s3-needs.js';

// The real S3 API server of the remote-store tests: Ceph's RADOS Gateway on a one-node in-memory
// cluster. `.ci/run` starts one for the whole run and exports its address (TURNBACK_TEST_S3_*);
// without it, the first file of the run that needs one starts it through the same script
// (.ci/s3-up), and the others wait for it here; the global setup stops it.

/** Where a test reaches the server. */
export interface S3TestServer {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Stops a server this file started; nothing for the one `.ci/run` started. */
  stop(): void;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function fromEnv(env: NodeJS.ProcessEnv, stop: () => void): S3TestServer | undefined {
  const endpoint = env.TURNBACK_TEST_S3_ENDPOINT;
  const accessKeyId = env.TURNBACK_TEST_S3_ACCESS_KEY;
  const secretAccessKey = env.TURNBACK_TEST_S3_SECRET_KEY;
  if (endpoint === undefined || accessKeyId === undefined || secretAccessKey === undefined) return undefined;
  return { endpoint, region: env.TURNBACK_TEST_S3_REGION ?? 'us-east-1', credentials: { accessKeyId, secretAccessKey }, stop };
}

/** The server named by an `s3.env` that .ci/s3-start wrote in `dir`. */
function fromStartDir(dir: string, stop: () => void): S3TestServer {
  const env: NodeJS.ProcessEnv = {};
  for (const line of readFileSync(path.join(dir, 's3.env'), 'utf8').split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) env[line.slice(0, at)] = line.slice(at + 1);
  }
  return fromEnv(env, stop) as S3TestServer;
}

/**
 * The server of this run: the one `.ci/run` named, else the run's shared one in the folder the
 * global setup chose — started by the first file that asks (`.ci/s3-up`, up to three fresh
 * clusters, in the background so it outlives that file), waited for by every other — else, outside
 * the global setup, a new one of this file's own.
 * @throws Error naming what to install when Ceph's packages are missing, or why the start failed.
 */
export async function s3TestServer(): Promise<S3TestServer> {
  const running = fromEnv(process.env, () => undefined);
  if (running !== undefined) return running;
  const missing = cephMissing();
  if (missing !== undefined) throw new Error(`the S3 tests need a real S3 API server: ${missing} (or set TURNBACK_TEST_S3_ENDPOINT, _ACCESS_KEY and _SECRET_KEY)`);
  const shared = process.env.TURNBACK_TEST_S3_START_DIR;
  const dir = shared ?? mkdtempSync(path.join(os.tmpdir(), 'turnback-s3-'));
  if (claim(dir)) spawn(path.join(ROOT, '.ci', 's3-up'), [dir], { stdio: 'ignore', detached: true }).unref();
  await whenFolderSays(dir, () => existsSync(path.join(dir, 's3.env')) || existsSync(path.join(dir, 'start-failed')), 'the S3 test server to start');
  if (existsSync(path.join(dir, 'start-failed'))) throw new Error(`the S3 test server did not start: ${readFileSync(path.join(dir, 'start-failed'), 'utf8').trim()} (logs: ${dir}/failed-logs)`);
  // The shared one is stopped by the global setup's teardown, after every file.
  const stop = shared !== undefined ? () => undefined : () => void spawnSync(path.join(ROOT, '.ci', 's3-stop'), [dir], { stdio: 'ignore' });
  return fromStartDir(dir, stop);
}

/** True for the one caller that gets to start the server in `dir` (an exclusive create). */
function claim(dir: string): boolean {
  try {
    mkdirSync(path.join(dir, 'claimed'));
    return true;
  } catch {
    return false;
  }
}

/** Makes `bucket` on the server unless it is there already (the tests share one server). */
export async function ensureBucket(server: S3TestServer, bucket: string): Promise<void> {
  const client = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    if (!['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes((error as { name?: string }).name ?? '')) throw error;
  } finally {
    client.destroy();
  }
}
