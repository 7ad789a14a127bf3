import { afterEach, describe, it } from 'vitest';
import { CLI, cliRepo } from '../cli/harness.js';
import { rawMcp, stopRawMcps, type RawMcp } from '../helpers/raw-mcp.js';
import { Tally, trials } from './campaign.js';

// Hostile MCP messages on one `turnback mcp`'s stdin, in a seeded order and seeded variants: a
// line over the 10 MiB bound (written in seeded pieces), params that are not an object, params
// of the wrong types, unknown methods, ids that are no JSON-RPC id, lines that are not JSON,
// batches. Held: each is answered with the JSON-RPC error its kind calls for (or, a tool's own
// input, an isError result naming -32602), and a ping right after is answered: the server
// never ends.

const LIMIT = 10 * 1024 * 1024;
afterEach(stopRawMcps);

type Expect = { code: number } | { toolError: true };
interface Hostile {
  kind: string;
  /** The line, and what it must be answered with (by its id, or as the next id-less answer). */
  make(pick: <T>(values: readonly T[]) => T, id: number): { line: string; id?: number; expect: Expect };
}

const request = (id: unknown, method: string, params?: unknown): string => JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });

const HOSTILE: Hostile[] = [
  {
    kind: 'huge',
    make: (pick, id) => {
      const size = LIMIT + pick([1, 4096, 1024 * 1024, 3 * 1024 * 1024]);
      return { line: `{"jsonrpc":"2.0","id":${id},"method":"${pick(['tools/list', 'tools/call', 'ping'])}","params":{"pad":"${'x'.repeat(size)}"}}`, id, expect: { code: -32600 } };
    },
  },
  { kind: 'params not an object', make: (pick, id) => ({ line: request(id, pick(['tools/list', 'tools/call', 'ping', 'initialize']), pick(['x', 42, ['a'], null, true, ''])), id, expect: { code: -32602 } }) },
  {
    kind: 'wrong types',
    make: (pick, id) =>
      pick([
        { line: request(id, 'tools/call', { name: pick([5, null, ['undo_savepoint'], {}]) }), id, expect: { code: -32602 } },
        { line: request(id, 'tools/call', { name: 'undo_savepoint', arguments: pick(['save', 7, [1]]) }), id, expect: { code: -32602 } },
        { line: request(id, 'tools/list', { cursor: pick([5, {}, true]) }), id, expect: { code: -32602 } },
        { line: request(id, 'tools/call', { name: pick(['undo_savepoint', 'diff_checkpoint', 'restore_checkpoint']), arguments: pick([{ action: 'wipe' }, { id: 5 }, { id: 'x'.repeat(65), confirm: 'yes' }]) }), id, expect: { toolError: true } },
      ]),
  },
  { kind: 'unknown method', make: (pick, id) => ({ line: request(id, pick(['nope', 'tools/nope', 'resources/list', '', '\u001b[31m']), {}), id, expect: { code: -32601 } }) },
  { kind: 'bad id', make: (pick) => ({ line: request(pick([null, {}, [1], 1.5, true]), 'tools/list', {}), expect: { code: -32600 } }) },
  { kind: 'not JSON', make: (pick) => ({ line: pick(['{', 'not json', '{"jsonrpc":"2.0","id":1,', '\u0000\u0001', '}{']), expect: { code: -32700 } }) },
  { kind: 'batch or scalar', make: (pick) => ({ line: pick(['[]', `[${request(1, 'ping')}]`, '42', '"ping"', 'null']), expect: { code: -32600 } }) },
];

async function answered(raw: RawMcp, hostile: ReturnType<Hostile['make']>, idlessSeen: number): Promise<number> {
  const answer = hostile.id !== undefined ? await raw.answer(hostile.id) : await raw.idlessAnswer(idlessSeen + 1);
  if ('code' in hostile.expect) {
    const error = answer.error as { code?: unknown; message?: unknown } | undefined;
    if (error?.code !== hostile.expect.code) throw new Error(`answered ${JSON.stringify(answer).slice(0, 300)}, expected error ${hostile.expect.code}`);
    if (typeof error.message !== 'string' || error.message === '') throw new Error('an error without a message');
  } else {
    const result = answer.result as { isError?: boolean; content?: { text?: string }[] } | undefined;
    if (result?.isError !== true || !/-32602|"code":"[A-Z_]+"/.test(result.content?.[0]?.text ?? '')) throw new Error(`answered ${JSON.stringify(answer).slice(0, 300)}, expected a typed tool error`);
  }
  return hostile.id === undefined ? idlessSeen + 1 : idlessSeen;
}

describe('fault campaign: hostile MCP messages', () => {
  it('every hostile message gets a typed JSON-RPC error and the server serves on', async () => {
    const tally = new Tally('hostile MCP messages', 2701);
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const raw = rawMcp(CLI, repo.proj, repo.env);
    await raw.initialize();
    const pick = <T,>(values: readonly T[]): T => values[Math.floor(tally.random.next() * values.length)] as T;
    let nextId = 100;
    let idlessSeen = 0;
    for (let round = 0; round < trials(6, 1); round++) {
      const order = HOSTILE.map((hostile) => ({ hostile, key: tally.random.next() })).sort((a, b) => a.key - b.key);
      for (const { hostile } of order) {
        const id = nextId++;
        const message = hostile.make(pick, id);
        await tally.trial(`${hostile.kind}: ${message.line.slice(0, 80)}`, async () => {
          // A line is written in seeded pieces, as a pipe may deliver it.
          let at = 0;
          while (at < message.line.length) {
            const piece = Math.max(1, Math.floor(tally.random.next() * Math.min(message.line.length, 4 * 1024 * 1024)));
            raw.child.stdin?.write(message.line.slice(at, at + piece));
            at += piece;
          }
          raw.write('');
          idlessSeen = await answered(raw, message, idlessSeen);
          const ping = nextId++;
          raw.write(request(ping, 'ping'));
          const pong = await raw.answer(ping);
          if (typeof pong.result !== 'object') throw new Error(`the ping after was answered ${JSON.stringify(pong)}`);
          if (raw.child.exitCode !== null) throw new Error('the server ended');
        });
      }
    }
    tally.note = `${idlessSeen} answered without an id`;
    tally.finish();
  });
});
