// An agent hook's payload, read from the hook's stdin. Loaded by the small client (client.ts), so
// it imports nothing heavy. Agents write a payload in pieces, keep their end of the pipe open, or
// send far more than a payload holds; the agent never waits on turnback, so the read ends at the
// first of: the end of stdin, the end of one JSON object or array, the payload limit, a deadline.

/**
 * Where the client leaves stdin it read already (a hook's payload, `{ text, gap? }`) when it then
 * runs the command in its own process after all: stdin cannot be read twice.
 */
export const HANDED_INPUT: unique symbol = Symbol.for('turnback.handed-input');

/** The largest payload read (the same limit `parseHookEvent` applies): a tool input may hold a whole file's new text. */
export const HOOK_INPUT_LIMIT_BYTES: number = 8 * 1024 * 1024;

/**
 * How long a hook's stdin may stay quiet before the read gives up (agents write a payload at once;
 * a stdin never closed must not hold the agent). Counted from the last byte, not from the start:
 * on a loaded machine a big payload arrives in pieces over seconds, and a read that gave up while
 * bytes were still coming lost half the parallel calls of the fault campaign.
 */
export const HOOK_INPUT_DEADLINE_MS: number = 2000;

/** The longest a hook's read of its stdin lasts however its bytes trickle in, so the hook stays within its picture budget. */
export const HOOK_INPUT_CAP_MS: number = 8000;

/**
 * What a hook keeps of its budget to write its gap and leave: a served hook's client leaves this
 * long before its deadline (the agent goes ahead then), so the event's own work — its wait for
 * the store and its pictures — ends by then too: a picture taken once the agent went ahead could
 * already hold the tool's change.
 */
export const HOOK_LEAVE_MS = 300;

/** What was read, and why it is not a whole payload when it is not. */
export interface HookInput {
  text: string;
  /** Why the payload is missing or cut (stdin never closed, over the limit, unreadable): a gap the hook records. */
  gap?: string;
}

/**
 * Finds where one JSON object or array ends in bytes that arrive in pieces, looking at each byte
 * once. JSON's structure is ASCII, and every byte of a UTF-8 sequence is 0x80 or above, so bytes
 * need no decoding. A document that does not start with `{` or `[` has no end it can tell (a
 * number); only the end of stdin ends it.
 */
export class JsonEnd {
  private depth = 0;
  private started = false;
  private structured = false;
  private inString = false;
  private escaped = false;
  /** Bytes looked at so far (each once). */
  scanned = 0;

  /** The offset in `chunk` just past the document's end, or -1 when it has not ended in it. */
  push(chunk: Uint8Array): number {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      this.scanned++;
      if (!this.started) {
        if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
        this.started = true;
        this.structured = byte === 0x7b || byte === 0x5b;
      }
      if (!this.structured) return -1;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === 0x5c) this.escaped = true;
        else if (byte === 0x22) this.inString = false;
      } else if (byte === 0x22) this.inString = true;
      else if (byte === 0x7b || byte === 0x5b) this.depth++;
      else if (byte === 0x7d || byte === 0x5d) {
        this.depth--;
        if (this.depth === 0) return i + 1;
      }
    }
    return -1;
  }
}

/**
 * Reads a hook's payload from `stream` (stdin: a pipe, a socket, a file or a terminal, read by
 * Node's own stream for its kind, never a synchronous read of a descriptor another part of Node
 * made non-blocking). Never rejects: a payload it cannot have whole comes back with its `gap`.
 */
export function readHookInput(stream: NodeJS.ReadableStream, options: { limitBytes?: number; deadlineMs?: number; capMs?: number } = {}): Promise<HookInput> {
  const limit = options.limitBytes ?? HOOK_INPUT_LIMIT_BYTES;
  const deadlineMs = options.deadlineMs ?? HOOK_INPUT_DEADLINE_MS;
  const capMs = options.capMs ?? HOOK_INPUT_CAP_MS;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const end = new JsonEnd();
    let done = false;
    const finish = (gap?: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(cap);
      stream.removeListener('data', onData);
      stream.removeListener('end', onEnd);
      stream.removeListener('error', onError);
      // What the agent writes after the document (or past the limit) is never read: the hook must not wait on it.
      stream.pause();
      (stream as { destroy?: () => void }).destroy?.();
      const text = Buffer.concat(chunks, size).toString('utf8');
      resolve(gap === undefined ? { text } : { text, gap });
    };
    const onData = (data: Buffer | string): void => {
      const chunk = typeof data === 'string' ? Buffer.from(data) : data;
      const at = end.push(chunk);
      const take = at >= 0 ? at : chunk.length;
      if (size + take > limit) {
        finish(`the hook payload is over ${limit} bytes: not read`);
        return;
      }
      chunks.push(at >= 0 ? chunk.subarray(0, at) : chunk);
      size += take;
      if (at >= 0) finish();
      else timer.refresh();
    };
    const onEnd = (): void => finish();
    const onError = (error: Error): void => finish(`the hook's stdin could not be read: ${error.message}`);
    const timer = setTimeout(() => finish(`the hook's stdin was not closed and went quiet for ${deadlineMs / 1000} s with no whole JSON document (${size} bytes read)`), deadlineMs);
    const cap = setTimeout(() => finish(`the hook's stdin was not closed and still arriving after ${capMs / 1000} s with no whole JSON document (${size} bytes read)`), capMs);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.resume();
  });
}
