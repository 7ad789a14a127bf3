import { readdir, readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentProject, agentRuns, describeRun, hookLogLines, listed, loadScript, runAgent } from './harness.js';
import { startModelServer } from './model-server.js';

// Claude Code 2.1.197 with turnback's HTTP hooks (issue #28) when the server cannot be reached for
// some calls. One turn of four tool calls (fixtures/claude-missed.json): the first runs as usual;
// the second stops turnback's server from inside its command, so its PostToolUse cannot connect;
// the third runs with no server (its PreToolUse cannot connect) and starts one at its end, so
// its PostToolUse gets through; the fourth, a Write, is the first before event that gets through
// after the misses. Claude says each failure is a non-blocking error and runs every tool.
// Held: the agent is never blocked; the first event that gets through sweeps the whole tree; the
// turn's end names the two calls, each with the hook that did not arrive, and so do `list` and
// `show`; the turn's undo still brings back everything.

describe.runIf(agentRuns('claude'))('Claude Code, the real binary: HTTP hooks that do not get through', () => {
  it('a call whose hooks could not reach the server is named, one by one, by the turn\'s end, list and show; the next event that gets through sweeps; undo gives the tree back', { timeout: 600_000 }, async () => {
    const project = await agentProject('claude');
    const installed = project.tb(['hooks', 'install', 'claude']);
    expect(installed.code, installed.stderr).toBe(0);
    const script = await loadScript('claude-missed.json', project.proj);
    const server = await startModelServer('anthropic', script);
    try {
      const run = await runAgent('claude', ['-p', 'TB-TURN-1 four files', '--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'], {
        cwd: project.proj,
        env: { ...project.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-turnback-test', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', IS_SANDBOX: '1' },
        server,
      });
      const said = describeRun(run, server);
      // Never blocked: every tool ran and the turn ended.
      expect(run.code, said).toBe(0);
      for (const name of ['one', 'two', 'three', 'four']) expect(await readFile(path.join(project.proj, `${name}.txt`), 'utf8'), said).toBe(`${name}\n`);
      const ids = server.calls.map((call) => call.id);
      expect(ids, said).toHaveLength(4);
      const [, second, third, fourth] = ids as [string, string, string, string];

      // Claude's own record says which hooks failed (the comparison's input, read from its transcript).
      const projects = path.join(project.home, '.claude', 'projects');
      const transcripts = (await Promise.all((await readdir(projects)).map(async (folder) => (await readdir(path.join(projects, folder))).map((file) => path.join(projects, folder, file))))).flat();
      const transcript = (await Promise.all(transcripts.filter((file) => file.endsWith('.jsonl')).map((file) => readFile(file, 'utf8')))).join('\n');
      expect(transcript).toContain(`"hookEvent":"PostToolUse","stderr":"connect ECONNREFUSED`);
      expect(transcript).toMatch(new RegExp(`"toolUseID":"${third}","hookEvent":"PreToolUse"`));

      // The first before event that got through after the misses swept the whole tree (the Write's
      // own picture would be its file alone) and ended the call whose after event was missed. It
      // names what Claude's transcript held by then: Claude writes its lines a moment after the
      // events, and the third call's failed PreToolUse was not always in the file yet (seen).
      const log = await hookLogLines(project);
      const sweep = log.find((line) => line.event === 'PreToolUse' && (line.action ?? '').startsWith(`call ${fourth} began`));
      expect(sweep?.action, JSON.stringify(log, null, 1)).toMatch(new RegExp(`^call ${fourth} began: whole tree; swept the whole tree: [12] call\\(s\\) of this turn not pictured \\(${second}(, ${third})?\\), 1 ended here$`));
      // So the second call's picture ends there: it holds what the unpictured third call did, never the fourth's file.
      const secondRow = listed(project).find((row) => (row.label ?? '').includes('turnback server stop'));
      expect(secondRow, JSON.stringify(listed(project), null, 1)).toBeDefined();
      const secondChanges = (JSON.parse(project.tb(['show', (secondRow as { id: string }).id, '--json']).stdout) as { changes: { path: string; kind: string }[] }).changes.map((c) => `${c.kind} ${c.path}`).sort();
      expect(secondChanges).toEqual(['created three.txt', 'created two.txt']);
      // The turn's end names them.
      const stop = log.find((line) => line.event === 'Stop');
      expect(stop?.action, JSON.stringify(log, null, 1)).toContain(`not pictured: ${second}, ${third}`);

      // `list` names each under its turn, with the hook that did not arrive.
      const list = project.tb(['list']).stdout;
      const warned = list.split('\n').filter((line) => line.includes('⚠ not pictured: '));
      expect(warned, list).toEqual([
        expect.stringContaining(`not pictured: Bash: turnback server stop >/dev/null && echo two > two.txt (${second}): its PostToolUse hook did not reach turnback`),
        expect.stringContaining(`not pictured: Bash: echo three > three.txt && turnback server start >/dev/null (${third}): its PreToolUse hook did not reach turnback`),
      ]);
      // `show` of the turn says the same, as its notes.
      const boundary = listed(project).find((row) => row.agent?.role === 'boundary');
      expect(boundary).toBeDefined();
      const show = project.tb(['show', (boundary as { id: string }).id]).stdout;
      expect(show).toContain(`note: not pictured: Bash: turnback server stop`);
      expect(show).toContain(`(${third}): its PreToolUse hook did not reach turnback`);

      // Nothing is lost: the turn's undo takes back all four files.
      const undo = project.tb(['undo', (boundary as { id: string }).id, '--yes', '--delete-created']);
      expect(undo.code, `${undo.stdout}${undo.stderr}`).toBe(0);
      for (const name of ['one', 'two', 'three', 'four']) expect(await readFile(path.join(project.proj, `${name}.txt`), 'utf8').catch(() => undefined)).toBeUndefined();
    } finally {
      await server.close();
      project.tb(['server', 'stop']);
    }
  });
});
