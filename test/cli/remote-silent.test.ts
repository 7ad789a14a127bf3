import { readdirSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { remoteRepos, secondMachine } from './remote-repos.js';

// An S3 endpoint that accepts connections and never answers (issue #31: `push` and `pull` hung
// past 90 s, the SDK only warning). No S3 server is needed: a socket that takes connections and
// says nothing is the whole endpoint. Held: each command ends by its own deadline and retry budget
// (request_timeout_seconds = 1, three tries), exits 1 naming the request that timed out, and a
// pull adds nothing to the local store. No test here waits on a timer: a command that hangs is
// the failure.

/** A server that takes every connection and never sends a byte; `close` drops them. */
async function silentServer(): Promise<{ endpoint: string; connections: () => number; close(): void }> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    connections: () => connections,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

const FAKE_AWS = { AWS_ACCESS_KEY_ID: 'silent', AWS_SECRET_ACCESS_KEY: 'silent-secret', AWS_REGION: 'us-east-1' };
const { configure, tbAsync } = remoteRepos(() => {
  throw new Error('these tests use no S3 server');
}, 'silent-bucket');

describe('an S3 endpoint that takes connections and never answers', () => {
  it('push and pull each stop at their deadline, exit 1 naming the request, and a pull adds nothing', async () => {
    const silent = await silentServer();
    try {
      const a = await cliRepo({ 'a.txt': 'a\n' });
      Object.assign(a.env, FAKE_AWS);
      expect(a.tb(['run', '--', 'sh', '-c', 'echo b > a.txt']).code).toBe(0);
      const b = await secondMachine(a, FAKE_AWS);
      for (const repo of [a, b]) await configure(repo, 'never', silent.endpoint, 'request_timeout_seconds = 1\n');

      const pushed = await tbAsync(a, ['push']);
      expect(pushed.code, pushed.stderr).toBe(1);
      expect(pushed.stderr).toMatch(/s3:\/\/silent-bucket\/never/);
      expect(pushed.stderr).toMatch(/timed out|timeout/);

      const pulled = await tbAsync(b, ['pull']);
      expect(pulled.code, pulled.stderr).toBe(1);
      expect(pulled.stderr).toMatch(/s3:\/\/silent-bucket\/never/);
      expect(pulled.stderr).toMatch(/timed out|timeout/);
      expect((JSON.parse(b.tb(['list', '--json', '--all']).stdout) as { checkpoints: unknown[] }).checkpoints).toEqual([]);
      // Every try reached the server: the deadline, not a refused connection, ended each command.
      expect(silent.connections()).toBeGreaterThanOrEqual(2);
      const stores = path.join(b.home, 'data', 'turnback');
      for (const store of readdirSync(stores)) expect(readdirSync(path.join(stores, store, 'tmp')).filter((name) => !name.startsWith('.'))).toEqual([]);
    } finally {
      silent.close();
    }
  });
});
