import type { z } from 'zod';
import type { CheckpointObserver } from '../session/observer.js';
import { createSavepointTool, savepointInput, type SavepointInput, type SavepointReport, type SavepointToolOptions } from '../tools/savepoint-tool.js';
import { checkpointedCall } from '../tools/tool-call.js';

// The Vercel AI SDK side. Nothing here imports `ai`: an AI SDK tool is a plain object
// (`description`, `inputSchema`, `execute(input, { toolCallId, abortSignal })`), the same shape in
// ai 6 (Node 20) and ai 7 (Node 22), so one adapter serves both without pinning either.

/** The part of the AI SDK's execute options turnback reads (ai 6 and 7 pass more). */
export interface AiSdkExecuteOptions {
  /** The tool call's id, which a snapshot is keyed by. */
  toolCallId: string;
  abortSignal?: AbortSignal;
}

/** The savepoint tool as an AI SDK tool: put it in `tools: { undo_savepoint: … }`. */
export interface AiSdkSavepointTool {
  description: string;
  /** The zod definition the model's JSON Schema is derived from (the AI SDK converts it). */
  inputSchema: z.ZodType<SavepointInput>;
  execute: (input: SavepointInput, options: AiSdkExecuteOptions) => Promise<SavepointReport>;
}

/**
 * `undo_savepoint` for the AI SDK. A bad input or a refused call throws a `CheckpointError`,
 * which the AI SDK hands the model as the tool's error; a result is the structured report.
 *
 * @example
 * const result = await generateText({ model, tools: { undo_savepoint: savepointTool({ observer }) }, prompt });
 */
export function savepointTool(options: SavepointToolOptions): AiSdkSavepointTool {
  const core = createSavepointTool(options);
  return {
    description: core.description,
    inputSchema: savepointInput,
    execute: (input, { abortSignal }) => core.execute(input, abortSignal !== undefined ? { signal: abortSignal } : {}),
  };
}

/** Any AI SDK tool (its `execute` may take any input). */
export interface ToolWithExecute {
  execute?: ((input: never, options: never) => unknown) | undefined;
}

/** The input type of a tool's `execute`. */
export type InputOf<T extends ToolWithExecute> = T['execute'] extends ((input: infer I, options: never) => unknown) | undefined ? I : never;

/** How {@link withCheckpoint} captures a tool's effects. */
export interface WithCheckpointOptions<Input> {
  /** The session's observer. */
  observer: CheckpointObserver;
  /**
   * The project paths the call will change, from its input: their pre-images are captured
   * before it runs (cheap). Without it, every write made through the observer inside the call
   * is captured as it happens.
   */
  paths?: (input: Input) => string[];
  /** `exec` for a tool that runs commands: the call is bracketed by whole-tree pictures. @default 'write' */
  kind?: 'write' | 'exec';
}

/**
 * Wraps an AI SDK tool so its file effects are captured as a tool-call snapshot keyed by the
 * AI SDK's `toolCallId` (restore it with `observer.restoreSnapshot({ sessionId, scopeId })`), or,
 * for `kind: 'exec'`, attributed by a call picture around it. Never blocks the tool: a capture
 * that fails is a gap the observer reports, and the tool runs all the same.
 */
export function withCheckpoint<T extends ToolWithExecute>(tool: T, options: WithCheckpointOptions<InputOf<T>>): T {
  const execute = tool.execute as ((input: InputOf<T>, options: AiSdkExecuteOptions) => unknown) | undefined;
  if (execute === undefined) return tool;
  const { observer } = options;
  const wrapped = (input: InputOf<T>, executeOptions: AiSdkExecuteOptions): Promise<unknown> =>
    checkpointedCall(
      observer,
      { callId: executeOptions.toolCallId, ...(options.kind !== undefined ? { kind: options.kind } : {}), ...(options.paths !== undefined ? { paths: options.paths(input) } : {}) },
      async () => execute(input, executeOptions),
    );
  return { ...tool, execute: wrapped };
}
