import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { whenFolderSays } from '../helpers/watch.js';

// The real S3 API server of the remote-store tests: Ceph's RADOS Gateway on a one-node in-memory
// cluster. `.ci/run` starts one for the whole run and exports its address (TURNBACK_TEST_S3_*);
// without it, the global setup (test/global-setup.ts) starts one in the background for the run,
// through the same script (.ci/s3-start), and the files that need it wait for it here.

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
 * The server of this run: the one `.ci/run` named, else the one the global setup is starting
 * (waited for: it starts in the background while other files run), else a
 * new one of this file's own (about 11 s).
 * @throws Error naming what to install when Ceph's packages are missing, or why the start failed.
 */
export async function s3TestServer(): Promise<S3TestServer> {
  const running = fromEnv(process.env, () => undefined);
  if (running !== undefined) return running;
  const shared = process.env.TURNBACK_TEST_S3_START_DIR;
  if (shared !== undefined) {
    await whenFolderSays(shared, () => existsSync(path.join(shared, 's3.env')) || existsSync(path.join(shared, 'start-failed')), "the run's S3 server to start");
    if (existsSync(path.join(shared, 'start-failed'))) {
      const log = existsSync(path.join(shared, 'log', 'start.log')) ? readFileSync(path.join(shared, 'log', 'start.log'), 'utf8').trim().split('\n').slice(-8).join('\n') : '';
      throw new Error(`the run's S3 server did not start: ${readFileSync(path.join(shared, 'start-failed'), 'utf8').trim()}\n${log}`);
    }
    // Stopped by the global setup's teardown, after every file.
    return fromStartDir(shared, () => undefined);
  }
  if (spawnSync('sh', ['-c', 'command -v radosgw && command -v ceph-mon && command -v ceph-osd'], { stdio: 'ignore' }).status !== 0) {
    throw new Error('the S3 tests need a real S3 API server: apt-get install --no-install-recommends radosgw ceph-mon ceph-osd (or set TURNBACK_TEST_S3_ENDPOINT, _ACCESS_KEY and _SECRET_KEY)');
  }
  const dir = path.join(os.tmpdir(), `turnback-s3-${process.pid}-${Date.now()}`);
  // A port of this process's own, so two test processes never meet.
  const port = 20_000 + ((process.pid * 7) % 20_000);
  const stop = (): void => void spawnSync(path.join(ROOT, '.ci', 's3-stop'), [dir], { stdio: 'ignore' });
  try {
    execFileSync(path.join(ROOT, '.ci', 's3-start'), [dir, String(port)], { stdio: 'ignore', timeout: 120_000 });
  } catch (error) {
    stop();
    throw error;
  }
  return fromStartDir(dir, stop);
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
