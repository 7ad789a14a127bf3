import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import * as net from 'node:net';
import { afterAll, describe, it } from 'vitest';
import { cliRepo, type CliRepo } from '../cli/harness.js';
import { feedHook, fireSplit, PIPE_PAST_BUFFER } from '../cli/hook-stdin.js';
import { PROTOCOL_VERSION } from '../../src/server/address.js';
import { Tally, trials } from './campaign.js';

// What a hook waits on, attacked (#27, #29): a command server that freezes at each step of the
// exchange, a stdin that is never closed (empty, half a payload, a whole one, far too much), and
// payloads in seeded pieces. Held: the hook exits 0 with nothing on stdout or stderr, within the
// budget it promises (max_picture_seconds, set small here: a property of the hook's deadlines,
// not of the machine's speed), and the event is either recorded or logged as a gap — never lost
// in silence. Each class reports the longest hook it saw.

/** The budget the campaign's projects configure (seconds). */
const BUDGET_SECONDS = 6;

const repos: CliRepo[] = [];
afterAll(() => {
  for (const repo of repos) repo.tb(['server', 'stop']);
});

async function budgetedRepo(): Promise<{ repo: CliRepo; log: string; socket: string }> {
  const repo = await cliRepo({ 'a.txt': 'a\n', 'turnback.toml': `[checkpoints]\nmax_picture_seconds = ${BUDGET_SECONDS}\n` });
  repos.push(repo);
  const log = (JSON.parse(repo.tb(['hooks', 'status', '--json']).stdout) as { log: string }).log;
  const socket = (JSON.parse(repo.tb(['server', '--json']).stdout) as { socket: string }).socket;
  return { repo, log, socket };
}

async function logLines(log: string): Promise<{ ok: boolean; error?: string; session?: string }[]> {
  try {
    return (await readFile(log, 'utf8'))
      .trim()
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as { ok: boolean; error?: string; session?: string });
  } catch {
    return [];
  }
}

function prompt(repo: CliRepo, session: string): string {
  return JSON.stringify({ session_id: session, cwd: repo.proj, hook_event_name: 'UserPromptSubmit', prompt: `prompt of ${session}` });
}

/** Records the hook's time, and fails the trial when it is not an exit 0 in silence within the budget. */
function heldWithin(end: { code: number | null; ms: number; stdout: string; stderr: string }, longest: { ms: number }): void {
  longest.ms = Math.max(longest.ms, end.ms);
  if (end.code !== 0) throw new Error(`exit ${String(end.code)}: ${end.stderr.slice(0, 300)}`);
  if (end.stdout !== '' || end.stderr !== '') throw new Error(`printed ${JSON.stringify(end.stdout + end.stderr).slice(0, 300)}`);
  if (end.ms > BUDGET_SECONDS * 1000) throw new Error(`took ${end.ms} ms, past its ${BUDGET_SECONDS} s budget`);
}

/** The event of `session` is in the log: recorded (`ok`) or a gap (with its reason). */
async function logged(log: string, session: string, ok: boolean, before: number): Promise<void> {
  const lines = (await logLines(log)).slice(before);
  const mine = lines.filter((l) => (ok ? l.ok && l.session === session : !l.ok));
  if (mine.length !== 1) throw new Error(`expected one ${ok ? 'recorded event' : 'gap'}, the log has ${JSON.stringify(lines).slice(0, 400)}`);
}

const FROZEN = ['no hello', 'hello, then silence', 'taken, then silence', 'accepted, then silence'] as const;

describe('fault campaign: what a hook waits on', () => {
  it('a frozen command server', async () => {
    const tally = new Tally('hook: frozen server', 2701);
    const { repo, log, socket } = await budgetedRepo();
    let mode: (typeof FROZEN)[number] = 'no hello';
    const frozen = net.createServer((connection) => {
      connection.on('error', () => undefined);
      if (mode === 'no hello') return;
      connection.write(`${JSON.stringify({ t: 'hello', protocol: PROTOCOL_VERSION, pid: process.pid })}\n`);
      let text = '';
      connection.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk;
        if (!text.includes('\n') || mode === 'hello, then silence') return;
        const request = JSON.parse(text.slice(0, text.indexOf('\n'))) as { startedAt: number };
        connection.write(`${JSON.stringify({ t: 'taken' })}\n`);
        // As a real server would: the deadline is the hook's start plus the project's budget.
        if (mode === 'accepted, then silence') connection.write(`${JSON.stringify({ t: 'accepted', deadline: request.startedAt + BUDGET_SECONDS * 1000, log })}\n`);
      });
    });
    await new Promise<void>((resolve) => frozen.listen(socket, resolve));
    const longest = { ms: 0 };
    try {
      for (let i = 0; i < trials(40, 4); i++) {
        mode = FROZEN[i % FROZEN.length] as (typeof FROZEN)[number];
        const session = `frozen-${i}`;
        await tally.trial(`${mode} (${session})`, async () => {
          const before = (await logLines(log)).length;
          const hook = await feedHook(repo, 'claude', 'UserPromptSubmit');
          await hook.write(prompt(repo, session));
          await hook.end();
          heldWithin(await hook.exited, longest);
          // Only a server that took the hook (and may have begun it) leaves a gap; otherwise the hook ran in-process.
          await logged(log, session, mode !== 'accepted, then silence', before);
        });
      }
    } finally {
      frozen.close();
    }
    tally.note = `longest hook ${longest.ms} ms of its ${BUDGET_SECONDS} s budget`;
    tally.finish();
  });

  it('a stdin never closed', async () => {
    const tally = new Tally('hook: unclosed stdin', 2702);
    const { repo, log } = await budgetedRepo();
    if (repo.tb(['server', 'start']).code !== 0) throw new Error('the server did not start');
    const kinds = ['nothing', 'half a payload', 'a whole payload', 'far over the limit'] as const;
    const longest = { ms: 0 };
    for (let i = 0; i < trials(40, 4); i++) {
      const kind = kinds[i % kinds.length] as (typeof kinds)[number];
      const served = tally.random.next() < 0.5;
      const session = `open-${i}`;
      await tally.trial(`${kind}, ${served ? 'served' : 'in-process'} (${session})`, async () => {
        const before = (await logLines(log)).length;
        const hook = await feedHook(repo, 'claude', 'UserPromptSubmit', served ? {} : { TURNBACK_SERVER: 'off' });
        const text = prompt(repo, session);
        if (kind === 'half a payload') await hook.write(text.slice(0, tally.random.int(1, text.length - 1)));
        if (kind === 'a whole payload') await hook.write(text);
        // The hook stops reading at the limit: this write then fails, as the agent's would.
        if (kind === 'far over the limit') void hook.write(Buffer.concat([Buffer.from('{"prompt": "'), Buffer.alloc(24 * 1024 * 1024, 0x62)])).catch(() => undefined);
        heldWithin(await hook.exited, longest);
        await logged(log, session, kind === 'a whole payload', before);
      });
    }
    tally.note = `longest hook ${longest.ms} ms of its ${BUDGET_SECONDS} s budget`;
    tally.finish();
  });

  it('payloads in pieces', async () => {
    const tally = new Tally('hook: split and slow payloads', 2703);
    const { repo, log } = await budgetedRepo();
    if (repo.tb(['server', 'start']).code !== 0) throw new Error('the server did not start');
    const longest = { ms: 0 };
    for (let i = 0; i < trials(40, 4); i++) {
      const served = tally.random.next() < 0.5;
      const pieces = tally.random.int(2, 6);
      const session = `split-${i}`;
      await tally.trial(`${pieces} pieces, ${served ? 'served' : 'in-process'} (${session})`, async () => {
        const before = (await logLines(log)).length;
        const text = prompt(repo, session);
        const cuts = Array.from({ length: pieces - 1 }, () => tally.random.int(1, text.length - 1)).sort((a, b) => a - b);
        const hook = await feedHook(repo, 'claude', 'UserPromptSubmit', served ? {} : { TURNBACK_SERVER: 'off' });
        let from = 0;
        for (const cut of [...cuts, text.length]) {
          // A piece and, where JSON allows blanks (before the next piece's token), a pad past the
          // pipe's buffer: the next write starts only once the hook has read this one.
          const piece = text.slice(from, cut);
          const blank = /[{,:[]$/.test(piece) && cut < text.length;
          await hook.write(blank ? `${piece}${' '.repeat(PIPE_PAST_BUFFER)}` : piece);
          from = cut;
        }
        if (tally.random.next() < 0.5) await hook.end();
        heldWithin(await hook.exited, longest);
        await logged(log, session, true, before);
      });
    }
    tally.note = `longest hook ${longest.ms} ms of its ${BUDGET_SECONDS} s budget`;
    tally.finish();
  });

  it('parallel tool calls', async () => {
    const tally = new Tally('hook: parallel tool calls', 2704);
    const { repo, log } = await budgetedRepo();
    if (repo.tb(['server', 'start']).code !== 0) throw new Error('the server did not start');
    const calls = trials(24, 4);
    const turns = trials(3, 1);
    const common = { session_id: 'parallel', cwd: repo.proj };
    const longest = { ms: 0 };
    for (let turn = 0; turn < turns; turn++) {
      await fireSplit(repo, 'claude', 'UserPromptSubmit', { ...common, hook_event_name: 'UserPromptSubmit', prompt: `turn ${turn}` });
      const batch = Array.from({ length: calls }, (_, i) => ({ id: `toolu_${turn}_${i}`, file: `p${turn}_${i}.txt` }));
      for (const c of batch) await writeFile(path.join(repo.proj, c.file), `before ${c.id}\n`);
      const payload = (c: (typeof batch)[number], event: string) => ({ ...common, hook_event_name: event, tool_name: 'Bash', tool_input: { command: `echo after > ${c.file}` }, tool_use_id: c.id });
      const pre = await Promise.all(batch.map((c) => fireSplit(repo, 'claude', 'PreToolUse', payload(c, 'PreToolUse'))));
      for (const c of batch) await writeFile(path.join(repo.proj, c.file), `after ${c.id}\n`);
      const post = await Promise.all(batch.map((c) => fireSplit(repo, 'claude', 'PostToolUse', { ...payload(c, 'PostToolUse'), tool_response: {} })));
      await fireSplit(repo, 'claude', 'Stop', { ...common, hook_event_name: 'Stop', stop_hook_active: false });
      for (const [i, c] of batch.entries()) {
        await tally.trial(`${c.id} is pictured`, async () => {
          for (const end of [pre[i], post[i]]) if (end !== undefined) longest.ms = Math.max(longest.ms, end.ms);
          if (pre[i]?.code !== 0 || post[i]?.code !== 0) throw new Error(`a hook exited ${String(pre[i]?.code)} / ${String(post[i]?.code)}`);
          // All the calls were open while each file changed: undo --call takes it back when forced (issue #26).
          const dry = repo.tb(['undo', '--call', c.id, '--force', c.file, '--dry-run']);
          if (dry.code !== 0 || !`${dry.stdout}${dry.stderr}`.includes(c.file)) throw new Error(`undo --call finds no picture (${String(dry.code)}): ${dry.stderr.slice(0, 300)}`);
        });
      }
    }
    await tally.trial('no event of them is a gap', async () => {
      const gaps = (await logLines(log)).filter((l) => !l.ok);
      if (gaps.length > 0) throw new Error(`${gaps.length} gaps: ${JSON.stringify(gaps.slice(0, 3))}`);
    });
    tally.note = `${calls} calls x ${turns} turns (${turns * (2 * calls + 2)} hook processes), longest hook ${longest.ms} ms`;
    tally.finish();
  });
});
