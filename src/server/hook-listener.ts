import { timingSafeEqual } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { ProcessSeam } from './seam.js';
import { EndpointReader, ensureEndpoint, portRecord, readEndpoint, stateFolder, writeEndpoint, type HookEndpoint } from './hook-endpoint.js';
import { MAX_PAYLOAD_BYTES } from '../hooks/events.js';
import { isAgentName } from '../hooks/agents.js';

// Agents' HTTP hooks, served without a process (issue #28): Claude Code POSTs a hook's JSON — the
// payload a command hook reads on stdin — to http://127.0.0.1:PORT/hook/AGENT/EVENT, and the
// server runs `turnback hook AGENT EVENT` on it, the same command code a command hook's client
// relays, answering with what that command prints (the turn's `systemMessage`, else `{}`). Every
// request must carry the user's secret (hook-endpoint.ts) in `X-Turnback-Secret`: without it, with
// another, or with a body over the payload limit, the answer is a 4xx and nothing runs. The agent
// treats any failure as a non-blocking error, and the turn's events that are command hooks
// (the prompt, the stop) picture what a missed call changed.

/** The header that carries the secret. */
export const SECRET_HEADER = 'x-turnback-secret';

/** The path of a hook's URL: `/hook/AGENT/EVENT`. */
const HOOK_PATH = /^\/hook\/([a-z]{1,20})\/([A-Za-z]{1,40})$/;

/** How long a hook's body may stall before the request is answered 408 (a command hook's stdin gets the same). */
const BODY_QUIET_MS = 2000;

/** The path a newer server asks an older one to give up the port on. */
const RELEASE_PATH = '/turnback/release';

/** What the listener needs of the server: runs one command line, and keeps the server from leaving idle meanwhile. */
export interface HookListenerContext {
  execute(argv: readonly string[], seam: ProcessSeam): Promise<number>;
  /** The server is busy until the returned function is called. */
  busy(): () => void;
  /** Resolves once idle work holding what a command opens has stopped (bounded: see `ServerLife.idleWorkStopped`). */
  idleWorkStopped(): Promise<unknown>;
}

/** A running listener. */
export interface HookListener {
  port: number;
  close(): Promise<void>;
}

/** True when `given` is the secret (compared in constant time). */
function secretMatches(given: string | string[] | undefined, secret: string): boolean {
  if (typeof given !== 'string' || given.length !== secret.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(secret));
}

/** The request's body, or why not: over the limit, or stalled past the payload's deadline. */
function readBody(request: http.IncomingMessage): Promise<{ text: string } | { status: 408 | 413 }> {
  return new Promise((resolve) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > MAX_PAYLOAD_BYTES) {
      resolve({ status: 413 });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: { text: string } | { status: 408 | 413 }): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(result);
    };
    let timer = setTimeout(() => finish({ status: 408 }), BODY_QUIET_MS);
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PAYLOAD_BYTES) {
        finish({ status: 413 });
        return;
      }
      chunks.push(chunk);
      clearTimeout(timer);
      timer = setTimeout(() => finish({ status: 408 }), BODY_QUIET_MS);
    });
    request.on('end', () => finish({ text: Buffer.concat(chunks).toString('utf8') }));
    request.on('error', () => finish({ status: 408 }));
  });
}

function answer(response: http.ServerResponse, status: number, body: string): void {
  if (response.headersSent || response.destroyed) return;
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  response.end(body);
}

/**
 * Asks the server listening on `port` to give it up, with the secret: an older build's server
 * holding the recorded port hands it to the newer one. True when it said it did.
 */
function askRelease(port: number, secret: string): Promise<boolean> {
  return new Promise((resolve) => {
    const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: RELEASE_PATH, headers: { [SECRET_HEADER]: secret, 'content-length': 0 }, timeout: 1000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
    request.end();
  });
}

function listen(server: http.Server, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const onError = (): void => resolve(false);
    server.once('error', onError);
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      server.off('error', onError);
      resolve(true);
    });
  });
}

/**
 * Starts listening for hooks on 127.0.0.1: the recorded port when it is free (or its server, an
 * older one of this user, gives it up), else one the system picks, recorded for the next install.
 * `undefined` when the user's state folder cannot be made safe (no secret can be kept): then
 * there are no HTTP hooks, and command hooks still run.
 */
export async function startHookListener(context: HookListenerContext, socket: string, env: NodeJS.ProcessEnv = process.env): Promise<HookListener | undefined> {
  const folder = stateFolder(env);
  if (folder === undefined) return undefined;
  let endpoint: HookEndpoint = ensureEndpoint(folder);
  const endpoints = new EndpointReader(folder);
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((request, response) => void serve(request, response));
  // Hook requests are short; a connection kept open by an agent must not hold the server's end.
  server.keepAliveTimeout = 5000;

  const serve = async (request: http.IncomingMessage, response: http.ServerResponse): Promise<void> => {
    // The secret first: a request without it learns nothing, not even whether its path exists.
    // Checked against the file each time (an lstat; read again when it changed): a secret made
    // again by an install takes effect at once.
    const current = endpoints.read();
    if (current === undefined || !secretMatches(request.headers[SECRET_HEADER], current.secret)) {
      request.resume();
      answer(response, 401, '{}');
      return;
    }
    if (request.method !== 'POST') {
      request.resume();
      answer(response, 405, '{}');
      return;
    }
    if (request.url === RELEASE_PATH) {
      request.resume();
      answer(response, 200, '{}');
      rmSync(portRecord(socket), { force: true });
      server.close();
      return;
    }
    const route = HOOK_PATH.exec(request.url ?? '');
    if (route === null || !isAgentName(route[1])) {
      request.resume();
      answer(response, 404, '{}');
      return;
    }
    const startedAt = Date.now();
    const body = await readBody(request);
    if ('status' in body) {
      answer(response, body.status, '{}');
      // The rest of an oversized body is not read: the connection goes.
      response.once('finish', () => request.destroy());
      return;
    }
    const done = context.busy();
    open.add(response);
    let gone = false;
    const interrupts = new Set<(signal: NodeJS.Signals) => void>();
    response.once('close', () => {
      if (!response.writableFinished) {
        gone = true;
        for (const listener of [...interrupts]) listener('SIGHUP');
      }
    });
    let printed = '';
    let said = '';
    const seam: ProcessSeam = {
      // The hook takes its project from the payload's `cwd`; this folder pins nothing.
      cwd: '/',
      pid: process.pid,
      input: body.text,
      startedAt,
      accept: () => !gone,
      stdout: { write: (text) => void (printed += text), isTTY: false },
      stderr: { write: (text) => void (said += text), isTTY: false },
      onInterrupt(listener) {
        interrupts.add(listener);
        return () => interrupts.delete(listener);
      },
      runChild: () => Promise.reject(new Error('a hook starts no command')),
    };
    try {
      await context.idleWorkStopped();
      await context.execute(['node', 'turnback', 'hook', route[1] as string, route[2] as string], seam);
    } catch {
      // `turnback hook` never throws; if it did, the agent still goes ahead.
    } finally {
      done();
      open.delete(response);
    }
    const output = printed.trim();
    // What a command hook would say on stderr (a store that cannot be opened) reaches the person as the turn's message would.
    const message = output.length > 0 ? output : said.trim().length > 0 ? JSON.stringify({ systemMessage: said.trim() }) : '{}';
    answer(response, 200, message);
  };

  let listening = endpoint.port !== 0 && (await listen(server, endpoint.port));
  if (!listening && endpoint.port !== 0 && (await askRelease(endpoint.port, endpoint.secret))) listening = await listen(server, endpoint.port);
  if (!listening && !(await listen(server, 0))) return undefined;
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  if (port !== endpoint.port) {
    // Read again: an install may have made the secret meanwhile.
    endpoint = { ...(readEndpoint(folder) ?? endpoint), port };
    writeEndpoint(folder, endpoint);
  }
  try {
    writeFileSync(portRecord(socket), `${port}\n`, { mode: 0o600 });
  } catch {
    // Only `server status` reads it.
  }
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  return {
    port,
    close() {
      server.close();
      server.closeIdleConnections();
      rmSync(portRecord(socket), { force: true });
      return closed;
    },
  };
}
