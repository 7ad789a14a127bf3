import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { expect } from 'vitest';
import type { CliRepo } from './harness.js';

// Playing an agent for the hook tests: the commands `turnback hooks install` wrote, run as the
// agent runs them (through a shell, the payload on stdin), and the tools' real effects.

/** A JSON object. */
export type Json = Record<string, unknown>;

/** The commands install wrote into `file`, by event (turnback's only). */
export async function installedCommands(file: string): Promise<Record<string, string>> {
  const settings = JSON.parse(await readFile(file, 'utf8')) as { hooks: Record<string, unknown[]> };
  const commands: Record<string, string> = {};
  for (const [event, list] of Object.entries(settings.hooks)) {
    for (const item of list as Json[]) {
      const entries = Array.isArray(item.hooks) ? (item.hooks as Json[]) : [item];
      for (const entry of entries) {
        const command = (entry.command ?? entry.bash) as string;
        if (/turnback(\.cjs'?)? hook /.test(command)) commands[event] = command;
      }
    }
  }
  return commands;
}

/** Plays one hook event as the agent does: its command through a shell, the payload on stdin. */
export function fire(repo: CliRepo, command: string | undefined, payload: unknown, env: NodeJS.ProcessEnv = {}): { code: number | null; stdout: string; stderr: string } {
  expect(command).toBeDefined();
  const result = spawnSync('sh', ['-c', command as string], { cwd: repo.proj, env: { ...repo.env, ...env }, input: typeof payload === 'string' ? payload : JSON.stringify(payload), encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A tool's real effect: a shell command in the project. */
export function sh(repo: CliRepo, script: string): void {
  const result = spawnSync('sh', ['-c', script], { cwd: repo.proj, env: repo.env, encoding: 'utf8' });
  expect(result.status).toBe(0);
}

export async function hookLog(repo: CliRepo): Promise<{ ok: boolean; event: string; error?: string; action?: string }[]> {
  const folder = path.join(repo.home, 'data', 'turnback');
  const logs = fs.readdirSync(folder).filter((name) => name.endsWith('.hooks.log'));
  expect(logs).toHaveLength(1);
  return (await readFile(path.join(folder, logs[0] as string), 'utf8'))
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as { ok: boolean; event: string; error?: string; action?: string });
}

