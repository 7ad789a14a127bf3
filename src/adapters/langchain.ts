import { createMiddleware } from 'langchain';
import type { CheckpointObserver } from '../session/observer.js';
import { checkpointedCall } from '../tools/tool-call.js';

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
      // Unknown effects: pictures around the call. Known paths: a snapshot of them, cheap.
      return checkpointedCall(observer, paths === undefined ? { callId, kind: 'exec', command: name } : { callId, paths }, async () => handler(request));
    },
  });
}
