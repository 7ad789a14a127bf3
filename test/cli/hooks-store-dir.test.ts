import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// Issue #27: TURNBACK_DIR set to a folder that is not a store made every hook fail, and only the
// hook log said so. Now `hooks status` says it, and the agent's stderr hears it once.

describe('TURNBACK_DIR naming a folder that is not a store', () => {
  it('hooks status says so, and the first failing hook event says so on stderr (once)', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const notAStore = path.join(repo.home, 'documents');
    await mkdir(notAStore);
    await writeFile(path.join(notAStore, 'letter.txt'), 'dear…\n');
    repo.env.TURNBACK_DIR = notAStore;
    expect(repo.tb(['hooks', 'install', 'claude']).code).toBe(0);
    const event = (prompt: string) => repo.tb(['hook', 'claude', 'UserPromptSubmit'], { input: JSON.stringify({ session_id: 's1', hook_event_name: 'UserPromptSubmit', prompt, cwd: repo.proj }) });
    const first = event('one');
    expect(first.code).toBe(0);
    expect(first.stderr).toContain('is not a turnback store and not empty');
    expect(first.stderr).toContain('TURNBACK_DIR');
    const second = event('two');
    expect(second.code).toBe(0);
    expect(second.stderr).toBe('');
    const status = repo.tb(['hooks', 'status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/⚠ .*documents \(TURNBACK_DIR\) is not a turnback store and not empty: every hook event fails/);
  });
});
