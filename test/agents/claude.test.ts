import { describe, it } from 'vitest';
import { agentRuns, type AgentDriver } from './harness.js';
import { provesTheSession } from './scenario.js';

// Claude Code 2.1.197 (test/agents/package.json), offline: `claude -p PROMPT` against our
// Anthropic Messages server (ANTHROPIC_BASE_URL), the second turn with `--continue` (the same
// session). Every tool is allowed (`--dangerously-skip-permissions`, which a root user may pass
// only with IS_SANDBOX=1); no telemetry or update traffic.
const claude: AgentDriver = {
  agent: 'claude',
  format: 'anthropic',
  fixture: 'claude.json',
  settingsFolder: '.claude',
  callIds: 'model',
  command: (_project, server, prompt, turn) => ({
    args: ['-p', prompt, ...(turn > 1 ? ['--continue'] : []), '--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'],
    env: {
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_API_KEY: 'sk-ant-turnback-test',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      IS_SANDBOX: '1',
    },
  }),
};

describe.runIf(agentRuns('claude'))('Claude Code, the real binary', () => {
  it('a two-turn session: hooks fire, the shell call owns its changes, undo and redo are exact, uninstall is clean', { timeout: 600_000 }, async () => {
    await provesTheSession(claude);
  });
});
