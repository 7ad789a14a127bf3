/**
 * turnback/claude-agent-sdk — turnback inside programs built on `@anthropic-ai/claude-agent-sdk`
 * (an optional peer dependency): {@link claudeAgentHooks} returns the `hooks` option for
 * `query()`, the same mapping `turnback hooks install claude` gives the Claude Code command.
 *
 * @packageDocumentation
 */
export { claudeAgentHooks, type ClaudeAgentHooksOptions, type ClaudeHookCallback, type ClaudeHookEvents, type ClaudeHookMatcher } from './adapters/claude-agent-sdk.js';
