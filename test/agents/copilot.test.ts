import { describe, it } from 'vitest';
import { agentRuns, type AgentDriver } from './harness.js';
import { provesTheSession } from './scenario.js';

// GitHub Copilot CLI 1.0.102 (test/agents/package.json) in its offline mode: `copilot -p PROMPT
// --allow-all-tools` against our chat-completions server (COPILOT_OFFLINE=true,
// COPILOT_PROVIDER_BASE_URL, COPILOT_MODEL: `copilot help environment`), the second turn with
// `--continue` (the same session). Copilot loads a folder's hooks only once the folder is
// trusted: COPILOT_ALLOW_ALL=true (exactly "true") trusts the working directory, as its help
// says; the other truthy spellings only approve tools.
const copilot: AgentDriver = {
  agent: 'copilot',
  format: 'chat',
  fixture: 'copilot.json',
  settingsFolder: '.github',
  callIds: 'agent',
  command: (_project, server, prompt, turn) => ({
    args: ['-p', prompt, ...(turn > 1 ? ['--continue'] : []), '--allow-all-tools'],
    env: { COPILOT_OFFLINE: 'true', COPILOT_PROVIDER_BASE_URL: `${server.url}/v1`, COPILOT_PROVIDER_API_KEY: 'turnback-test-key', COPILOT_MODEL: 'gpt-4.1', COPILOT_ALLOW_ALL: 'true' },
  }),
};

describe.runIf(agentRuns('copilot'))('GitHub Copilot CLI, the real binary (offline mode)', () => {
  it('a two-turn session: hooks fire, the shell call owns its changes, undo and redo are exact, uninstall is clean', { timeout: 600_000 }, async () => {
    await provesTheSession(copilot);
  });
});
