import { isUnavailable } from '../session/unavailable.js';
import { openCheckpoints, type CheckpointConfigInput } from '../session/open.js';
import { AGENTS, agentSessionId } from '../hooks/agents.js';
import { applyHookEvent } from '../hooks/apply.js';
import { parseHookEvent } from '../hooks/events.js';

// turnback inside a program built on `@anthropic-ai/claude-agent-sdk`: the same hooks `turnback
// hooks install claude` installs for the Claude Code command, as callbacks for `query()`'s
// `hooks` option, run in the program's own process. The shapes below are the SDK's own
// (`HookCallbackMatcher`, `HookCallback`, `HookJSONOutput`), declared structurally so this entry
// needs the SDK only where it is used (test/adapters/claude-agent-sdk.test.ts checks them against
// the real package's types).

/** A hook callback as the SDK calls it: the event's input, the tool-use id, an abort signal. */
export type ClaudeHookCallback = (input: { hook_event_name: string; session_id: string; cwd: string }, toolUseID: string | undefined, options: { signal: AbortSignal }) => Promise<{ systemMessage?: string }>;

/** One matcher group of the SDK's `hooks` option. */
export interface ClaudeHookMatcher {
  matcher?: string;
  hooks: ClaudeHookCallback[];
  /** Seconds. */
  timeout?: number;
}

/** The SDK hook events turnback registers. */
export type ClaudeHookEvents = 'UserPromptSubmit' | 'PreToolUse' | 'PostToolUse' | 'PostToolUseFailure' | 'Stop' | 'SessionEnd';

/** Options of {@link claudeAgentHooks}. */
export interface ClaudeAgentHooksOptions {
  /** turnback's config: `[capabilities.checkpoint]` as TOML text or a parsed object; off unless it enables checkpoints. */
  config: CheckpointConfigInput;
  /** Environment for the default store folder and the home folder. @default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * Receives each event's failure (a store that cannot be written, a malformed input): the agent
   * goes ahead regardless. @default ignored
   */
  onError?: (error: unknown, event: string) => void;
}

/**
 * The `hooks` option for the Claude Agent SDK's `query()`: every prompt a turn, every tool call
 * that can change files pictured (a write tool's named files only; a shell, a subagent or an MCP
 * tool the whole project), what each turn changed said at its end as the hook's
 * `systemMessage` — the same mapping as the installed command hooks (CHECKPOINT-DESIGN.md,
 * "Inside the agents people run"), on the same store, so `turnback list` and `turnback undo`
 * work on the program's turns. A callback never throws and never returns a decision: a failure
 * goes to `onError` and the agent goes ahead.
 *
 * @example
 * for await (const message of query({ prompt, options: { hooks: claudeAgentHooks({ config: '[capabilities.checkpoint]\nenabled = true' }) } })) …
 */
export function claudeAgentHooks(options: ClaudeAgentHooksOptions): Record<ClaudeHookEvents, ClaudeHookMatcher[]> {
  const spec = AGENTS.claude;
  const callback =
    (event: ClaudeHookEvents): ClaudeHookCallback =>
    async (input) => {
      try {
        const parsed = parseHookEvent(spec, event, JSON.stringify(input), input.cwd);
        const projectRoot = parsed.cwd ?? input.cwd;
        const checkpoints = await openCheckpoints(options.config, { projectRoot, sessionId: agentSessionId('claude', parsed.session), ...(options.env !== undefined ? { env: options.env } : {}) });
        if (isUnavailable(checkpoints)) return {};
        try {
          const outcome = await applyHookEvent(checkpoints, parsed);
          return outcome.message !== undefined ? { systemMessage: outcome.message } : {};
        } finally {
          await checkpoints.close().catch(() => undefined);
          await checkpoints.store.close().catch(() => undefined);
        }
      } catch (error) {
        options.onError?.(error, event);
        return {};
      }
    };
  const tools = spec.toolMatcher;
  return {
    UserPromptSubmit: [{ hooks: [callback('UserPromptSubmit')] }],
    PreToolUse: [{ ...(tools !== undefined ? { matcher: tools } : {}), hooks: [callback('PreToolUse')] }],
    PostToolUse: [{ ...(tools !== undefined ? { matcher: tools } : {}), hooks: [callback('PostToolUse')] }],
    PostToolUseFailure: [{ ...(tools !== undefined ? { matcher: tools } : {}), hooks: [callback('PostToolUseFailure')] }],
    Stop: [{ hooks: [callback('Stop')] }],
    SessionEnd: [{ hooks: [callback('SessionEnd')] }],
  };
}
