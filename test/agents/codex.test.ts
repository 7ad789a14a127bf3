import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentRuns, hookLogLines, listed, startSession, treePicture, type AgentDriver } from './harness.js';
import { provesTheSession } from './scenario.js';

// Codex CLI 0.171.0 (test/agents/package.json), offline: `codex exec` against our OpenAI
// Responses server, a model provider of its own in the temporary CODEX_HOME's config.toml
// (`base_url`, `wire_api = "responses"`, `env_key`), the second turn with `exec resume --last`.
//
// Codex runs project hooks only once they are trusted: `codex exec` skips untrusted ones without
// a word. The trust is recorded per hook by a hash of its definition (`trusted_hash`, in the
// binary's hooks/src/engine), so this run passes `--dangerously-bypass-hook-trust`; the project
// itself is trusted in config.toml (`[projects."…"] trust_level = "trusted"`).
//
// The tools Codex offers come from the model's metadata. A model its bundled catalog does not
// know gets the fallback metadata, `apply_patch_tool_type: None` (model_info_from_slug,
// models-manager/src/model_info.rs), so no `apply_patch`; `[features] apply_patch_freeform` does
// not add it in this version. `model_catalog_json` replaces the catalog with a file of ours
// whose one model says `"apply_patch_tool_type": "freeform"`: then Codex offers `exec_command`,
// `write_stdin` and the freeform `apply_patch`, as it does for its own models (a missing
// `base_instructions` or `support_verbosity` is refused: "failed to parse model_catalog_json").
const MODEL = 'gpt-5.1-codex';

/** The one model of the catalog Codex reads instead of its own: ours, with `apply_patch`. */
const CATALOG = {
  models: [
    {
      slug: MODEL,
      display_name: MODEL,
      base_instructions: 'You are a scripted test model.',
      supported_reasoning_levels: [],
      shell_type: 'unified_exec',
      visibility: 'none',
      supported_in_api: true,
      priority: 99,
      apply_patch_tool_type: 'freeform',
      support_verbosity: false,
      truncation_policy: { mode: 'bytes', limit: 10_000 },
      supports_parallel_tool_calls: false,
      context_window: 272_000,
      experimental_supported_tools: [],
    },
  ],
};

const codex: AgentDriver = {
  agent: 'codex',
  format: 'responses',
  fixture: 'codex.json',
  settingsFolder: '.codex',
  callIds: 'model',
  async prepare(project, server) {
    const home = path.join(project.home, '.codex');
    await mkdir(home, { recursive: true });
    const catalog = path.join(home, 'catalog.json');
    await writeFile(catalog, `${JSON.stringify(CATALOG, null, 2)}\n`);
    const config = [
      `model = "${MODEL}"`,
      'model_provider = "turnback"',
      `model_catalog_json = ${JSON.stringify(catalog)}`,
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

  // Issue #26 point 2. The shell call edits existing.txt, then waits on its stdin: Codex hands
  // the call back to the model at its yield (`yield_time_ms`, 10 s by default, 1 s here) with
  // the process still running, and sends its PostToolUse only when the process ends. Meanwhile
  // the model patches src/keep.ts with `apply_patch`, then writes to the process's stdin
  // (`write_stdin`), which edits other.txt and ends. The patch lands inside the shell call's
  // window: before the windows were split at every event, `undo --call SHELL` wrote
  // src/keep.ts back too and wiped the patch.
  it("a shell call past Codex's yield while apply_patch lands: the shell's undo never takes back the patch, the patch's undo is exact", { timeout: 600_000 }, async () => {
    const session = await startSession({ ...codex, fixture: 'codex-overlap.json' });
    const { project, server } = session;
    try {
      const skip = ['.codex'];
      const start = await treePicture(project.proj, skip);
      const run = await session.prompt(1, 'edit with a long shell call while a patch lands');
      const after = await treePicture(project.proj, skip);
      const patched = `file 644 ${Buffer.from('export const patched = true;\n').toString('base64')}`;
      const said = JSON.stringify(server.requests.at(-1)?.body).slice(-3000);
      expect(after['existing.txt'], said).toBe(`file 644 ${Buffer.from('new line\nkept line\n').toString('base64')}`);
      expect(after['other.txt'], said).toBe(`file 755 ${Buffer.from('alpha\nBETA\n').toString('base64')}`);
      expect(after['src/keep.ts'], said).toBe(patched);

      const calls = server.calls.filter((c) => c.turn === 1);
      const shellId = calls.find((c) => c.tool === 'exec_command')?.id as string;
      const patchId = calls.find((c) => c.tool === 'apply_patch')?.id as string;
      const log = await hookLogLines(project);
      const trail = JSON.stringify(log, null, 1);
      expect(log.filter((l) => !l.ok), trail).toEqual([]);
      // The patch was a scoped call of its one file, and it ended while the shell call was open.
      const at = (pattern: RegExp): number => log.findIndex((l) => pattern.test(l.action ?? ''));
      expect(at(new RegExp(`^call ${patchId} began: 1 named file`)), trail).toBeGreaterThan(at(new RegExp(`^call ${shellId} began: whole tree`)));
      expect(at(new RegExp(`^call ${shellId} ended`)), trail).toBeGreaterThan(at(new RegExp(`^call ${patchId} ended`)));

      // `codex exec` shows a hook's run, never its message (the limit in CHECKPOINT-DESIGN.md):
      // the Stop hook had a line for the person (the turn changed files), and the turn is in
      // `turnback list`.
      expect(log.at(-1)?.action, trail).toMatch(/^turn 1 ended: 3 changed$/);
      expect(run.stderr).toContain('hook: Stop Completed');
      expect(`${run.stdout}${run.stderr}`).not.toContain('turnback:');
      expect(listed(project).some((r) => r.agent?.name === 'codex' && r.agent.role === 'boundary' && r.agent.turn === 1)).toBe(true);

      // The shell's undo takes back its own two files and leaves the patch's.
      const undoShell = project.tb(['undo', '--call', shellId, '--yes']);
      expect(undoShell.code, `${undoShell.stdout}${undoShell.stderr}`).toBe(0);
      expect(`${undoShell.stdout}${undoShell.stderr}`).not.toMatch(/(write back|written) +src\/keep\.ts/);
      const afterShellUndo = await treePicture(project.proj, skip);
      expect(afterShellUndo, `${undoShell.stdout}${undoShell.stderr}`).toEqual({ ...after, 'existing.txt': start['existing.txt'], 'other.txt': start['other.txt'] });

      // The patch's undo takes back its file alone, byte for byte: the tree is the start's.
      const undoPatch = project.tb(['undo', '--call', patchId, '--yes']);
      expect(undoPatch.code, `${undoPatch.stdout}${undoPatch.stderr}`).toBe(0);
      expect(await treePicture(project.proj, skip)).toEqual(start);
    } finally {
      await session.close();
    }
  });
});
