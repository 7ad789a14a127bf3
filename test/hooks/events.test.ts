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
