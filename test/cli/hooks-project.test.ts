import * as fs from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openObserver, openStore } from '../../src/admin.js';
import { cliRepo, type CliRepo } from './harness.js';
import { fire, hookLog, installedCommands, sh } from './hook-play.js';
import { tempFolder } from '../helpers/temp.js';

// What a hook takes as its project, and what it answers elsewhere (issue #27): a folder that is
// no project is answered at once and touches nothing; a folder that cannot be used is a typed
// failure in the hook log; the pictures of one event share one budget.

/** The store folders under the repo's data folder (one per project that took pictures). */
function stores(repo: CliRepo): string[] {
  const folder = path.join(repo.home, 'data', 'turnback');
  return fs.existsSync(folder) ? fs.readdirSync(folder).filter((name) => !name.endsWith('.log') && name !== 'hook-installs') : [];
}

async function claudeRepo(): Promise<{ repo: CliRepo; commands: Record<string, string> }> {
  const repo = await cliRepo({ 'a.txt': 'a\n' });
  expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
  return { repo, commands: await installedCommands(path.join(repo.proj, '.claude', 'settings.json')) };
}

const prompt = (cwd: string): Record<string, unknown> => ({ session_id: 's1', cwd, hook_event_name: 'UserPromptSubmit', prompt: 'go' });

describe('what a hook takes as its project', () => {
  it.each(['/etc', '/usr', '/proc'])('a cwd at %s (a system folder, no project) creates no store and pictures nothing', async (folder) => {
    const { repo, commands } = await claudeRepo();
    const before = stores(repo);
    for (const event of ['UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop'] as const) {
      const payload = event === 'UserPromptSubmit' ? prompt(folder) : { session_id: 's1', cwd: folder, hook_event_name: event, tool_name: 'Bash', tool_input: { command: 'true' }, tool_use_id: 't1' };
      const r = fire(repo, commands[event], payload);
      expect([r.code, r.stdout, r.stderr]).toEqual([0, '', '']);
    }
    expect(stores(repo)).toEqual(before);
  });

  it('a folder outside git is a project only with a turnback.toml, a store or its own installed hooks', async () => {
    const { repo, commands } = await claudeRepo();
    const plain = path.join(await tempFolder('turnback-plain-'), 'notes');
    await mkdir(plain);
    await writeFile(path.join(plain, 'n.txt'), 'n\n');
    expect(fire(repo, commands.UserPromptSubmit, prompt(plain)).code).toBe(0);
    expect(stores(repo)).toEqual([]);
    // With a turnback.toml it is a project: the prompt begins a turn there.
    await writeFile(path.join(plain, 'turnback.toml'), '');
    expect(fire(repo, commands.UserPromptSubmit, prompt(plain)).code).toBe(0);
    expect(stores(repo)).toHaveLength(1);
    // Another folder with only the agent's own project hooks installed is one too.
    const hooked = path.join(await tempFolder('turnback-hooked-'), 'work');
    await mkdir(path.join(hooked, '.claude'), { recursive: true });
    await writeFile(path.join(hooked, '.claude', 'settings.json'), await readFile(path.join(repo.proj, '.claude', 'settings.json')));
    expect(fire(repo, commands.UserPromptSubmit, prompt(hooked)).code).toBe(0);
    expect(stores(repo)).toHaveLength(2);
  });

  it('a cwd that does not exist, or whose name is too long, is a typed failure in the hook log; the agent goes ahead', async () => {
    const { repo, commands } = await claudeRepo();
    // A first event in the project makes its store and log.
    expect(fire(repo, commands.UserPromptSubmit, prompt(repo.proj)).code).toBe(0);
    for (const cwd of [path.join(repo.home, 'no-such-folder'), path.join(repo.home, 'x'.repeat(300))]) {
      const r = fire(repo, commands.UserPromptSubmit, prompt(cwd));
      expect([r.code, r.stdout, r.stderr]).toEqual([0, '', '']);
    }
    const failures = (await hookLog(repo)).filter((line) => !line.ok) as { error?: string; code?: string }[];
    expect(failures.map((line) => line.code)).toEqual(['INVALID_PATH', 'INVALID_PATH']);
    expect(failures[0]?.error).toContain('is not a folder that exists');
    expect(failures[1]?.error).toContain('too long');
    expect(failures.map((line) => line.error).join('\n')).not.toMatch(/ENOENT|ENAMETOOLONG/);
  });

  it('a payload with no cwd works in the folder the agent ran the hook in', async () => {
    const { repo, commands } = await claudeRepo();
    expect(fire(repo, commands.UserPromptSubmit, { session_id: 's1', hook_event_name: 'UserPromptSubmit', prompt: 'no folder named' }).code).toBe(0);
    sh(repo, 'echo changed > a.txt');
    expect(fire(repo, commands.Stop, { session_id: 's1', hook_event_name: 'Stop', stop_hook_active: false }).code).toBe(0);
    expect((await hookLog(repo)).map((line) => [line.ok, line.action?.replace(/\(.*\)/, '()')])).toEqual([
      [true, 'turn 1 began ()'],
      [true, 'turn 1 ended: 1 changed'],
    ]);
  });
});

describe("one budget for a hook event's pictures", () => {
  it('an observer whose picture deadline has passed takes its whole-tree picture cut short by time, whatever its own budget', async () => {
    const root = await tempFolder('turnback-deadline-');
    const project = path.join(root, 'proj');
    await mkdir(path.join(project, 'src'), { recursive: true });
    for (let i = 0; i < 50; i++) await writeFile(path.join(project, 'src', `f${i}.txt`), `${i}\n`);
    const store = await openStore(path.join(root, 'store'), { projectRoot: project });
    const spent = openObserver(store, { sessionId: 'spent', pictureDeadline: Date.now() - 1 });
    const fresh = openObserver(store, { sessionId: 'fresh' });
    try {
      const cut = await spent.callBegin('c1', { detached: true });
      expect(cut.partial).toBe(true);
      expect(cut.summary).toMatch(/time limit/);
      expect((await fresh.callBegin('c2', { detached: true })).partial).toBe(false);
    } finally {
      await spent.close();
      await fresh.close();
      await store.close();
    }
  });
});
