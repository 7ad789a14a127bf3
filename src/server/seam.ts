// What a command takes from its process, in either half: the person's own process (in-process)
// or the per-user server relaying for a client (served, server.ts). The server builds one of these
// from a request's frames; the command layer (src/cli/invocation.ts) adds its per-command caches.

/** Where a command writes text: a terminal, a pipe, or a client's relay. */
export interface TextSink {
  write(text: string): void;
  /** True when it is a terminal (colour, progress lines rewritten in place). */
  readonly isTTY: boolean;
  /** The terminal's width, when it is one. */
  readonly columns?: number;
}

/** How the command `run` started ended. */
export interface ChildEnd {
  code: number;
  signal: NodeJS.Signals | undefined;
  /** Why it could not be started (not found, not executable). */
  spawnError?: string;
}

/** The signals a command reacts to (Ctrl-C, `kill`, a closed terminal). */
export const INTERRUPTS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** One command's folder, output, signals and child, in-process or served: what the server relays. */
export interface ProcessSeam {
  /** The folder the person started the command in. */
  readonly cwd: string;
  /** The process the person started (in-process: this one; served: the client). */
  readonly pid: number;
  readonly stdout: TextSink;
  readonly stderr: TextSink;
  /** What the client read from its stdin and relayed (served `turnback hook`: the agent's payload). */
  readonly input?: string;
  /** Why `input` is not the agent's whole payload (stdin never closed, over the limit): a gap the hook records. */
  readonly inputGap?: string;
  /** When the person's process started (epoch ms): a hook's budget counts from there, served or not. */
  readonly startedAt?: number;
  /**
   * A served hook tells its client, before it changes anything, by when it will be done and
   * where its log is; `false` when the client has gone (it then runs the hook itself).
   */
  accept?(promise: { deadline: number; log: string }): boolean;
  /** The person's input, for the commands that ask (in-process only; absent when served). */
  readonly stdin?: NodeJS.ReadStream;
  /** The person's terminal for the picker (in-process only). */
  readonly terminal?: NodeJS.WriteStream;
  /** Calls `listener` on each interrupt until the returned function is called. */
  onInterrupt(listener: (signal: NodeJS.Signals) => void): () => void;
  /** Starts `argv` with the person's terminal, marked as run `sessionId`, and waits for its end. */
  runChild(argv: readonly string[], sessionId: string): Promise<ChildEnd>;
}
