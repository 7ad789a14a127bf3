import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { remoteIsWhole } from '../remote/scenarios.js';
import { relayTo } from '../remote/relay.js';
import { S3Backend } from '../../src/remote/s3-backend.js';
import { workspaceIdentity } from '../../src/remote/workspace-identity.js';
import { withSeed } from '../helpers/seed.js';
import { ensureBucket, s3TestServer, type S3TestServer } from '../remote/s3-server.js';
import { S3_SKIPPED } from '../remote/s3-needs.js';
import { CLI } from './harness.js';
import { remoteRepos } from './remote-repos.js';

// A push that dies — SIGKILLed at seeded random points, or cut off from the server mid-transfer —
// leaves the local store whole and the remote never showing a checkpoint whose copies are not
// all there; the next push completes (issue #16).

let server: S3TestServer;
const BUCKET = 'turnback-faults';

beforeAll(async () => {
  if (S3_SKIPPED !== undefined) return;
  server = await s3TestServer();
  await ensureBucket(server, BUCKET);
}, 180_000);
afterAll(() => server?.stop());

const { repoWithTurns, configure, tbAsync, sealedCount } = remoteRepos(() => server, BUCKET);

describe.skipIf(S3_SKIPPED !== undefined)('a push that dies', () => {
  it('SIGKILLed at seeded random points: the remote never shows a checkpoint missing a copy, the local store verifies, the next push completes', async () => {
    await withSeed(1618, async (random) => {
      const prefix = `kill-${randomBytes(4).toString('hex')}`;
      // The push goes through a relay that counts what it sends: the kill lands after a seeded
      // number of bytes (somewhere in a push of ~6 MB), not after a guessed time.
      let killAt = Number.POSITIVE_INFINITY;
      let kill: () => void = () => undefined;
      const relay = await relayTo(server.endpoint, (total) => {
        if (total >= killAt) kill();
      });
      const repo = await repoWithTurns(6, prefix, relay.endpoint);
      const backend = await S3Backend.open({ location: `s3://${BUCKET}/${prefix}`, endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials });
      const workspace = await workspaceIdentity(repo.proj);
      try {
        const total = sealedCount(repo);
        let killed = 0;
        for (let attempt = 0; attempt < 5; attempt++) {
          const child = spawn(process.execPath, ['--no-warnings', CLI, 'push'], { cwd: repo.proj, env: repo.env, stdio: 'ignore' });
          const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
          kill = () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
          };
          // Counted from this push's start (the child sends nothing before its Node has started).
          killAt = relay.total() + random.int(1_000, 3_000_000);
          if ((await exited) === 'SIGKILL') killed += 1;
          expect(await remoteIsWhole(backend, workspace)).toBeLessThanOrEqual(total);
          expect(repo.tb(['verify']).code).toBe(0);
        }
        expect(killed).toBeGreaterThan(0);
        await configure(repo, prefix, server.endpoint);
        const done = repo.tb(['push']);
        expect(done.code, done.stderr).toBe(0);
        expect(await remoteIsWhole(backend, workspace)).toBe(total);
      } finally {
        backend.close();
        relay.close();
      }
    });
  });

  it('a server that stops answering mid-transfer, connections left open: the push fails at its deadline naming the request, nothing half-published, and the next push completes', async () => {
    let frozen = false;
    const relay = await relayTo(server.endpoint, (total) => {
      if (total <= 200 * 1024 || frozen) return;
      frozen = true;
      relay.freeze();
    });
    const prefix = `frozen-${randomBytes(4).toString('hex')}`;
    const repo = await repoWithTurns(3, prefix, relay.endpoint);
    await configure(repo, prefix, relay.endpoint, 'request_timeout_seconds = 1\n');
    const backend = await S3Backend.open({ location: `s3://${BUCKET}/${prefix}`, endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials });
    const workspace = await workspaceIdentity(repo.proj);
    try {
      const failed = await tbAsync(repo, ['push']);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/cannot (create|write|read|look at|list) s3:\/\/turnback-faults\/frozen-/);
      expect(failed.stderr).toMatch(/timeout|timed out/);
      expect(frozen).toBe(true);
      await remoteIsWhole(backend, workspace);
      expect(repo.tb(['verify']).code).toBe(0);
      await configure(repo, prefix, server.endpoint);
      const done = repo.tb(['push']);
      expect(done.code, done.stderr).toBe(0);
      expect(await remoteIsWhole(backend, workspace)).toBe(sealedCount(repo));
    } finally {
      backend.close();
      relay.close();
    }
  });

  it('cut off from the server mid-transfer: a typed failure, nothing half-published, and the next push completes', async () => {
    // The network goes away once 200 KiB have gone through.
    let cut = false;
    const relay = await relayTo(server.endpoint, (total) => {
      if (total <= 200 * 1024 || cut) return;
      cut = true;
      relay.cut();
    });
    const prefix = `cut-${randomBytes(4).toString('hex')}`;
    const repo = await repoWithTurns(3, prefix, relay.endpoint);
    const backend = await S3Backend.open({ location: `s3://${BUCKET}/${prefix}`, endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials });
    const workspace = await workspaceIdentity(repo.proj);
    try {
      const failed = await tbAsync(repo, ['push']);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/try again later/);
      expect(cut).toBe(true);
      await remoteIsWhole(backend, workspace);
      expect(repo.tb(['verify']).code).toBe(0);
      expect(repo.tb(['status']).stdout).toMatch(/checkpoints? not pushed yet/);
      // The network is back (the server directly): the push completes.
      await configure(repo, prefix, server.endpoint);
      const done = repo.tb(['push']);
      expect(done.code, done.stderr).toBe(0);
      expect(await remoteIsWhole(backend, workspace)).toBe(sealedCount(repo));
    } finally {
      backend.close();
      relay.close();
    }
  });
});
