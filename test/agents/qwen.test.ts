import { describe, it } from 'vitest';
import { agentRuns, type AgentDriver } from './harness.js';
import { provesTheSession } from './scenario.js';

// Qwen Code 0.15.10 (test/agents/package.json), offline: `qwen -p PROMPT --yolo` against our
// chat-completions server (OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL together select its
// `openai` auth type: getAuthTypeFromEnv in packages/cli/src/config/auth.ts of its bundle), the
// second turn with `--continue` (the same session).
const qwen: AgentDriver = {
  agent: 'qwen',
  format: 'chat',
  fixture: 'qwen.json',
  settingsFolder: '.qwen',
  callIds: 'agent',
  command: (_project, server, prompt, turn) => ({
    args: ['-p', prompt, ...(turn > 1 ? ['--continue'] : []), '--yolo'],
    env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: 'sk-turnback-test', OPENAI_MODEL: 'test-model' },
  }),
};

describe.runIf(agentRuns('qwen'))('Qwen Code, the real binary', () => {
  // Before the fix: install wrote Claude Code's `"timeout": 30` and Qwen, reading milliseconds,
  // killed every hook after 30 ms (no event ever reached turnback); and its empty-prompt
  // UserPromptSubmit after each tool result made one prompt four turns.
  it('a two-turn session: hooks fire, one prompt is one turn, undo and redo are exact, uninstall is clean', { timeout: 600_000 }, async () => {
    await provesTheSession(qwen);
  });
});
