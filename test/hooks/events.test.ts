import { describe, expect, it } from 'vitest';
import { AGENTS } from '../../src/hooks/agents.js';
import { pairingKey, parseHookEvent, patchPaths, promptLabel } from '../../src/hooks/events.js';
import { isCheckpointError } from '../../src/core/errors.js';

// Reading each agent's hook payload (pure), against the shapes their documentation gives.

describe('reading hook payloads', () => {
  it('Claude Code: a write tool names its file; Bash is a shell; Read is read-only; an MCP tool reaches the network', () => {
    const claude = AGENTS.claude;
    const write = parseHookEvent(claude, 'PreToolUse', JSON.stringify({ session_id: 's', cwd: '/p', tool_name: 'Edit', tool_input: { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' }, tool_use_id: 'toolu_1' }), '/x');
    expect(write).toMatchObject({ kind: 'before-tool', session: 's', toolCallId: 'toolu_1', toolClass: 'write', paths: ['/p/src/a.ts'] });
    expect(parseHookEvent(claude, 'PreToolUse', JSON.stringify({ session_id: 's', tool_name: 'Bash', tool_input: { command: 'make' } }), '/x')).toMatchObject({ toolClass: 'shell', command: 'make' });
    expect(parseHookEvent(claude, 'PreToolUse', JSON.stringify({ session_id: 's', tool_name: 'Read', tool_input: { file_path: '/p/a' } }), '/x').toolClass).toBe('read-only');
    expect(parseHookEvent(claude, 'PostToolUse', JSON.stringify({ session_id: 's', tool_name: 'mcp__fs__write', tool_input: {} }), '/x').toolClass).toBe('network');
    // A web tool reaches the network too: its call is listed as irreversible.
    expect(parseHookEvent(claude, 'PreToolUse', JSON.stringify({ session_id: 's', tool_name: 'WebFetch', tool_input: { url: 'https://example.com' } }), '/x').toolClass).toBe('network');
    expect(parseHookEvent(claude, 'NotebookEdit' in claude.events ? 'x' : 'PreToolUse', JSON.stringify({ session_id: 's', tool_name: 'NotebookEdit', tool_input: { notebook_path: '/p/n.ipynb' } }), '/x').paths).toEqual(['/p/n.ipynb']);
    expect(parseHookEvent(claude, 'UserPromptSubmit', JSON.stringify({ session_id: 's', prompt: 'hi' }), '/x')).toMatchObject({ kind: 'prompt', prompt: 'hi' });
  });

  it('Codex apply_patch: every file the patch adds, updates, deletes or moves to', () => {
    const patch = '*** Begin Patch\n*** Update File: src/a.ts\n@@\n-x\n+y\n*** Move to: src/b.ts\n*** Add File: new.md\n+hi\n*** Delete File: old.txt\n*** End Patch\n';
    expect(patchPaths(patch)).toEqual(['src/a.ts', 'src/b.ts', 'new.md', 'old.txt']);
    const event = parseHookEvent(AGENTS.codex, 'PreToolUse', JSON.stringify({ session_id: 's', turn_id: 't', cwd: '/p', tool_name: 'apply_patch', tool_input: { command: patch }, tool_use_id: 'c1' }), '/x');
    expect(event).toMatchObject({ toolClass: 'write', paths: ['/p/src/a.ts', '/p/src/b.ts', '/p/new.md', '/p/old.txt'] });
    expect(event.command).toBeUndefined();
  });

  it('agents without a tool-call id pair a before and an after event by the same key', () => {
    const before = parseHookEvent(AGENTS.gemini, 'BeforeTool', JSON.stringify({ session_id: 's', tool_name: 'run_shell_command', tool_input: { command: 'ls' } }), '/x');
    const after = parseHookEvent(AGENTS.gemini, 'AfterTool', JSON.stringify({ session_id: 's', tool_name: 'run_shell_command', tool_input: { command: 'ls' }, tool_response: { llmContent: 'a' } }), '/x');
    expect(before.toolCallId).toBeUndefined();
    expect(pairingKey(before)).toBe(pairingKey(after));
    const cursorBefore = parseHookEvent(AGENTS.cursor, 'beforeShellExecution', JSON.stringify({ conversation_id: 'c', generation_id: 'g', command: 'npm test', cwd: '/p' }), '/x');
    const cursorAfter = parseHookEvent(AGENTS.cursor, 'afterShellExecution', JSON.stringify({ conversation_id: 'c', generation_id: 'g', command: 'npm test', output: 'ok', duration: 3 }), '/x');
    expect(cursorBefore).toMatchObject({ session: 'c', toolName: 'shell', command: 'npm test', toolClass: 'shell' });
    expect(pairingKey(cursorBefore)).toBe(pairingKey(cursorAfter));
  });

  it('Copilot CLI: toolArgs as a JSON string', () => {
    const event = parseHookEvent(AGENTS.copilot, 'preToolUse', JSON.stringify({ sessionId: 'q', cwd: '/p', toolName: 'edit', toolArgs: JSON.stringify({ path: '/p/a.ts', old_str: 'a', new_str: 'b' }) }), '/x');
    expect(event).toMatchObject({ session: 'q', toolClass: 'write', paths: ['/p/a.ts'] });
  });

  // Copilot CLI 1.0.102, as the harness saw it (test/agents/copilot.test.ts): function tools'
  // toolArgs are an object; the freeform apply_patch's are the patch text itself.
  it('Copilot CLI: apply_patch names only the files its patch text names, relative ones against the cwd', () => {
    const patch = '*** Begin Patch\n*** Update File: src/keep.ts\n@@\n-export {};\n+export const patched = true;\n*** Add File: /p/new.txt\n+new\n*** Delete File: docs/old.md\n*** End Patch\n';
    for (const eventName of ['preToolUse', 'postToolUse']) {
      const event = parseHookEvent(AGENTS.copilot, eventName, JSON.stringify({ sessionId: 'q', timestamp: 1, cwd: '/p', toolName: 'apply_patch', toolArgs: patch }), '/x');
      expect(event).toMatchObject({ toolName: 'apply_patch', toolClass: 'write', paths: ['/p/src/keep.ts', '/p/new.txt', '/p/docs/old.md'], toolInput: { input: patch } });
      expect(event.command).toBeUndefined();
    }
    // The before and the after event pair by the same key (Copilot sends no call id).
    const key = (eventName: string): string => pairingKey(parseHookEvent(AGENTS.copilot, eventName, JSON.stringify({ sessionId: 'q', cwd: '/p', toolName: 'apply_patch', toolArgs: patch }), '/x'));
    expect(key('preToolUse')).toBe(key('postToolUse'));
  });

  it('Copilot CLI: create, edit and str_replace_editor name a path; toolArgs as an object; a failed tool ends its call', () => {
    const copilot = AGENTS.copilot;
    const create = parseHookEvent(copilot, 'preToolUse', JSON.stringify({ sessionId: 'q', cwd: '/p', toolName: 'create', toolArgs: { path: '/p/n.txt', file_text: 'n\n' } }), '/x');
    expect(create).toMatchObject({ toolClass: 'write', paths: ['/p/n.txt'] });
    const editor = parseHookEvent(copilot, 'preToolUse', JSON.stringify({ sessionId: 'q', cwd: '/p', toolName: 'str_replace_editor', toolArgs: { command: 'str_replace', path: '/p/a.ts', old_str: 'a', new_str: 'b' } }), '/x');
    expect(editor).toMatchObject({ toolClass: 'write', paths: ['/p/a.ts'] });
    const failed = parseHookEvent(copilot, 'postToolUseFailure', JSON.stringify({ sessionId: 'q', cwd: '/p', toolName: 'edit', toolArgs: { path: '/p/a.ts', old_str: 'a', new_str: 'b' }, error: 'ENOENT' }), '/x');
    expect(failed).toMatchObject({ kind: 'after-tool', toolClass: 'write', paths: ['/p/a.ts'] });
    for (const tool of ['view', 'rg', 'glob', 'read_bash', 'list_bash']) expect(parseHookEvent(copilot, 'preToolUse', JSON.stringify({ sessionId: 'q', toolName: tool, toolArgs: {} }), '/x').toolClass).toBe('read-only');
    expect(parseHookEvent(copilot, 'preToolUse', JSON.stringify({ sessionId: 'q', toolName: 'bash', toolArgs: { command: 'make', description: 'build' } }), '/x')).toMatchObject({ toolClass: 'shell', command: 'make' });
  });

  it('a freeform text input of a tool turnback does not know is the whole tree, its text kept as the input', () => {
    const event = parseHookEvent(AGENTS.copilot, 'preToolUse', JSON.stringify({ sessionId: 'q', toolName: 'some_freeform_tool', toolArgs: 'do the thing' }), '/x');
    expect(event).toMatchObject({ toolClass: 'shell', toolInput: { input: 'do the thing' } });
    expect(event.paths).toBeUndefined();
  });

  it('bad payloads are typed errors: not JSON, not an object, an unknown event, no tool name', () => {
    for (const [event, payload] of [
      ['PreToolUse', 'nope'],
      ['PreToolUse', '[]'],
      ['PreToolUse', 'null'],
      ['Bogus', '{}'],
      ['PreToolUse', '{"session_id":"s"}'],
    ] as const) {
      let caught: unknown;
      try {
        parseHookEvent(AGENTS.claude, event, payload, '/x');
      } catch (error) {
        caught = error;
      }
      expect(isCheckpointError(caught, 'INVALID_ARGUMENT')).toBe(true);
    }
  });

  it('a turn label is the prompt\'s first line, on one line, cut short', () => {
    expect(promptLabel('\n\n  rename the parser\nand more')).toBe('rename the parser');
    expect(promptLabel('tab\there\u0007bell')).toBe('tab here bell');
    expect(promptLabel('x'.repeat(80))).toHaveLength(60);
    expect(promptLabel('')).toBe('(empty prompt)');
  });
});
