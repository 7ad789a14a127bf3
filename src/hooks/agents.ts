// The coding agents whose hook systems turnback installs into: one table row per agent, so adding
// an agent whose format is one of these with another path is a row, not a module. Each row is the
// agent's documented contract — the file its hooks live in, the events, the payload's fields —
// and what turnback does at each event. Details that could not be confirmed from the agent's own
// documentation or source are marked `unconfirmed` and named in CHECKPOINT-DESIGN.md.

/** The agents `turnback hooks install` knows. */
export type AgentName = 'claude' | 'codex' | 'gemini' | 'qwen' | 'cursor' | 'copilot';

/** What an agent's event means to turnback. */
export type HookKind = 'prompt' | 'before-tool' | 'after-tool' | 'stop' | 'session-end';

/**
 * How an agent's configuration file holds hooks:
 * - `matcher-groups`: `hooks.<Event>` is a list of `{matcher?, hooks: [{type: 'command', command, timeout}]}`
 *   (Claude Code, and Codex, Gemini CLI and Qwen Code, which took its shape);
 * - `flat`: `hooks.<event>` is a list of `{command}` beside `version: 1` (Cursor);
 * - `typed-flat`: `hooks.<event>` is a list of `{type: 'command', bash, timeoutSec}` beside `version: 1`, in a
 *   file of turnback's own (GitHub Copilot CLI reads every file of its hooks folder).
 */
export type HookFileFormat = 'matcher-groups' | 'flat' | 'typed-flat';

/** Where a payload's fields are, by their names in the agent's JSON. */
export interface PayloadFields {
  sessionId: readonly string[];
  toolCallId: readonly string[];
  toolName: readonly string[];
  toolInput: readonly string[];
  prompt: readonly string[];
  cwd: readonly string[];
}

/** One agent: its files, events, payload and tools. */
export interface AgentSpec {
  name: AgentName;
  /** As a person calls it. */
  title: string;
  /** The hook file, relative to the project root (`--project`) and to the home folder (`--user`). */
  files: { project: string; user: string };
  format: HookFileFormat;
  /** The agent's event names and what each means; the installed hooks are exactly these. */
  events: Readonly<Record<string, HookKind>>;
  /** For `matcher-groups`: the tool-name pattern of the tool events (the tools whose calls are bracketed). */
  toolMatcher?: string;
  /**
   * The events whose hooks can be HTTP requests to the server instead of processes (Claude Code's
   * `type: "http"`), and the file of this machine alone they go in (they carry its port and the
   * user's secret). The turn's first event stays a command: only a process can start a server.
   */
  http?: { events: readonly string[]; localFile: string };
  /** The hook's time limit as the agent's file writes it (in the agent's unit: seconds or milliseconds). */
  timeout: { field: 'timeout' | 'timeoutSec'; value: number };
  /** The format version a file install creates carries, when the agent would otherwise rewrite the file to add it. */
  settingsVersion?: { key: string; value: number };
  fields: PayloadFields;
  /** Tools that run commands: a whole-tree picture around each call, side effect `filesystem`. */
  shellTools: RegExp;
  /** Tools that reach the network or another server (MCP): a whole-tree picture, listed as irreversible. */
  networkTools: RegExp;
  /** Tools that only write the files their input names (see `writtenPaths`): a picture of those files alone. */
  writeTools: RegExp;
  /** Tools that change nothing here (reading, searching, planning): no picture. */
  readOnlyTools: RegExp;
  /** How the end-of-turn list reaches the person inside the agent: a JSON `systemMessage` on stdout, or not at all. */
  feedback: 'system-message' | 'none';
  /** Where the agent drops that message though it reads it, and what the person runs instead (said by `install`). */
  feedbackLimit?: string;
  /** Extra set-up the agent needs that `install` cannot do (said by `install`). */
  installNote?: string;
  /** What could not be confirmed from the agent's own documentation or source. */
  unconfirmed?: string;
}

const CLAUDE_FIELDS: PayloadFields = {
  sessionId: ['session_id'],
  toolCallId: ['tool_use_id'],
  toolName: ['tool_name'],
  toolInput: ['tool_input'],
  prompt: ['prompt'],
  cwd: ['cwd'],
};

/** The agents, by name. */
export const AGENTS: Readonly<Record<AgentName, AgentSpec>> = {
  claude: {
    name: 'claude',
    title: 'Claude Code',
    files: { project: '.claude/settings.json', user: '.claude/settings.json' },
    format: 'matcher-groups',
    // PostToolUseFailure ends the call of a tool that failed (without it, the turn's end would).
    events: { UserPromptSubmit: 'prompt', PreToolUse: 'before-tool', PostToolUse: 'after-tool', PostToolUseFailure: 'after-tool', Stop: 'stop', SessionEnd: 'session-end' },
    toolMatcher: 'Bash|Write|Edit|MultiEdit|NotebookEdit|Task|WebFetch|WebSearch|mcp__.*',
    // Claude Code 2.1 posts these to a URL (CHECKPOINT-DESIGN.md, "Hooks without a process"); a
    // failed request is a non-blocking error there, and the stop's picture covers the call.
    http: { events: ['PreToolUse', 'PostToolUse', 'PostToolUseFailure'], localFile: '.claude/settings.local.json' },
    timeout: { field: 'timeout', value: 30 },
    fields: CLAUDE_FIELDS,
    shellTools: /^(Bash|Task)$/,
    networkTools: /^(mcp__.*|WebFetch|WebSearch)$/,
    writeTools: /^(Write|Edit|MultiEdit|NotebookEdit)$/,
    readOnlyTools: /^(Read|Glob|Grep|LS|TodoWrite|NotebookRead|BashOutput|KillShell|ExitPlanMode|ListMcpResourcesTool|ReadMcpResourceTool)$/,
    feedback: 'system-message',
  },
  codex: {
    name: 'codex',
    title: 'Codex CLI',
    files: { project: '.codex/hooks.json', user: '.codex/hooks.json' },
    format: 'matcher-groups',
    events: { UserPromptSubmit: 'prompt', PreToolUse: 'before-tool', PostToolUse: 'after-tool', Stop: 'stop' },
    toolMatcher: 'Bash|apply_patch|mcp__.*',
    timeout: { field: 'timeout', value: 30 },
    fields: { ...CLAUDE_FIELDS, sessionId: ['session_id'] },
    shellTools: /^(Bash|shell|exec_command)$/,
    networkTools: /^mcp__/,
    writeTools: /^apply_patch$/,
    readOnlyTools: /^(update_plan|view_image)$/,
    feedback: 'system-message',
    // Codex 0.171.0's exec mode prints a hook's run and status, never its output: its human
    // output prints `hook: Stop Completed`, its `--json` output drops hook events
    // (exec/src/event_processor_with_human_output.rs, event_processor_with_jsonl_output.rs; the
    // harness's runs show the same). The TUI shows hooks' messages.
    feedbackLimit: '`codex exec` shows that a hook ran, never what it said: after `codex exec`, `turnback list` shows the turn and its `turnback undo` id.',
    installNote:
      'Codex runs hooks when its `hooks` feature is on (the default in current releases; older ones need `[features] codex_hooks = true` in ~/.codex/config.toml).',
  },
  gemini: {
    name: 'gemini',
    title: 'Gemini CLI',
    files: { project: '.gemini/settings.json', user: '.gemini/settings.json' },
    format: 'matcher-groups',
    events: { BeforeAgent: 'prompt', BeforeTool: 'before-tool', AfterTool: 'after-tool', AfterAgent: 'stop', SessionEnd: 'session-end' },
    toolMatcher: 'write_file|replace|run_shell_command|web_fetch|google_web_search|mcp_.*',
    // Gemini CLI's hook timeout is in milliseconds.
    timeout: { field: 'timeout', value: 30_000 },
    fields: { ...CLAUDE_FIELDS, toolCallId: [] },
    shellTools: /^run_shell_command$/,
    networkTools: /^(mcp_.*|web_fetch|google_web_search)$/,
    writeTools: /^(write_file|replace)$/,
    readOnlyTools: /^(read_file|read_many_files|list_directory|glob|search_file_content|save_memory)$/,
    feedback: 'system-message',
    unconfirmed: 'MCP tool names (taken as `mcp_…`); a `systemMessage` from AfterAgent shown to the person.',
  },
  qwen: {
    name: 'qwen',
    title: 'Qwen Code',
    files: { project: '.qwen/settings.json', user: '.qwen/settings.json' },
    format: 'matcher-groups',
    events: { UserPromptSubmit: 'prompt', PreToolUse: 'before-tool', PostToolUse: 'after-tool', Stop: 'stop', SessionEnd: 'session-end' },
    toolMatcher: '.*',
    // Milliseconds: Qwen Code's HookRunner.executeCommandHook kills a hook after `timeout` ms
    // (default 60 000; packages/core/src/hooks/hookRunner.ts). Claude Code's 30 (seconds) was 30 ms.
    timeout: { field: 'timeout', value: 30_000 },
    // Qwen Code stamps a settings file without `$version` as version 4 on its first run, keeping
    // a `.orig` copy (packages/cli/src/config/settings.ts, loadAndMigrate): a file install makes
    // carries it, so Qwen leaves it alone and uninstall can take it away whole.
    settingsVersion: { key: '$version', value: 4 },
    fields: CLAUDE_FIELDS,
    shellTools: /^(run_shell_command|Bash|Shell)$/,
    networkTools: /^(mcp__.*|web_fetch|web_search)$/,
    writeTools: /^(write_file|edit|replace|Write|Edit)$/,
    readOnlyTools: /^(read_file|read_many_files|list_directory|glob|grep_search|search_file_content|todo_write|save_memory|Read|Glob|Grep)$/,
    feedback: 'system-message',
    unconfirmed: 'tool names (Qwen Code keeps Gemini CLI\'s; both spellings are taken); the event names follow Claude Code\'s.',
  },
  cursor: {
    name: 'cursor',
    title: 'Cursor',
    files: { project: '.cursor/hooks.json', user: '.cursor/hooks.json' },
    format: 'flat',
    events: { beforeSubmitPrompt: 'prompt', beforeShellExecution: 'before-tool', afterShellExecution: 'after-tool', stop: 'stop' },
    timeout: { field: 'timeout', value: 30 },
    fields: { sessionId: ['conversation_id'], toolCallId: [], toolName: [], toolInput: [], prompt: ['prompt'], cwd: ['cwd'] },
    shellTools: /^shell$/,
    networkTools: /^$/,
    writeTools: /^$/,
    readOnlyTools: /^$/,
    feedback: 'none',
    unconfirmed: 'that a hook printing nothing leaves Cursor\'s own permission decision unchanged; file edits have only an after-event, so they are covered by the turn\'s picture.',
  },
  copilot: {
    name: 'copilot',
    title: 'GitHub Copilot CLI',
    files: { project: '.github/hooks/turnback.json', user: '.copilot/hooks/turnback.json' },
    format: 'typed-flat',
    // A tool that fails sends postToolUseFailure (its payload postToolUse's, with `error`) and no
    // postToolUse: it ends the call at once, not at agentStop (seen in the harness, test/agents).
    events: { userPromptSubmitted: 'prompt', preToolUse: 'before-tool', postToolUse: 'after-tool', postToolUseFailure: 'after-tool', agentStop: 'stop', sessionEnd: 'session-end' },
    timeout: { field: 'timeoutSec', value: 30 },
    fields: { sessionId: ['sessionId', 'session_id'], toolCallId: ['toolCallId'], toolName: ['toolName'], toolInput: ['toolArgs'], prompt: ['prompt'], cwd: ['cwd'] },
    shellTools: /^(bash|shell|powershell)$/,
    networkTools: /^(web_fetch|mcp_.*)$/,
    // Copilot CLI 1.0.102's edit tools (its bundle's tool categories, cli-main.js): `create` and
    // `edit`/`str_replace` name a `path`; `str_replace_editor` a `path` beside its `command`;
    // `apply_patch` (offered to GPT-5 models) is freeform, its `toolArgs` the patch text, whose
    // `*** Add/Update/Delete File:` and `*** Move to:` lines name the files.
    writeTools: /^(edit|create|str_replace|str_replace_editor|apply_patch|write)$/,
    // Reading, searching, and the tools that read a running shell's output or list what runs.
    readOnlyTools: /^(view|read|glob|grep|rg|search|read_bash|list_bash|list_agents|read_agent|fetch_copilot_cli_documentation)$/,
    feedback: 'none',
    unconfirmed: 'the user-level folder (~/.copilot/hooks/), and the session field (`sessionId`; payloads without one share one session).',
  },
};

/** True when `name` is an agent of the table. */
export function isAgentName(name: unknown): name is AgentName {
  return typeof name === 'string' && Object.hasOwn(AGENTS, name);
}

/** The prefix of the session id turnback gives an agent session: `claude:`, `codex:`, … */
export function agentSessionId(agent: AgentName, sessionId: string): string {
  return `${agent}:${sessionId}`;
}

/** The session-id prefixes of agent sessions: the hook agents', and `acp` (the ACP proxy and helper). */
const SESSION_AGENTS: ReadonlySet<string> = new Set([...Object.keys(AGENTS), 'acp']);

/**
 * The agent and its own session id inside an agent session's id — one {@link agentSessionId}
 * made (`claude:6f2a…`), or an ACP session's (`acp:sess-1`) — or `undefined`.
 */
export function parseAgentSessionId(sessionId: string | undefined): { agent: string; session: string } | undefined {
  const colon = sessionId?.indexOf(':') ?? -1;
  if (sessionId === undefined || colon < 1) return undefined;
  const agent = sessionId.slice(0, colon);
  return SESSION_AGENTS.has(agent) ? { agent, session: sessionId.slice(colon + 1) } : undefined;
}
