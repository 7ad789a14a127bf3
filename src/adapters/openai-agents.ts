import { tool, type Editor, type FunctionTool, type RunContext, type Shell } from '@openai/agents';

/** The SDK's third `invoke` argument (its tool call, its signal). */
type ToolCallDetails = Parameters<FunctionTool['invoke']>[2];
import type { CheckpointObserver } from '../session/observer.js';
import { createSavepointTool, type SavepointToolOptions } from '../tools/savepoint-tool.js';
import { checkpointedCall } from '../tools/tool-call.js';

// turnback inside OpenAI Agents JS (`@openai/agents`, an optional peer dependency of this entry
// only): the savepoint tool as a function tool, withCheckpoint for any function tool, and
// decorators for the SDK's apply-patch editor and local shell.

/**
 * `undo_savepoint` as an OpenAI Agents function tool. Not `strict`: the input is one flat object
 * whose fields depend on the action, which OpenAI's strict mode cannot say (it wants every field
 * required); the savepoint tool checks the input whole itself. A refused call reaches the model
 * as the SDK's tool error text.
 *
 * @example
 * const agent = new Agent({ name: 'coder', tools: [savepointTool({ observer })] });
 */
export function savepointTool(options: SavepointToolOptions): FunctionTool {
  const core = createSavepointTool(options);
  return tool({
    name: core.name,
    description: core.description,
    // The SDK's non-strict schema type says `additionalProperties: true`; extra keys are refused by the check all the same.
    parameters: { type: 'object', properties: (core.inputSchema.properties ?? {}) as Record<string, never>, required: ['action'], additionalProperties: true },
    strict: false,
    execute: async (input, _context, details) => core.execute(input, details?.signal !== undefined ? { signal: details.signal } : {}),
  }) as FunctionTool;
}

/** How {@link withCheckpoint} captures a function tool's effects. */
export interface WithCheckpointOptions {
  observer: CheckpointObserver;
  /** The project paths the call will change, from its parsed input (captured before it runs). */
  paths?: (input: Record<string, unknown>) => string[];
  /** `exec` for a tool that runs commands: whole-tree pictures around the call. @default 'write' */
  kind?: 'write' | 'exec';
}

let fallbackCalls = 0;

/** Any function tool, whatever its parameters and result (what {@link withCheckpoint} needs of it). */
export interface AnyFunctionTool {
  type: 'function';
  name: string;
  invoke: (runContext: RunContext<never>, input: string, details?: ToolCallDetails) => Promise<unknown>;
}

/**
 * Wraps a function tool so its file effects are captured as a tool-call snapshot keyed by the
 * SDK's `details.toolCall.callId` (restore it with `observer.restoreSnapshot`), or, for `kind:
 * 'exec'`, attributed by pictures around the call. Never blocks the tool.
 */
export function withCheckpoint<T extends AnyFunctionTool>(functionTool: T, options: WithCheckpointOptions): T {
  const { observer } = options;
  const invoke = functionTool.invoke.bind(functionTool);
  const wrapped: AnyFunctionTool['invoke'] = (runContext, input, details) => {
    const callId = details?.toolCall?.callId ?? `agents-${process.pid}-${++fallbackCalls}`;
    let paths: string[] = [];
    try {
      paths = options.kind === 'exec' ? [] : (options.paths?.(JSON.parse(input) as Record<string, unknown>) ?? []);
    } catch {
      // An input that does not parse is the tool's to refuse; nothing is captured for it.
    }
    return checkpointedCall(observer, { callId, kind: options.kind ?? 'write', paths, command: functionTool.name }, () => invoke(runContext, input, details));
  };
  return { ...functionTool, invoke: wrapped };
}

/**
 * An apply-patch `Editor` whose every create, update and delete is captured first: the path's
 * pre-image into the observer's turn, and its state after (what the restore guard compares).
 */
export function checkpointedEditor(editor: Editor, observer: CheckpointObserver): Editor {
  const around = async <R>(target: string, run: () => Promise<R>): Promise<R> => {
    const op = { kind: 'patch' as const };
    await observer.beforeWrite(target, op).catch(() => undefined);
    try {
      return await run();
    } finally {
      await observer.afterWrite(target, op).catch(() => undefined);
    }
  };
  return {
    createFile: (operation, context) => around(operation.path, () => editor.createFile(operation, context)),
    updateFile: (operation, context) => around(operation.path, () => editor.updateFile(operation, context)),
    deleteFile: (operation, context) => around(operation.path, () => editor.deleteFile(operation, context)),
  };
}

/** A local `Shell` whose every run is bracketed by whole-tree pictures, so what its commands change is attributed and restorable. */
export function checkpointedShell(shell: Shell, observer: CheckpointObserver): Shell {
  let runs = 0;
  return {
    run: (action) => checkpointedCall(observer, { callId: `shell-${process.pid}-${++runs}`, kind: 'exec', command: action.commands.join(' && ') }, () => shell.run(action)),
  };
}
