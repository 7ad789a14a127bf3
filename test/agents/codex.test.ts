import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import { agentRuns, type AgentDriver } from './harness.js';
import { provesTheSession } from './scenario.js';

// Codex CLI 0.171.0 (test/agents/package.json), offline: `codex exec` against our OpenAI
// Responses server, a model provider of its own in the temporary CODEX_HOME's config.toml
// (`base_url`, `wire_api = "responses"`, `env_key`), the second turn with `exec resume --last`.
//
// Codex runs project hooks only once they are trusted: `codex exec` skips untrusted ones without
// a word. The trust is recorded per hook by a hash of its definition (`trusted_hash`, in the
// binary's hooks/src/engine), so this run passes `--dangerously-bypass-hook-trust`; the project
// itself is trusted in config.toml (`[projects."…"] trust_level = "trusted"`). With the
// fallback metadata of a model it does not know, Codex offers `exec_command` and no
// `apply_patch`: every step here is a shell call, and Codex's own policy refuses `rm -f`.
const codex: AgentDriver = {
  agent: 'codex',
  format: 'responses',
  fixture: 'codex.json',
  settingsFolder: '.codex',
  callIds: 'model',
  async prepare(project, server) {
    const home = path.join(project.home, '.codex');
    await mkdir(home, { recursive: true });
    const config = [
      'model = "gpt-5.1-codex"',
      'model_provider = "turnback"',
      '',
      '[model_providers.turnback]',
      'name = "turnback"',
      `base_url = "${server.url}/v1"`,
      'wire_api = "responses"',
      'env_key = "TURNBACK_TEST_KEY"',
      '',
      `[projects.${JSON.stringify(project.proj)}]`,
      'trust_level = "trusted"',
      '',
    ].join('\n');
    await writeFile(path.join(home, 'config.toml'), config);
  },
  command: (project, _server, prompt, turn) => ({
    args: ['exec', '--dangerously-bypass-approvals-and-sandbox', '--dangerously-bypass-hook-trust', ...(turn > 1 ? ['resume', '--last'] : []), prompt],
    env: { CODEX_HOME: path.join(project.home, '.codex'), TURNBACK_TEST_KEY: 'turnback-test-key' },
  }),
};

describe.runIf(agentRuns('codex'))('Codex CLI, the real binary', () => {
  it('a two-turn session: hooks fire, the shell call owns its changes, undo and redo are exact, uninstall is clean', { timeout: 600_000 }, async () => {
    await provesTheSession(codex);
  });
});
