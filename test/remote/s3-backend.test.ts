import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCheckpointError, type CheckpointError } from '../../src/core/errors.js';
import { S3Backend } from '../../src/remote/s3-backend.js';
import { parseS3Location } from '../../src/remote/s3-location.js';
import { backendConformance } from './conformance.js';
import { twoMachinesPushingAndPruning } from './scenarios.js';
import { tempFolder } from '../helpers/temp.js';
import { ensureBucket, s3TestServer, type S3TestServer } from './s3-server.js';
import { S3_SKIPPED } from './s3-needs.js';

// The S3 backend against a real S3 API server (Ceph's RADOS Gateway, started by .ci/run or by
// s3-server.ts), and its typed errors against servers that fail the ways real ones do.

let server: S3TestServer;
const BUCKET = 'turnback-test';
const opened: S3Backend[] = [];
/** What the misbehaving test servers below are sent: they check none. */
const FAKE_CREDENTIALS = { accessKeyId: 'fake', secretAccessKey: 'fake-secret' };

beforeAll(async () => {
  if (S3_SKIPPED !== undefined) return;
  server = await s3TestServer();
  await ensureBucket(server, BUCKET);
}, 180_000);
afterAll(() => {
  for (const backend of opened.splice(0)) backend.close();
  server?.stop();
});

async function openOn(location: string, extra: Partial<Parameters<typeof S3Backend.open>[0]> = {}): Promise<S3Backend> {
  const backend = await S3Backend.open({ location, endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials, ...extra });
  opened.push(backend);
  return backend;
}

describe.skipIf(S3_SKIPPED !== undefined)('on the real server', () => {
  backendConformance('the S3 backend on RADOS Gateway', () => openOn(`s3://${BUCKET}/conformance-${randomBytes(6).toString('hex')}`), { slow: true });
});

async function failure(promise: Promise<unknown>): Promise<CheckpointError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  if (!isCheckpointError(error)) throw new Error(`expected a CheckpointError, got ${String(error)}`);
  return error;
}

/** A server that answers like S3 but does what a broken or busy one does. */
async function fakeServer(answer: (request: http.IncomingMessage, body: Buffer, response: http.ServerResponse) => void): Promise<{ endpoint: string; close(): Promise<void> }> {
  const fake = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => answer(request, Buffer.concat(chunks), response));
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const { port } = fake.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    // Requests left unanswered on purpose are cut, or close would wait for them.
    close: () => new Promise((resolve) => {
      fake.close(() => resolve());
      fake.closeAllConnections();
    }),
  };
}

describe('the S3 backend', () => {
  it.skipIf(S3_SKIPPED !== undefined)('names the bucket and prefix it works in, and keeps apart what two prefixes hold', async () => {
    const a = await openOn(`s3://${BUCKET}/apart-a-${randomBytes(4).toString('hex')}`);
    const b = await openOn(`s3://${BUCKET}/apart-b-${randomBytes(4).toString('hex')}/`);
    expect(a.location).toMatch(/^s3:\/\/turnback-test\/apart-a-[0-9a-f]+\/$/);
    await a.create('objects/x', Buffer.from('in a'));
    expect(await b.get('objects/x')).toBeUndefined();
    expect(await b.create('objects/x', Buffer.from('in b'))).toBe('created');
    expect((await a.get('objects/x'))?.toString()).toBe('in a');
  });

  it.skipIf(S3_SKIPPED !== undefined)('two machines pushing and pruning one prefix of the bucket at once: no manifest ever names a bundle that is gone', async () => {
    await twoMachinesPushingAndPruning(await tempFolder('turnback-s3-prune-'), await openOn(`s3://${BUCKET}/machines-${randomBytes(4).toString('hex')}`), 3000);
  });

  it('bad locations are INVALID_CONFIG', () => {
    for (const bad of ['', 'file:///tmp/x', 's3://', 's3://UPPER', 's3://ab', 's3://bucket..x', 's3://bucket/a//b', 's3://bucket/../x', 7]) {
      let error: unknown;
      try {
        parseS3Location(bad);
      } catch (e) {
        error = e;
      }
      expect(isCheckpointError(error, 'INVALID_CONFIG'), String(bad)).toBe(true);
    }
    expect(parseS3Location('s3://my.bucket-1/deep/prefix')).toEqual({ bucket: 'my.bucket-1', prefix: 'deep/prefix/' });
  });

  it.skipIf(S3_SKIPPED !== undefined)('an unreachable endpoint, wrong credentials and a bucket that does not exist are typed errors', async () => {
    const unreachable = await failure(S3Backend.open({ location: `s3://${BUCKET}`, endpoint: 'http://127.0.0.1:1', forcePathStyle: true, credentials: server.credentials, connectTimeoutMs: 1000 }));
    expect([unreachable.code, unreachable.found]).toEqual(['REMOTE_UNAVAILABLE', 'unreachable']);
    const denied = await failure(openOn(`s3://${BUCKET}`, { credentials: { accessKeyId: 'nobody', secretAccessKey: 'wrong-secret' } }));
    expect([denied.code, denied.found]).toEqual(['REMOTE_REFUSED', 'denied']);
    const missing = await failure(openOn('s3://no-such-bucket-turnback'));
    expect([missing.code, missing.found]).toEqual(['REMOTE_REFUSED', 'no-bucket']);
  });

  it('refuses a server that does not enforce conditional writes', async () => {
    // Stores whatever it is sent, If-None-Match or not: two machines' creates would both land.
    const objects = new Map<string, Buffer>();
    const fake = await fakeServer((request, body, response) => {
      const key = (request.url ?? '').split('?')[0] ?? '';
      if (request.method === 'PUT') {
        objects.set(key, body);
        response.writeHead(200, { ETag: '"e"' }).end();
      } else if (request.method === 'GET' && objects.has(key)) {
        response.writeHead(200, { 'Content-Length': String(objects.get(key)?.length) }).end(objects.get(key));
      } else if (request.method === 'DELETE') {
        objects.delete(key);
        response.writeHead(204).end();
      } else if (request.method === 'HEAD') {
        response.writeHead(200).end();
      } else {
        response.writeHead(404, { 'Content-Type': 'application/xml' }).end('<Error><Code>NoSuchKey</Code></Error>');
      }
    });
    try {
      const error = await failure(S3Backend.open({ location: 's3://lenient', endpoint: fake.endpoint, forcePathStyle: true, credentials: FAKE_CREDENTIALS }));
      expect([error.code, error.found]).toEqual(['REMOTE_REFUSED', 'no-conditional-writes']);
      // The probe cleans up after itself.
      expect([...objects.keys()]).toEqual([]);
    } finally {
      await fake.close();
    }
  });

  it('a server that takes connections and never answers: the request fails at its deadline, three tries, then REMOTE_UNAVAILABLE naming it', async () => {
    let requests = 0;
    const fake = await fakeServer(() => {
      requests++;
    });
    try {
      const error = await failure(S3Backend.open({ location: 's3://silent', endpoint: fake.endpoint, forcePathStyle: true, credentials: FAKE_CREDENTIALS, requestTimeoutMs: 300 }));
      expect([error.code, error.found]).toEqual(['REMOTE_UNAVAILABLE', 'timeout']);
      expect(error.message).toContain('s3://silent');
      expect(requests).toBe(3);
    } finally {
      await fake.close();
    }
  });

  it('a server that goes quiet in the middle of a body: the read fails at the deadline instead of waiting on', async () => {
    // Enough of S3 for the backend to open (the bucket answers, conditional creates are enforced),
    // then a GET of anything it was not sent sends its headers and 10 of its 1,000 bytes, and nothing more.
    const objects = new Map<string, Buffer>();
    const fake = await fakeServer((request, body, response) => {
      const key = (request.url ?? '').split('?')[0] ?? '';
      if (request.method === 'HEAD') response.writeHead(200).end();
      else if (request.method === 'PUT' && request.headers['if-none-match'] === '*' && objects.has(key)) response.writeHead(412, { 'Content-Type': 'application/xml' }).end('<Error><Code>PreconditionFailed</Code></Error>');
      else if (request.method === 'PUT') {
        objects.set(key, body);
        response.writeHead(200, { ETag: '"e"' }).end();
      } else if (request.method === 'DELETE') {
        objects.delete(key);
        response.writeHead(204).end();
      } else if (request.method === 'GET' && objects.has(key)) {
        response.writeHead(200, { 'Content-Length': String(objects.get(key)?.length) }).end(objects.get(key));
      } else if (request.method === 'GET') {
        response.writeHead(200, { 'Content-Length': '1000' });
        response.write(Buffer.alloc(10, 1));
      } else response.writeHead(404).end();
    });
    try {
      const backend = await S3Backend.open({ location: 's3://quiet/p', endpoint: fake.endpoint, forcePathStyle: true, credentials: FAKE_CREDENTIALS, requestTimeoutMs: 300 });
      opened.push(backend);
      const error = await failure(backend.get('objects/aa'));
      expect(error.code).toBe('REMOTE_UNAVAILABLE');
      expect(error.message).toContain('objects/aa');
    } finally {
      await fake.close();
    }
  });

  it('a throttled request is REMOTE_UNAVAILABLE after the SDK retried it', async () => {
    let requests = 0;
    const fake = await fakeServer((_request, _body, response) => {
      requests++;
      response.writeHead(503, { 'Content-Type': 'application/xml' }).end('<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
    });
    try {
      const error = await failure(S3Backend.open({ location: 's3://busy', endpoint: fake.endpoint, forcePathStyle: true, credentials: FAKE_CREDENTIALS }));
      expect([error.code, error.found]).toEqual(['REMOTE_UNAVAILABLE', 'throttled']);
      expect(requests).toBeGreaterThan(1);
    } finally {
      await fake.close();
    }
  });
});
