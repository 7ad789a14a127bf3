import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import { agentRuns, type AgentDriver } from './harness.js';
import { provesTheSession } from './scenario.js';

// Gemini CLI 0.61.0 (test/agents/package.json), offline: `gemini -p PROMPT --yolo` against our
// Gemini API server (GOOGLE_GEMINI_BASE_URL, read for the `gemini-api-key` auth type, which the
// user settings select: the `gateway` type the base URL alone picks is refused by its
// validateAuthMethod), the second turn with `--resume latest` (the same session).
//
// Gemini ignores an untrusted folder's settings, hooks included, and overrides --yolo there
// (checkPathTrust: ~/.gemini/trustedFolders.json, or GEMINI_CLI_TRUST_WORKSPACE=true): the
// person trusts the project once, as prepare does here.
const gemini: AgentDriver = {
  agent: 'gemini',
  format: 'gemini',
  fixture: 'gemini.json',
  settingsFolder: '.gemini',
  callIds: 'agent',
  async prepare(project) {
    const folder = path.join(project.home, '.gemini');
    await mkdir(folder, { recursive: true });
    await writeFile(path.join(folder, 'settings.json'), `${JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } })}\n`);
    await writeFile(path.join(folder, 'trustedFolders.json'), `${JSON.stringify({ [project.proj]: 'TRUST_FOLDER' })}\n`);
  },
  command: (_project, server, prompt, turn) => ({
    args: ['-p', prompt, ...(turn > 1 ? ['--resume', 'latest'] : []), '--yolo'],
    env: { GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_API_KEY: 'turnback-test-key' },
  }),
};

describe.runIf(agentRuns('gemini'))('Gemini CLI, the real binary', () => {
  it('a two-turn session: hooks fire, the shell call owns its changes, undo and redo are exact, uninstall is clean', { timeout: 600_000 }, async () => {
    await provesTheSession(gemini);
  });
});
