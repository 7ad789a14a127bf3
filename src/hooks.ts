/**
 * turnback/hooks — checkpoints inside the coding agents people already run, through their hook
 * systems: the agent table (Claude Code, Codex CLI, Gemini CLI, Qwen Code, Cursor, GitHub
 * Copilot CLI), reading an agent's hook payload, what each event does to an observer, and
 * merging turnback's hooks into an agent's configuration. `turnback hooks install AGENT` and
 * `turnback hook AGENT EVENT` are built on it.
 *
 * @packageDocumentation
 */
export { AGENTS, agentSessionId, isAgentName, parseAgentSessionId, type AgentName, type AgentSpec, type HookFileFormat, type HookKind, type PayloadFields } from './hooks/agents.js';
export { MAX_PAYLOAD_BYTES, classifyTool, namedPaths, pairingKey, parseHookEvent, patchPaths, promptLabel, type HookEvent, type ToolClass } from './hooks/events.js';
export { applyHookEvent, changeCounts, turnCallId, type ApplyHookOptions, type HookOutcome } from './hooks/apply.js';
export { attributionOf, callWords, candidatesOf, omitOthers, overlapping, sharedChanges, splitAtEvent, type Attribution, type CallKey, type OpenCall, type SharedChange } from './hooks/overlap.js';
export { indentationOf, installedEvents, installHooks, isOurCommand, isOurUrl, uninstallHooks, type HttpHookTarget, type InstallResult, type JsonObject as HookJsonObject, type UninstallResult } from './hooks/settings.js';
export { codexHooksFeature, enableCodexHooks } from './hooks/codex-config.js';
export { realPathOf, type RealPath } from './fs/paths.js';
