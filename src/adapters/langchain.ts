import { createMiddleware } from 'langchain';
import type { CheckpointObserver } from '../session/observer.js';

// turnback inside LangChain JS agents (`langchain` 1.x, an optional peer dependency of this entry
// only): one `wrapToolCall` middleware that covers every tool of an agent.

/** How {@link checkpointMiddleware} captures each tool call. */
export interface CheckpointMiddlewareOptions {
  observer: CheckpointObserver;
  /**
   * The project paths a tool call will change, from its name and arguments, when known: their
   * pre-images are captured before the call (cheap) into a snapshot keyed by the tool call's id.
   * `undefined` for a tool whose effects are not known by path.
   */
  paths?: (toolName: string, args: Record<string, unknown>) => string[] | undefined;
  /** Tools that only read: run as they are, nothing captured. @default none */
  readOnly?: (toolName: string) => boolean;
}

let fallbackCalls = 0;

/**
 * A LangChain agent middleware that checkpoints every tool call: a call whose paths `paths` names
 * gets their pre-images (and their state after) in a snapshot keyed by the tool call's id; any
 * other tool not marked `readOnly` is bracketed by whole-tree pictures, so whatever it changes is
 * attributed to it and restorable. Never blocks a call: a capture that fails is a gap the
 * observer reports, and the tool runs all the same.
 *
 * @example
 * const agent = createAgent({ model, tools, middleware: [checkpointMiddleware({ observer })] });
 */
export function checkpointMiddleware(options: CheckpointMiddlewareOptions): ReturnType<typeof createMiddleware> {
  const { observer } = options;
  return createMiddleware({
    name: 'turnback',
    wrapToolCall: async (request, handler) => {
      const { name, args, id } = request.toolCall;
      if (options.readOnly?.(name) === true) return handler(request);
      const callId = id ?? `langchain-${process.pid}-${++fallbackCalls}`;
      const paths = options.paths?.(name, (args ?? {}) as Record<string, unknown>);
      if (paths === undefined) {
        const begun = await observer.callBegin(callId, { command: name }).then(
          () => true,
          () => false,
        );
        try {
          return await handler(request);
        } finally {
          if (begun) await observer.callEnd(callId, { sideEffect: 'filesystem' }).catch(() => undefined);
        }
      }
      const scope = { sessionId: observer.sessionId, scopeId: callId };
      await observer.snapshot(scope).catch(() => undefined);
      return observer.withToolCall(scope, async () => {
        const op = { kind: 'write' as const, callId };
        for (const target of paths) await observer.beforeWrite(target, op).catch(() => undefined);
        try {
          return await handler(request);
        } finally {
          for (const target of paths) await observer.afterWrite(target, op).catch(() => undefined);
        }
      });
    },
  });
}
