// The remote-store bench (issue #16): push of a 1,000-file turn, and pull-and-restore of it on
// another copy of the project, each side by side with plain uploads and downloads of the same
// files through the same SDK (as `aws s3 sync` does them: one request per file, 10 at a time);
// and the cost a remote adds to `beforeWrite`. Against a real S3 API server: the one
// TURNBACK_TEST_S3_* names, else a RADOS Gateway started here with .ci/s3-start.
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { collect, fmtMs, fmtRatio, git, median } from './lib.mjs';

const FILES = 1000;
const FILE_BYTES = 4096;
/** `aws s3 sync`'s default max_concurrent_requests. */
const SYNC_CONCURRENCY = 10;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The S3 server of this run, and how to stop it if this bench started it. */
function s3Server(temp) {
  const env = process.env;
  if (env.TURNBACK_TEST_S3_ENDPOINT !== undefined) {
    return { endpoint: env.TURNBACK_TEST_S3_ENDPOINT, region: env.TURNBACK_TEST_S3_REGION ?? 'us-east-1', credentials: { accessKeyId: env.TURNBACK_TEST_S3_ACCESS_KEY, secretAccessKey: env.TURNBACK_TEST_S3_SECRET_KEY }, stop: () => undefined };
  }
  const dir = temp.path('s3-server');
  const port = 21_000 + (process.pid % 10_000);
  execFileSync(path.join(ROOT, '.ci', 's3-start'), [dir, String(port)], { stdio: 'ignore', timeout: 120_000 });
  const values = Object.fromEntries(fs.readFileSync(path.join(dir, 's3.env'), 'utf8').trim().split('\n').map((line) => line.split('=', 2)));
  return {
    endpoint: values.TURNBACK_TEST_S3_ENDPOINT,
    region: values.TURNBACK_TEST_S3_REGION,
    credentials: { accessKeyId: values.TURNBACK_TEST_S3_ACCESS_KEY, secretAccessKey: values.TURNBACK_TEST_S3_SECRET_KEY },
    stop: () => spawnSync(path.join(ROOT, '.ci', 's3-stop'), [dir], { stdio: 'ignore' }),
  };
}

async function mapLimit(items, limit, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const index = next++;
      await fn(items[index], index);
    }
  }));
}

/**
 * @param {{ temp: { path(name: string): string }, row: Function, notes: string[], quick: boolean, dist: string, openObserver: Function }} context
 */
export async function benchRemote({ temp, row, notes, quick, dist, openObserver }) {
  const remote = await import(pathToFileURL(path.join(dist, 'remote.js')).href);
  const { S3Client, PutObjectCommand, GetObjectCommand, CreateBucketCommand } = await import('@aws-sdk/client-s3');
  const server = s3Server(temp);
  const client = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  const bucket = 'turnback-bench';
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket })).catch((error) => {
      if (!['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes(error.name)) throw error;
    });
    const rounds = quick ? 3 : 5;
    const times = { push: [], upload: [], pull: [], download: [] };
    for (let round = 0; round < rounds; round++) {
      // Machine a: a committed project of 1,000 files, then one turn that rewrites every one.
      const a = temp.path(`remote-a-${round}`);
      fs.mkdirSync(a, { recursive: true });
      const names = Array.from({ length: FILES }, (_, i) => `d${i % 25}/f${i}.txt`);
      for (const name of names) {
        fs.mkdirSync(path.dirname(path.join(a, name)), { recursive: true });
        fs.writeFileSync(path.join(a, name), `${name} ${round}\n`.padEnd(FILE_BYTES, '.'));
      }
      git(['init', '-q'], { cwd: a });
      git(['add', '-A'], { cwd: a });
      git(['commit', '-qm', 'files'], { cwd: a });
      const { store, observer } = await openObserver(a, temp.path(`remote-a-store-${round}`));
      await observer.callBegin('turn');
      for (const name of names) fs.writeFileSync(path.join(a, name), `${name} changed in round ${round}\n`.padEnd(FILE_BYTES, '#'));
      await observer.callEnd('turn');
      const turn = (await store.list()).at(-1).id;
      await observer.close();
      const workspace = await remote.workspaceIdentity(a);
      const backend = await remote.S3Backend.open({ location: `s3://${bucket}/push-${process.pid}-${round}`, endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials });
      // The plain side: the same 1,000 files (the turn's pre-images), one PutObject each.
      const bytes = await Promise.all((await store.manifest(turn)).entries.map((entry) => store.readObject(entry.before.object)));
      const upload = async () => {
        const start = performance.now();
        await mapLimit(bytes, SYNC_CONCURRENCY, (body, i) => client.send(new PutObjectCommand({ Bucket: bucket, Key: `plain-${process.pid}-${round}/f${i}`, Body: body })));
        return performance.now() - start;
      };
      const push = async () => {
        const start = performance.now();
        const report = await remote.pushCheckpoints(store, backend, workspace);
        if (report.pushed.length !== 1 || report.objects !== FILES) throw new Error(`push sent ${report.objects} objects of ${report.pushed.length} checkpoints`);
        return performance.now() - start;
      };
      collect();
      if (round % 2 === 0) {
        times.upload.push(await upload());
        times.push.push(await push());
      } else {
        times.push.push(await push());
        times.upload.push(await upload());
      }
      // Machine b: a clone elsewhere, where the turn was also made; pull, then undo it.
      const b = temp.path(`remote-b-${round}`);
      git(['clone', '-q', a, b], { cwd: path.dirname(b) });
      for (const name of names) fs.copyFileSync(path.join(a, name), path.join(b, name));
      const other = await openObserver(b, temp.path(`remote-b-store-${round}`));
      const plainTarget = temp.path(`remote-plain-${round}`);
      const download = async () => {
        const start = performance.now();
        await mapLimit(names, SYNC_CONCURRENCY, async (name, i) => {
          const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `plain-${process.pid}-${round}/f${i}` }));
          const file = path.join(plainTarget, name);
          fs.mkdirSync(path.dirname(file), { recursive: true });
          fs.writeFileSync(file, Buffer.from(await answer.Body.transformToByteArray()));
        });
        return performance.now() - start;
      };
      const pullAndRestore = async () => {
        const start = performance.now();
        const pulled = await remote.pullCheckpoints(other.store, backend, await remote.workspaceIdentity(b));
        const restored = await other.observer.restore(turn);
        if (pulled.pulled.length !== 1 || restored.restored.length !== FILES) throw new Error(`pulled ${pulled.pulled.length}, restored ${restored.restored.length}`);
        return performance.now() - start;
      };
      collect();
      if (round % 2 === 0) {
        times.download.push(await download());
        times.pull.push(await pullAndRestore());
      } else {
        times.pull.push(await pullAndRestore());
        times.download.push(await download());
      }
      backend.close();
      await other.observer.close();
      await other.store.close();
      await store.close();
    }
    const pushRatio = median(times.push) / median(times.upload);
    const pullRatio = median(times.pull) / median(times.download);
    row(`push of a ${FILES}-file turn vs plain uploads of the files (same SDK, ${SYNC_CONCURRENCY} at a time)`, `${fmtMs(median(times.push))} vs ${fmtMs(median(times.upload))}: ${fmtRatio(pushRatio)}`, '≤ 1×', pushRatio <= 1 ? 'PASS' : 'MISS');
    row(`pull and restore of it on another copy vs plain downloads written to files`, `${fmtMs(median(times.pull))} vs ${fmtMs(median(times.download))}: ${fmtRatio(pullRatio)}`, '≤ 1×', pullRatio <= 1 ? 'PASS' : 'MISS');

    // beforeWrite with a remote configured against without: the remote is not on that path at all
    // (a push runs after a turn, in a process of its own), which this measures rather than assumes.
    const { resolveCheckpointConfig } = await import(pathToFileURL(path.join(dist, 'admin.js')).href);
    const project = temp.path('remote-writes');
    fs.mkdirSync(project, { recursive: true });
    const withRemote = resolveCheckpointConfig({ dir: `s3://${bucket}/writes`, endpoint: server.endpoint, force_path_style: true });
    const local = resolveCheckpointConfig({});
    const writeTimes = { remote: [], local: [] };
    for (let round = 0; round < (quick ? 5 : 21); round++) {
      for (const [name, config] of round % 2 === 0 ? [['local', local], ['remote', withRemote]] : [['remote', withRemote], ['local', local]]) {
        const { store, observer } = await openObserver(project, temp.path(`remote-writes-${name}-${round}`), { coverage: { maxFileMib: config.maxFileMib } });
        const files = Array.from({ length: 400 }, (_, i) => path.join(project, `w${i}.txt`));
        for (const file of files) fs.writeFileSync(file, 'before\n');
        collect();
        const start = performance.now();
        for (const file of files) {
          await observer.beforeWrite(file);
          fs.writeFileSync(file, 'after\n');
          await observer.afterWrite(file);
        }
        writeTimes[name].push(performance.now() - start);
        await observer.close();
        await store.close();
      }
    }
    const writeRatio = median(writeTimes.remote) / median(writeTimes.local);
    row('beforeWrite + write + afterWrite of 400 files with a remote configured vs without', `${fmtMs(median(writeTimes.remote))} vs ${fmtMs(median(writeTimes.local))}: ${fmtRatio(writeRatio)}`, '≤ 1.05×', writeRatio <= 1.05 ? 'PASS' : 'MISS');
    notes.push(`remote: ${rounds} rounds against a RADOS Gateway on loopback (one-node Ceph, memstore); each round a fresh committed project of ${FILES} files of ${FILE_BYTES} bytes and one turn rewriting all of them; push (one bundle, then the manifest) vs ${FILES} PutObject requests ${SYNC_CONCURRENCY} at a time; pull of the turn into a clone at another path plus the guarded restore of its ${FILES} files vs ${FILES} GetObject requests ${SYNC_CONCURRENCY} at a time written to files; sides alternate which runs first.`);
  } finally {
    client.destroy();
    server.stop();
  }
}
