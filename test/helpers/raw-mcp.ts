import { spawn, type ChildProcess } from 'node:child_process';

// `turnback mcp` driven line by line over its stdin, for the messages an SDK client never sends
// (too large, not JSON, wrong types): answers are matched by id, events only, no timer.

/** A `turnback mcp` driven line by line, for what the SDK's client would never send. */
export interface RawMcp {
  child: ChildProcess;
  stderr(): string;
  /** Writes one line (a message, or anything else). */
  write(line: string): void;
  /** The answer to request `id`, when it comes (the process ending first fails the wait). */
  answer(id: string | number): Promise<Record<string, unknown>>;
  /** Every answer that came with no id. */
  idless(): Record<string, unknown>[];
  /** The `n`-th answer with no id (from 1), when it comes. */
  idlessAnswer(n: number): Promise<Record<string, unknown>>;
  /** Sends the handshake and waits for its answer. */
  initialize(): Promise<void>;
}

/** Starts `node CLI mcp` in `cwd`; {@link stopRawMcps} ends it. */
export function rawMcp(cli: string, cwd: string, env: NodeJS.ProcessEnv): RawMcp {
  const child = spawn(process.execPath, ['--no-warnings', cli, 'mcp'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let pending = '';
  const answers = new Map<string, Record<string, unknown>>();
  const idless: Record<string, unknown>[] = [];
  const waiting = new Map<string, (answer: Record<string, unknown>) => void>();
  let ended: string | undefined;
  const failures = new Set<(reason: Error) => void>();
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => {
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      const message = JSON.parse(line) as Record<string, unknown>;
      if (message.id === undefined) {
        idless.push(message);
        waiting.get(`idless ${idless.length}`)?.(message);
        continue;
      }
      const key = JSON.stringify(message.id);
      answers.set(key, message);
      waiting.get(key)?.(message);
    }
  });
  child.once('exit', (code, signal) => {
    ended = `turnback mcp ended (code ${String(code)}, signal ${String(signal)}); stderr: ${stderr}`;
    for (const fail of failures) fail(new Error(ended));
  });
  child.stdin.on('error', () => undefined);
  const wait = (key: string, have: Record<string, unknown> | undefined): Promise<Record<string, unknown>> => {
    if (have !== undefined) return Promise.resolve(have);
    if (ended !== undefined) return Promise.reject(new Error(ended));
    return new Promise((resolve, reject) => {
      failures.add(reject);
      waiting.set(key, (answer) => {
        failures.delete(reject);
        resolve(answer);
      });
    });
  };
  const raw: RawMcp = {
    child,
    stderr: () => stderr,
    write: (line) => void child.stdin.write(`${line}\n`),
    idless: () => idless,
    idlessAnswer: (n) => wait(`idless ${n}`, idless[n - 1]),
    answer: (id) => wait(JSON.stringify(id), answers.get(JSON.stringify(id))),
    async initialize() {
      raw.write(JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }));
      await raw.answer('init');
      raw.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    },
  };
  raws.push(raw);
  return raw;
}

const raws: RawMcp[] = [];

/** Ends every `turnback mcp` {@link rawMcp} started and waits for each to exit. */
export async function stopRawMcps(): Promise<void> {
  for (const raw of raws.splice(0)) {
    if (raw.child.exitCode !== null || raw.child.signalCode !== null) continue;
    const gone = new Promise((resolve) => raw.child.once('exit', resolve));
    raw.child.kill();
    await gone;
  }
}

