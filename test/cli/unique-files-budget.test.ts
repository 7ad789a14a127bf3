import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { canMountSmallDisk, mountSmallDisk } from '../helpers/small-disk.js';
import { seededRandom, testSeed } from '../helpers/seed.js';
import { cliRepo, type CliRepo } from './harness.js';
import { fire, installedCommands, sh } from './hook-play.js';

// Issue #27: a file whose bytes exist nowhere else (modified tracked, untracked) is never left to
// the copy budget. It is copied past the budget, said in one line before the command runs; when it
// cannot be copied (the store is full), run refuses to start the command (exit 5).

const TRACKED = 40;
const BUDGET = 10;

function trackedFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < TRACKED; i++) files[`src/f${i}.txt`] = `committed ${i}\n`;
  return files;
}

/** Every tracked file edited (never committed) and as many untracked notes: four times the budget. */
async function dirtyTree(proj: string): Promise<Record<string, string>> {
  const dirty: Record<string, string> = {};
  for (let i = 0; i < TRACKED; i++) dirty[`src/f${i}.txt`] = `uncommitted edit ${i}\n${'y'.repeat(i * 13)}\n`;
  for (let i = 0; i < TRACKED; i++) dirty[`notes/n${i}.md`] = `untracked note ${i}\n`;
  await mkdir(path.join(proj, 'notes'), { recursive: true });
  for (const [name, text] of Object.entries(dirty)) await writeFile(path.join(proj, name), text);
  return dirty;
}

/** One Claude Code turn that runs `script` as a Bash tool, through the hooks install wrote; returns the Stop hook's output. */
async function hookedTurn(repo: CliRepo, script: string): Promise<string> {
  expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
  const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
  const env = { CLAUDE_PROJECT_DIR: repo.proj };
  const common = { session_id: '0b5e27a1-27aa-4c27-9d27-27e5f1a2b3c4', transcript_path: path.join(repo.home, 't.jsonl'), cwd: repo.proj, permission_mode: 'default' };
  const tool = { ...common, tool_name: 'Bash', tool_input: { command: script }, tool_use_id: 'toolu_27' };
  expect(fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'tidy up' }, env).code).toBe(0);
  expect(fire(repo, commands.PreToolUse, { ...tool, hook_event_name: 'PreToolUse' }, env).code).toBe(0);
  sh(repo, script);
  expect(fire(repo, commands.PostToolUse, { ...tool, hook_event_name: 'PostToolUse', tool_response: { success: true } }, env).code).toBe(0);
  const stop = fire(repo, commands.Stop, { ...common, hook_event_name: 'Stop', stop_hook_active: false }, env);
  expect(stop.code).toBe(0);
  return stop.stdout;
}

const unmounts: (() => void)[] = [];
afterEach(() => {
  for (const unmount of unmounts.splice(0)) unmount();
});

describe('files whose bytes exist nowhere else, past the copy budget', () => {
  it('are copied all the same: run says so in one line, and undo brings every deleted one back byte for byte', async () => {
    const repo = await cliRepo(trackedFiles());
    await writeFile(path.join(repo.proj, 'turnback.toml'), `[checkpoints]\nmax_picture_files = ${BUDGET}\n`);
    const dirty = await dirtyTree(repo.proj);
    const removed = Object.keys(dirty).filter((_, i) => i % 3 === 0);
    const run = repo.tb(['run', '--', 'rm', ...removed]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/turnback: \d+ files git does not hold copied past the copy budget \(10 files\): they have no other copy/);
    expect(run.stderr).not.toContain('no copy (picture budget)');
    expect(run.stderr).not.toContain('cut short');
    for (const name of removed) expect(existsSync(path.join(repo.proj, name))).toBe(false);

    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    for (const [name, text] of Object.entries(dirty)) expect(await readFile(path.join(repo.proj, name), 'utf8')).toBe(text);
  });

  it('in a hook they are copied too (a hook never refuses): undo brings every deleted one back byte for byte', async () => {
    const repo = await cliRepo(trackedFiles());
    await writeFile(path.join(repo.proj, 'turnback.toml'), `[checkpoints]\nmax_picture_files = ${BUDGET}\n`);
    const dirty = await dirtyTree(repo.proj);
    const removed = Object.keys(dirty).filter((_, i) => i % 2 === 1);
    const said = await hookedTurn(repo, `rm ${removed.join(' ')}`);
    expect(said).not.toContain('no copy');
    expect(said).not.toContain('cut short');
    for (const name of removed) expect(existsSync(path.join(repo.proj, name))).toBe(false);
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    for (const [name, text] of Object.entries(dirty)) expect(await readFile(path.join(repo.proj, name), 'utf8')).toBe(text);
  });

  it.skipIf(!canMountSmallDisk)('that cannot be copied (the store is full): run refuses to start the command, exit 5, in one line', async () => {
    const repo = await cliRepo(trackedFiles());
    const disk = mountSmallDisk(path.join(path.dirname(repo.proj), 'disk'), 2048);
    if (disk === undefined) throw new Error('cannot mount a tmpfs');
    unmounts.push(disk.unmount);
    const store = path.join(disk.dir, 'store');
    await writeFile(path.join(repo.proj, 'turnback.toml'), `[checkpoints]\nmax_picture_files = ${BUDGET}\n`);
    expect(repo.tb(['run', '--store', store, '--', 'true']).code).toBe(0);
    // Forty untracked files of 64 KiB that do not compress: 2.5 MiB on a 2 MiB disk. The budget's
    // ten would fit; all forty cannot.
    const random = seededRandom(testSeed(27));
    await mkdir(path.join(repo.proj, 'data'));
    for (let i = 0; i < 40; i++) await writeFile(path.join(repo.proj, 'data', `d${i}.bin`), Buffer.from(Array.from({ length: 64 * 1024 }, () => random.int(0, 255))));
    // The progress line at once: a failed picture must not say "picture taken" before "cannot take a picture".
    repo.env.TURNBACK_PROGRESS_AFTER_MS = '0';
    const refused = repo.tb(['run', '--store', store, '--', 'sh', '-c', 'rm -r data; touch ran']);
    expect(refused.stderr).toContain('taking a picture');
    expect(refused.stderr).not.toContain('picture taken');
    expect(refused.code, refused.stderr).toBe(5);
    expect(refused.stderr).toMatch(/^turnback: cannot take a picture: .*(full|no space left)/m);
    expect(refused.stderr).toContain('the command did not run');
    expect(existsSync(path.join(repo.proj, 'ran'))).toBe(false);
    expect(existsSync(path.join(repo.proj, 'data', 'd0.bin'))).toBe(true);
  });
});
