import type { CheckpointObserver } from '../session/observer.js';

// One tool call, checkpointed: what every framework adapter does around the tools it wraps, and
// the framework-neutral withCheckpoint of the core tool shape.

/** How one tool call's file effects are captured. */
export interface ToolCallCapture {
  /** The framework's id of the call: the snapshot's scope, and the call record's id. */
  callId: string;
  /** `exec`: the call may run commands, so whole-tree pictures bracket it. @default 'write' */
  kind?: 'write' | 'exec';
  /** For `write`: the project paths the call will change (none: writes through the observer are captured as they happen). */
  paths?: readonly string[];
  /** For `exec`: what the call runs, as the call record shows it. @default the call id */
  command?: string;
}

/**
 * Runs `run` as one checkpointed tool call. `exec`: `callBegin`/`callEnd` pictures around it, so
 * whatever it changes is attributed to `callId`. `write`: a snapshot keyed by `callId`, with the
 * named paths' pre-images taken before and their states after (the restore guard's record)
 * through the observer's own protocol, inside `withToolCall` so writes made through the observer
 * are captured too. Never blocks the call: a capture that fails is the observer's reported gap.
 */
export async function checkpointedCall<T>(observer: CheckpointObserver, capture: ToolCallCapture, run: () => Promise<T>): Promise<T> {
  const { callId } = capture;
  if (capture.kind === 'exec') {
    const begun = await observer.callBegin(callId, { command: capture.command ?? callId }).then(
      () => true,
      () => false,
    );
    try {
      return await run();
    } finally {
      if (begun) await observer.callEnd(callId, { sideEffect: 'filesystem' }).catch(() => undefined);
    }
  }
  const scope = { sessionId: observer.sessionId, scopeId: callId };
  const paths = capture.paths ?? [];
  await observer.snapshot(scope).catch(() => undefined);
  return observer.withToolCall(scope, async () => {
    const op = { kind: 'write' as const, callId };
    for (const target of paths) await observer.beforeWrite(target, op).catch(() => undefined);
    try {
      return await run();
    } finally {
      for (const target of paths) await observer.afterWrite(target, op).catch(() => undefined);
    }
  });
}

/** A tool in the core shape {@link withCheckpoint} wraps: `execute(input, options)`. */
export interface ExecutableTool {
  execute(input: never, options: never): Promise<unknown>;
}

/** The input and the options of a tool's `execute`. */
type InputOf<T extends ExecutableTool> = Parameters<T['execute']>[0];
type OptionsOf<T extends ExecutableTool> = Parameters<T['execute']>[1];

/** How {@link withCheckpoint} captures a core-shaped tool's calls. */
export interface WithCheckpointOptions<Input, Options> {
  observer: CheckpointObserver;
  /** The framework's tool-call id, from the execute options (e.g. the AI SDK's `toolCallId`). */
  callIdOf: (options: Options) => string;
  /** The project paths a call will change, from its input. */
  paths?: (input: Input) => readonly string[];
  /** `exec` for a tool that runs commands. @default 'write' */
  kind?: 'write' | 'exec';
}

/**
 * Wraps any tool whose `execute(input, options)` a framework calls, so each call's file effects
 * are captured as a tool-call snapshot keyed by the framework's call id (or, with `kind:
 * 'exec'`, attributed by pictures). The framework adapters build on {@link checkpointedCall}
 * the same way.
 */
export function withCheckpoint<T extends ExecutableTool>(tool: T, options: WithCheckpointOptions<InputOf<T>, OptionsOf<T>>): T {
  const execute = tool.execute.bind(tool) as (input: InputOf<T>, options: OptionsOf<T>) => Promise<unknown>;
  return {
    ...tool,
    execute: (input: InputOf<T>, executeOptions: OptionsOf<T>) =>
      checkpointedCall(
        options.observer,
        { callId: options.callIdOf(executeOptions), ...(options.kind !== undefined ? { kind: options.kind } : {}), ...(options.paths !== undefined ? { paths: options.paths(input) } : {}) },
        () => execute(input, executeOptions),
      ),
  };
}
