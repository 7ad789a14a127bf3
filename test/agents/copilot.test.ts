import { describe, expect, it } from 'vitest';
import { agentRuns, hookLogLines, listed, startSession, treePicture, type AgentDriver } from './harness.js';
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

// With a GPT-5 model over the Responses API (COPILOT_PROVIDER_WIRE_API=responses, which its help
// advises for GPT-5 models), Copilot offers `apply_patch` in place of `create` and `edit`: a
// freeform tool whose input is the patch text, sent to the hooks as `toolArgs` as it is.
const copilotPatch: AgentDriver = {
  ...copilot,
  format: 'responses',
  fixture: 'copilot-patch.json',
  command: (project, server, prompt, turn) => {
    const { args, env } = copilot.command(project, server, prompt, turn);
    return { args, env: { ...env, COPILOT_PROVIDER_WIRE_API: 'responses', COPILOT_MODEL: 'gpt-5.1-codex' } };
  },
};

describe.runIf(agentRuns('copilot'))('GitHub Copilot CLI, the real binary (offline mode)', () => {
  it('a two-turn session: hooks fire, the shell call owns its changes, undo and redo are exact, uninstall is clean', { timeout: 600_000 }, async () => {
    await provesTheSession(copilot);
  });

  // Issue #26 point 8: turnback did not know apply_patch, so each patch was two whole-project
  // pictures and a row without a file name.
  it('apply_patch pictures only the files its patch names, its row names them, and its undo is exact', { timeout: 600_000 }, async () => {
    const session = await startSession(copilotPatch);
    const { project, server } = session;
    try {
      const skip = ['.github'];
      const start = await treePicture(project.proj, skip);
      await session.prompt(1, 'edit with apply_patch, then the shell');
      const offered = ((server.requests.find((r) => (r.body as { tools?: unknown[] }).tools !== undefined)?.body as { tools: { type: string; name?: string }[] }).tools ?? []).map((t) => `${t.type}:${t.name ?? ''}`);
      expect(offered).toContain('custom:apply_patch');
      const after = await treePicture(project.proj, skip);
      const said = JSON.stringify(server.requests.at(-1)?.body).slice(-3000);
      expect(after['existing.txt'], said).toBe(`file 644 ${Buffer.from('new line\nkept line\n').toString('base64')}`);
      expect(after['new.txt'], said).toBe(`file 644 ${Buffer.from('a new file\n').toString('base64')}`);
      expect(after['docs/sub/b.md'], said).toBeUndefined();
      expect(after['other.txt'], said).toBe(`file 755 ${Buffer.from('alpha\nBETA\n').toString('base64')}`);

      // The patch was a call of its three files; the shell's was the one whole-tree call.
      const log = await hookLogLines(project);
      const trail = JSON.stringify(log, null, 1);
      expect(log.filter((l) => !l.ok), trail).toEqual([]);
      const began = log.map((l) => /^call (\S+) began: (.+)$/.exec(l.action ?? '')).filter((m) => m !== null);
      expect(began.map((m) => m[2]), trail).toEqual(['3 named file(s)', 'whole tree']);
      expect((began[0] as RegExpExecArray)[1], trail).toMatch(/^apply_patch#/);

      // Its row names its files, and shows exactly its changes.
      const rows = listed(project);
      const row = rows.find((r) => r.agent?.role === 'call' && / apply_patch /.test(` ${r.label ?? ''}`));
      expect(row?.label, JSON.stringify(rows, null, 1)).toBe('before apply_patch existing.txt new.txt docs/sub/b.md');
      const shown = project.tb(['show', row?.id as string, '--json']);
      expect(shown.code, shown.stderr).toBe(0);
      expect((JSON.parse(shown.stdout) as { changes: { path: string; kind: string }[] }).changes.map((c) => `${c.kind} ${c.path}`).sort()).toEqual(['changed existing.txt', 'created new.txt', 'deleted docs/sub/b.md']);

      // Copilot sends no call id: the person takes the call back by its row's short id, as
      // `turnback list` shows it. Its three files alone, byte, mode and folder exact; the shell's
      // edit stays.
      const undo = project.tb(['revert', row?.shortId as string, '--yes', '--delete-created']);
      expect(undo.code, `${undo.stdout}${undo.stderr}`).toBe(0);
      expect(await treePicture(project.proj, skip)).toEqual({ ...start, 'other.txt': after['other.txt'] });
    } finally {
      await session.close();
    }
  });
});
