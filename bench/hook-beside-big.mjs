// Issue #29, "a small hook waits behind a big one": one served hook event (a write tool's before
// event, its file only) while another client of the same server sends a 50 MB frame, against the
// same event alone, side by side in each round. Two kinds of big neighbour: a raw client writing
// one 50 MB request line to the server's socket as fast as it takes it (bench/big-frame-client.mjs;
// the small hook starts once its first MiB is in), and a hook process given a 50 MB payload on its
// stdin (the small hook starts once that payload is written). Goal: beside within 2× of alone.
import { spawn, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { fmtMs, fmtRatio, median } from './lib.mjs';
import { committedRepo, GAP_MS, timedProcess } from './processes.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIG_BYTES = 50 * 1024 * 1024;
/** Served hook events before the timed rounds: the server's JIT is warm by then. */
const WARM_CALLS = 8;

const pause = () => new Promise((resolve) => setTimeout(resolve, GAP_MS));

/** A child's end, as a promise: its exit code. */
const ended = (child) => new Promise((resolve) => child.once('close', (code) => resolve(code)));

/** Resolves when `child` prints `line` on stdout (or ends without it). */
function printed(child, line) {
  return new Promise((resolve) => {
    let text = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      text += chunk;
      if (text.includes(`${line}\n`)) resolve(true);
    });
    child.once('close', () => resolve(text.includes(`${line}\n`)));
  });
}

/**
 * @param {{ temp: { path(name: string): string }, row: (figure: string, value: string, goal?: string, status?: string) => void, notes: string[], quick: boolean, dist: string }} context
 */
export async function benchHookBesideBig({ temp, row, notes, quick, dist }) {
  const made = committedRepo(temp, 'hook-beside-big', 29);
  const { repo } = made;
  const env = { ...made.env, CLAUDE_PROJECT_DIR: repo };
  const cli = path.join(dist, 'cli', 'turnback.cjs');
  const node = process.execPath;
  const options = { cwd: repo, env };
  const payload = (event, extra) => JSON.stringify({ session_id: 'bench-session', cwd: repo, transcript_path: null, hook_event_name: event, ...extra });
  const target = path.join(repo, 'written-by-the-agent.txt');
  let calls = 0;
  const writeInput = () => ({ tool_name: 'Write', tool_input: { file_path: target, content: 'x\n' }, tool_use_id: `toolu_small_${++calls}` });

  /** The small hook, timed from spawn to exit; its call is ended afterwards, untimed. */
  const smallHook = async () => {
    const input = writeInput();
    const start = performance.now();
    const child = spawn(node, [cli, 'hook', 'claude', 'PreToolUse'], { ...options, stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.end(payload('PreToolUse', input));
    const code = await ended(child);
    const ms = performance.now() - start;
    if (code !== 0) throw new Error(`the small hook exited ${code}`);
    timedProcess(node, [cli, 'hook', 'claude', 'PostToolUse'], options, payload('PostToolUse', input));
    return ms;
  };

  timedProcess(node, [cli, 'run', '--', 'true'], { cwd: repo, env: { ...env, TURNBACK_SERVER: 'off' } });
  timedProcess(node, [cli, 'server', 'start'], options);
  const status = spawnSync(node, [cli, 'server', 'status', '--json'], { ...options, encoding: 'utf8' });
  const socket = JSON.parse(status.stdout).socket;
  if (typeof socket !== 'string') throw new Error(`no server socket: ${status.stdout}${status.stderr}`);
  timedProcess(node, [cli, 'hook', 'claude', 'UserPromptSubmit'], options, payload('UserPromptSubmit', { prompt: 'a small hook beside a big one' }));
  for (let i = 0; i < WARM_CALLS; i++) await smallHook();

  const times = { alone: [], besideFrame: [], besideHook: [], bigFrame: [], bigHook: [] };
  const rounds = quick ? 3 : 7;
  for (let round = 0; round < rounds; round++) {
    await pause();
    times.alone.push(await smallHook());

    await pause();
    const bigStart = performance.now();
    const sender = spawn(node, [path.join(HERE, 'big-frame-client.mjs'), socket, String(BIG_BYTES)], { cwd: repo, env, stdio: ['ignore', 'pipe', 'inherit'] });
    const senderEnd = ended(sender);
    if (!(await printed(sender, 'started'))) throw new Error('the big-frame client ended before it started sending');
    times.besideFrame.push(await smallHook());
    await senderEnd;
    times.bigFrame.push(performance.now() - bigStart);

    await pause();
    const hookStart = performance.now();
    const big = spawn(node, [cli, 'hook', 'claude', 'PreToolUse'], { ...options, stdio: ['pipe', 'ignore', 'ignore'] });
    const bigEnd = ended(big);
    const bigInput = writeInput();
    const text = payload('PreToolUse', { ...bigInput, tool_input: { ...bigInput.tool_input, content: 'x'.repeat(BIG_BYTES) } });
    // A hook that stops reading at its payload limit closes its stdin on the rest: not a failure.
    big.stdin.on('error', () => undefined);
    // Written (or refused past the limit): the big hook is reading, relaying or done with it now.
    await Promise.race([new Promise((resolve) => big.stdin.end(text, resolve)), bigEnd]);
    times.besideHook.push(await smallHook());
    await bigEnd;
    times.bigHook.push(performance.now() - hookStart);
    timedProcess(node, [cli, 'hook', 'claude', 'PostToolUse'], options, payload('PostToolUse', bigInput));
  }
  timedProcess(node, [cli, 'hook', 'claude', 'Stop'], options, payload('Stop', { stop_hook_active: false }));
  timedProcess(node, [cli, 'server', 'stop'], options);

  const m = Object.fromEntries(Object.entries(times).map(([name, values]) => [name, median(values)]));
  row('a small hook alone (a write tool\'s before event, served)', fmtMs(m.alone));
  const beside = (name, words) => {
    const ratio = m[name] / m.alone;
    row(`a small hook beside ${words} / alone`, `${fmtMs(m[name])} vs ${fmtMs(m.alone)}: ${fmtRatio(ratio)}`, '≤ 2×', ratio <= 2 ? 'PASS' : 'MISS');
  };
  beside('besideFrame', 'a client sending a 50 MB frame');
  beside('besideHook', 'a hook given a 50 MB payload');
  row('  the 50 MB frame\'s client, start to refusal', fmtMs(m.bigFrame));
  row('  the 50 MB payload\'s hook, start to exit', fmtMs(m.bigHook));
  notes.push(`hook-beside-big: ${rounds} rounds on a committed 10,000-file repository, served by a running server warmed with ${WARM_CALLS} calls, a turn open; each round times the small hook alone, beside a raw client writing a ${BIG_BYTES / 1024 / 1024} MiB request line to the socket (started once its first MiB is in), and beside a hook process given a ${BIG_BYTES / 1024 / 1024} MiB payload (started once the payload is written), ${GAP_MS} ms apart; medians.`);
}
