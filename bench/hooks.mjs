// The agent-hook bench (issue #13): one hook process per event, as an agent starts it, on a
// committed 10,000-file repository, side by side with a fresh `node -e 0` (Node's start is the
// floor) and `git status --porcelain`. Each round plays one shell tool call (its before and
// after events: whole-tree pictures) and one write tool call (named files only), within a turn.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fmtMs, fmtRatio, median } from './lib.mjs';
import { committedRepo, GAP_MS, timedProcess } from './processes.mjs';

/** Served hook events before the timed rounds: the server's JIT is warm by then. */
const WARM_CALLS = 12;

const timed = timedProcess;

/**
 * @param {{ temp: { path(name: string): string }, row: (figure: string, value: string, goal?: string, status?: string) => void, notes: string[], quick: boolean, dist: string }} context
 */
export async function benchHooks({ temp, row, notes, quick, dist }) {
  const made = committedRepo(temp, 'hooks', 13);
  const { repo } = made;
  const env = { ...made.env, CLAUDE_PROJECT_DIR: repo };
  const cli = path.join(dist, 'cli', 'turnback.cjs');
  const options = { cwd: repo, env };
  const node = process.execPath;
  const common = { session_id: 'bench-session', cwd: repo, transcript_path: null };
  const hook = (event, payload) => timed(node, [cli, 'hook', 'claude', event], options, JSON.stringify({ ...common, hook_event_name: event, ...payload }));
  const target = path.join(repo, 'written-by-the-agent.txt');
  let calls = 0;
  const shellCall = () => {
    const id = `toolu_shell_${++calls}`;
    const input = { tool_name: 'Bash', tool_input: { command: 'true' }, tool_use_id: id };
    return { before: hook('PreToolUse', input), after: hook('PostToolUse', input) };
  };
  const writeCall = () => {
    const id = `toolu_write_${++calls}`;
    const input = { tool_name: 'Write', tool_input: { file_path: target, content: `${calls}\n` }, tool_use_id: id };
    const before = hook('PreToolUse', input);
    fs.writeFileSync(target, `${calls}\n`);
    return { before, after: hook('PostToolUse', input) };
  };
  // The store's first picture, the server (as the first hook of a day starts it), an open turn, and warm-up calls.
  timed(node, [cli, 'run', '--', 'true'], { cwd: repo, env: { ...env, TURNBACK_SERVER: 'off' } });
  timed(node, [cli, 'server', 'start'], options);
  hook('UserPromptSubmit', { prompt: 'benchmark the hooks' });
  for (let i = 0; i < WARM_CALLS / 2; i++) {
    shellCall();
    writeCall();
  }
  const times = { node: [], git: [], shellBefore: [], shellAfter: [], writeBefore: [], writeAfter: [] };
  const rounds = quick ? 5 : 11;
  for (let round = 0; round < rounds; round++) {
    times.node.push(timed(node, ['-e', '0'], options));
    times.git.push(timed('git', ['status', '--porcelain'], options));
    const shell = shellCall();
    times.shellBefore.push(shell.before);
    times.shellAfter.push(shell.after);
    const write = writeCall();
    times.writeBefore.push(write.before);
    times.writeAfter.push(write.after);
  }
  hook('Stop', { stop_hook_active: false });
  timed(node, [cli, 'server', 'stop'], options);
  const m = Object.fromEntries(Object.entries(times).map(([name, values]) => [name, median(values)]));
  const against = (name, words, goal) => {
    const ratio = m[name] / m.node;
    row(`hook process, ${words} (10,000-file repo) vs fresh \`node -e 0\``, `${fmtMs(m[name])} vs ${fmtMs(m.node)}: ${fmtRatio(ratio)}`, goal === undefined ? '—' : `≤ ${goal}×`, goal === undefined ? '' : ratio <= goal ? 'PASS' : 'MISS');
  };
  against('shellBefore', 'a shell tool\'s before event (whole tree)', 2);
  against('shellAfter', 'a shell tool\'s after event (whole tree)', 2);
  against('writeBefore', 'a write tool\'s before event (its file only)', 1.3);
  against('writeAfter', 'a write tool\'s after event (its file only)');
  row('  `git status --porcelain` in the same rounds', `${fmtMs(m.git)}; a shell before event is ${fmtRatio(m.shellBefore / m.git)} of it`);
  notes.push(`hooks: ${rounds} rounds of one Bash call and one Write call through the installed command's shape (\`turnback hook claude EVENT\`, the Claude Code payload on stdin), each process spawned ${GAP_MS} ms apart, medians; served by a running server warmed with ${WARM_CALLS} calls; a turn open throughout, as in an agent's session.`);
}
