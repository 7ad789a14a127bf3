import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { HookInput, Options, PostToolUseHookInput, PreToolUseHookInput, StopHookInput, UserPromptSubmitHookInput } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it } from 'vitest';
import { claudeAgentHooks } from '../../src/claude-agent-sdk.js';
import { CLI } from '../cli/harness.js';
import { listing, sandbox, writeTree } from '../session/helpers.js';

// turnback/claude-agent-sdk against the real package: the hooks option is typed as the SDK's own
// `Options['hooks']`, and each callback is called with inputs of the SDK's own hook input types,
// as `query()` calls them (a real query needs Claude Code and a model, which a test has not).

type Callback = (input: HookInput, toolUseID: string | undefined, options: { signal: AbortSignal }) => Promise<unknown>;

function callbackOf(hooks: NonNullable<Options['hooks']>, event: keyof NonNullable<Options['hooks']>): Callback {
  const callback = hooks[event]?.[0]?.hooks[0];
  expect(callback).toBeDefined();
  return callback as Callback;
}

describe('turnback/claude-agent-sdk', () => {
  it('is the SDK\'s hooks option; a prompt, a Bash call, a Write call and the stop picture the turn, which undo takes back', async () => {
    const { base, project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const start = await listing(project);
    const errors: unknown[] = [];
    // Type-checked against the real SDK: this line fails to compile if the shape drifts.
    const hooks: Options['hooks'] = claudeAgentHooks({ config: { capabilities: { checkpoint: { enabled: true, dir: storeDir } } }, env: { HOME: base }, onError: (error) => errors.push(error) });
    expect(Object.keys(hooks ?? {}).sort()).toEqual(['PostToolUse', 'PostToolUseFailure', 'PreToolUse', 'SessionEnd', 'Stop', 'UserPromptSubmit']);
    const h = hooks as NonNullable<Options['hooks']>;
    const signal = new AbortController().signal;
    const common = { session_id: 'sdk-session-1', transcript_path: path.join(base, 't.jsonl'), cwd: project };

    const prompt: UserPromptSubmitHookInput = { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'shout, then add a file' };
    expect(await callbackOf(h, 'UserPromptSubmit')(prompt, undefined, { signal })).toEqual({});

    const bash: PreToolUseHookInput = { ...common, hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: "sed -i 's/a/A/' a.txt" }, tool_use_id: 'toolu_01' };
    expect(await callbackOf(h, 'PreToolUse')(bash, 'toolu_01', { signal })).toEqual({});
    expect(spawnSync('sh', ['-c', "sed -i 's/a/A/' a.txt"], { cwd: project }).status).toBe(0);
    const bashDone: PostToolUseHookInput = { ...common, hook_event_name: 'PostToolUse', tool_name: 'Bash', tool_input: bash.tool_input, tool_response: { stdout: '' }, tool_use_id: 'toolu_01' };
    expect(await callbackOf(h, 'PostToolUse')(bashDone, 'toolu_01', { signal })).toEqual({});

    const write: PreToolUseHookInput = { ...common, hook_event_name: 'PreToolUse', tool_name: 'Write', tool_input: { file_path: path.join(project, 'new.txt'), content: 'new\n' }, tool_use_id: 'toolu_02' };
    await callbackOf(h, 'PreToolUse')(write, 'toolu_02', { signal });
    await writeFile(path.join(project, 'new.txt'), 'new\n');
    await callbackOf(h, 'PostToolUse')({ ...write, hook_event_name: 'PostToolUse', tool_response: {} } as PostToolUseHookInput, 'toolu_02', { signal });

    const stop: StopHookInput = { ...common, hook_event_name: 'Stop', stop_hook_active: false };
    const said = (await callbackOf(h, 'Stop')(stop, undefined, { signal })) as { systemMessage?: string };
    expect(said.systemMessage).toMatch(/^turnback: 1 changed, 1 new · turnback undo [0-9a-z]{8}$/);
    expect(errors).toEqual([]);

    // The program's turns are the command's: list groups them, undo takes the turn back.
    const env = { ...process.env, HOME: base, NO_COLOR: '1', TURNBACK_SERVER: 'off' };
    const list = spawnSync(process.execPath, [CLI, 'list', '--store', storeDir, '--project', project], { env, encoding: 'utf8' });
    expect(list.stdout).toContain('claude sdk-sess… · turn 1 "shout, then add a file"');
    const undo = spawnSync(process.execPath, [CLI, 'undo', '--yes', '--delete-created', '--store', storeDir, '--project', project], { env, encoding: 'utf8' });
    expect(undo.status).toBe(0);
    expect(await listing(project)).toEqual(start);
    expect(await readFile(path.join(project, 'a.txt'), 'utf8')).toBe('a\n');
  });

  it('never throws and never decides: a bad input and checkpoints off answer {} (the failure goes to onError)', async () => {
    const { base, project } = await sandbox();
    const errors: unknown[] = [];
    const on = claudeAgentHooks({ config: { capabilities: { checkpoint: { enabled: true, dir: path.join(base, 'store') } } }, env: { HOME: base }, onError: (error) => errors.push(error) }) as NonNullable<Options['hooks']>;
    const bad = { hook_event_name: 'PreToolUse', session_id: 's', transcript_path: '', cwd: project, tool_use_id: 'x' } as unknown as HookInput;
    expect(await callbackOf(on, 'PreToolUse')(bad, 'x', { signal: new AbortController().signal })).toEqual({});
    expect(errors).toHaveLength(1);
    const off = claudeAgentHooks({ config: {} }) as NonNullable<Options['hooks']>;
    const prompt: UserPromptSubmitHookInput = { session_id: 's', transcript_path: '', cwd: project, hook_event_name: 'UserPromptSubmit', prompt: 'x' };
    expect(await callbackOf(off, 'UserPromptSubmit')(prompt, undefined, { signal: new AbortController().signal })).toEqual({});
  });
});
