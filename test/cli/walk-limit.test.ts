import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { fire, installedCommands, sh } from './hook-play.js';

// Issue #28: no limit cuts a picture silently. A walk stopped at its entry limit says how much it
// left — in run's list and in status, never "nothing left out" — and the files git tracks under
// the folders it left are statted from the index, so a dirty one is pictured all the same.

const FOLDERS = 16;
const PER_FOLDER = 6;

function trackedTree(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let d = 0; d < FOLDERS; d++) for (let f = 0; f < PER_FOLDER; f++) files[`pkg/d${String(d).padStart(2, '0')}/f${f}.txt`] = `committed ${d}/${f}\n`;
  return files;
}

describe('a walk stopped at its entry limit (max_walk_entries lowered to 30 on a 96-file tree)', () => {
  it('run and status say how many folders were not walked and that the tracked files there are pictured; dirty tracked files there come back byte for byte', async () => {
    const repo = await cliRepo(trackedTree());
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_walk_entries = 30\n');
    // One uncommitted edit in every folder: whichever folders the walk leaves, some are dirty.
    const dirty: Record<string, string> = {};
    for (let d = 0; d < FOLDERS; d++) dirty[`pkg/d${String(d).padStart(2, '0')}/f3.txt`] = `uncommitted ${d}\n`;
    for (const [name, text] of Object.entries(dirty)) await writeFile(path.join(repo.proj, name), text);

    const run = repo.tb(['run', '--', 'rm', ...Object.keys(dirty)]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/the walk reached its entry limit \(30 entries\)|\d+ folders? not walked: untracked files in (it|them) not pictured \(the \d+ files git tracks there are\)/);
    // The pictures before and after rm both stopped at the limit: the note says it once.
    expect(run.stderr.match(/not walked/g), run.stderr).toHaveLength(1);
    for (const name of Object.keys(dirty)) expect(existsSync(path.join(repo.proj, name))).toBe(false);

    const status = repo.tb(['status']).stdout;
    expect(status).not.toContain('nothing left out');
    expect(status).toMatch(/coverage: [\d,]+ files pictured; left out: .*\d+ folders? not walked: untracked files in (it|them) not pictured \(the \d+ files git tracks there are\) \(max_walk_entries\)/);
    expect(status).toMatch(/⚠ last picture cut short: the walk reached its entry limit \(30 entries\); .*\(max_walk_entries in turnback.toml raises the limit\)/);
    const json = JSON.parse(repo.tb(['status', '--json']).stdout) as { coverage: { files: number; left?: { reason: string; folders: number; trackedPictured: number } } };
    expect(json.coverage.left?.reason).toBe('walk-entries');
    expect(json.coverage.left?.folders).toBeGreaterThan(0);
    expect(json.coverage.left?.trackedPictured).toBeGreaterThan(0);
    // Every tracked file is pictured, walked or not, and turnback.toml with them.
    expect(json.coverage.files).toBe(FOLDERS * PER_FOLDER + 1);

    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    for (const [name, text] of Object.entries(dirty)) expect(await readFile(path.join(repo.proj, name), 'utf8')).toBe(text);
  });

  it("the hook's turn line says the picture was cut short and how much it left", async () => {
    const repo = await cliRepo(trackedTree());
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_walk_entries = 30\n');
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const env = { CLAUDE_PROJECT_DIR: repo.proj };
    const common = { session_id: '28a0c0de-2828-4828-8828-28e5f1a2b3c4', transcript_path: path.join(repo.home, 't.jsonl'), cwd: repo.proj, permission_mode: 'default' };
    expect(fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'edit' }, env).code).toBe(0);
    sh(repo, 'echo edited > pkg/d00/f0.txt');
    const stop = fire(repo, commands.Stop, { ...common, hook_event_name: 'Stop', stop_hook_active: false }, env);
    expect(stop.code).toBe(0);
    expect(JSON.parse(stop.stdout)).toEqual({
      systemMessage: expect.stringMatching(/^turnback: 1 changed \(picture cut short: the walk reached its entry limit \(30 entries\); \d+ folders? not walked: untracked files in (it|them) not pictured \(the \d+ files git tracks there are\)\) · turnback undo /),
    });
  });
});
