import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ClientRequestSchema, JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

// The stdio transport of `turnback mcp`, in place of the SDK's StdioServerTransport. The SDK's
// reader closes the transport (and so ends the server, exit 0, nothing said) when its buffer
// passes 10 MiB, and drops a message that fails its schema without an answer. Here one line is
// one message, bounded on its own; a line that cannot be served is answered with a JSON-RPC error
// when it is a request, said on stderr either way, and the next line is served.

/** Most bytes one JSON-RPC message (one line) may hold: the SDK's own reader's limit. */
export const MCP_MESSAGE_MAX_BYTES: number = 10 * 1024 * 1024;
/** How much of a message past the limit is kept to find its id (SDK clients write the id first). */
const HEAD_BYTES = 64 * 1024;

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;

type RequestId = string | number;

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The top-level keys of a JSON object's first bytes, and its `id` when one is among them: enough
 * to answer a message too large to parse. Stops where the text is cut or stops being JSON.
 */
export function headOfMessage(head: string): { id?: RequestId; keys: string[] } {
  const keys: string[] = [];
  let id: RequestId | undefined;
  let at = 0;
  const space = (): void => {
    while (at < head.length && ' \t\r\n'.includes(head[at] as string)) at++;
  };
  const STRING = /"(?:[^"\\]|\\.)*"/y;
  const readString = (): string | undefined => {
    STRING.lastIndex = at;
    const match = STRING.exec(head);
    if (match === null) return undefined;
    at = STRING.lastIndex;
    return JSON.parse(match[0]) as string;
  };
  // Skips one value; false when the text ends inside it.
  const skipValue = (): boolean => {
    if (head[at] === '"') return readString() !== undefined;
    let depth = 0;
    while (at < head.length) {
      const char = head[at] as string;
      if (char === '"') {
        if (readString() === undefined) return false;
        continue;
      }
      if (char === '{' || char === '[') depth++;
      else if (char === '}' || char === ']') {
        if (depth === 0) return true;
        depth--;
      } else if (char === ',' && depth === 0) return true;
      at++;
      if (depth === 0 && (char === '}' || char === ']')) return true;
    }
    return false;
  };
  space();
  if (head[at] !== '{') return { keys };
  at++;
  for (;;) {
    space();
    const key = readString();
    if (key === undefined) break;
    space();
    if (head[at] !== ':') break;
    at++;
    space();
    keys.push(key);
    if (key === 'id') {
      const start = at;
      if (!skipValue()) break;
      try {
        const value: unknown = JSON.parse(head.slice(start, at));
        if (isRequestId(value)) id = value;
      } catch {
        // Not a plain value: no id to answer with.
      }
    } else if (!skipValue()) break;
    space();
    if (head[at] !== ',') break;
    at++;
  }
  return id === undefined ? { keys } : { id, keys };
}

/** Why a parsed value is no JSON-RPC message the server takes, and the answer it gets (if any). */
export function refusalOf(value: unknown): { why: string; answer?: { id?: RequestId; code: number } } {
  if (!isPlainObject(value)) return { why: 'not a JSON-RPC object (batches are not part of MCP)', answer: { code: INVALID_REQUEST } };
  const isRequest = typeof value.method === 'string' && 'id' in value;
  if ('result' in value || 'error' in value) return { why: 'a malformed response' };
  if (!('id' in value)) return { why: 'a malformed notification' };
  if (!isRequestId(value.id)) return { why: 'a request whose id is neither a string nor an integer', answer: { code: INVALID_REQUEST } };
  const id = value.id;
  if (!isRequest) return { why: 'a request without a method name', answer: { id, code: INVALID_REQUEST } };
  if (value.jsonrpc !== '2.0') return { why: 'a request without jsonrpc: "2.0"', answer: { id, code: INVALID_REQUEST } };
  if ('params' in value && !isPlainObject(value.params)) return { why: 'a request whose params are not an object', answer: { id, code: INVALID_PARAMS } };
  return { why: 'a request with a member JSON-RPC does not define', answer: { id, code: INVALID_REQUEST } };
}

interface RequestSchema {
  shape: { method: { value: string } };
  safeParse(value: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } };
}
let requestSchemas: Map<string, RequestSchema> | undefined;

/**
 * What is wrong with a known request's params, or undefined. The SDK checks them only inside its
 * handler, where a failed check is answered as -32603 (an internal error) with the checker's dump;
 * a host sending a wrong type is owed -32602 (invalid params) saying which field.
 */
export function paramsProblem(message: { method: string }): string | undefined {
  requestSchemas ??= new Map((ClientRequestSchema as unknown as { options: RequestSchema[] }).options.map((schema) => [schema.shape.method.value, schema]));
  const schema = requestSchemas.get(message.method);
  if (schema === undefined) return undefined;
  const parsed = schema.safeParse(message);
  if (parsed.success) return undefined;
  const issues = parsed.error?.issues ?? [];
  return issues
    .slice(0, 3)
    .map((issue) => `${issue.path.map(String).join('.') || 'params'}: ${issue.message}`)
    .join('; ');
}

/** What {@link BoundedStdioTransport} takes; every field has a default (the process's own streams). */
export interface BoundedStdioOptions {
  input?: Readable;
  output?: Writable;
  /** Where a refused message is said, one line each. @default process.stderr */
  report?: (line: string) => void;
  /** @default {@link MCP_MESSAGE_MAX_BYTES} */
  maxMessageBytes?: number;
}

/**
 * An MCP server transport on stdin/stdout, one JSON-RPC message per line, each bounded on its
 * own: a line past the bound is dropped as it arrives (never held whole) and its request answered
 * with an error; a line that is not JSON, or not a message of the protocol, gets the JSON-RPC
 * error its kind calls for (`-32700`, `-32600`, `-32602` for params that are not an object) when
 * it is a request with an id. Nothing a line says closes the transport: only the output failing
 * (the host is gone) or {@link close} does.
 */
export class BoundedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly input: Readable;
  private readonly output: Writable;
  private readonly report: (line: string) => void;
  private readonly maxBytes: number;
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** Set while a line past the bound is being skipped: its first bytes. */
  private dropping: Buffer | undefined;
  private droppedBytes = 0;
  private closed = false;

  constructor(options: BoundedStdioOptions = {}) {
    this.input = options.input ?? process.stdin;
    this.output = options.output ?? process.stdout;
    this.report = options.report ?? ((line) => process.stderr.write(`${line}\n`));
    this.maxBytes = options.maxMessageBytes ?? MCP_MESSAGE_MAX_BYTES;
  }

  async start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.on('error', this.onInputError);
    this.output.on('error', this.onOutputError);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off('data', this.onData);
    this.input.off('error', this.onInputError);
    if (this.input.listenerCount('data') === 0) this.input.pause();
    this.held = [];
    this.dropping = undefined;
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.output.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.output.once('drain', resolve);
    });
  }

  private readonly onInputError = (error: Error): void => {
    this.onerror?.(error);
  };

  private readonly onOutputError = (error: Error): void => {
    this.onerror?.(error);
    void this.close();
  };

  private readonly onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    // Each chunk is searched once, from where it begins: a long line costs its length, not more.
    while (start < bytes.length && !this.closed) {
      const newline = bytes.indexOf(10, start);
      this.take(bytes.subarray(start, newline === -1 ? bytes.length : newline));
      if (newline === -1) break;
      this.endLine();
      start = newline + 1;
    }
  };

  private take(part: Buffer): void {
    if (part.length === 0) return;
    if (this.dropping !== undefined) {
      this.droppedBytes += part.length;
      return;
    }
    if (this.heldBytes + part.length <= this.maxBytes) {
      this.held.push(part);
      this.heldBytes += part.length;
      return;
    }
    const head = Buffer.concat([...this.held, part.subarray(0, Math.max(0, HEAD_BYTES - this.heldBytes))]);
    this.dropping = head.subarray(0, HEAD_BYTES);
    this.droppedBytes = this.heldBytes + part.length;
    this.held = [];
    this.heldBytes = 0;
  }

  private endLine(): void {
    if (this.dropping !== undefined) {
      const { id, keys } = headOfMessage(this.dropping.toString('utf8'));
      const answered = id !== undefined && !keys.includes('result') && !keys.includes('error');
      this.refuse(`a message of ${this.droppedBytes} bytes, over the limit of ${this.maxBytes}`, answered ? { id, code: INVALID_REQUEST } : undefined);
      this.dropping = undefined;
      this.droppedBytes = 0;
      return;
    }
    const line = (this.held.length === 1 ? (this.held[0] as Buffer) : Buffer.concat(this.held)).toString('utf8').replace(/\r$/, '');
    this.held = [];
    this.heldBytes = 0;
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.refuse('a line that is not JSON', { code: PARSE_ERROR });
      return;
    }
    const message = JSONRPCMessageSchema.safeParse(value);
    if (message.success) {
      const request = message.data as { id?: unknown; method?: unknown };
      const problem = typeof request.method === 'string' && isRequestId(request.id) ? paramsProblem({ method: request.method, ...message.data }) : undefined;
      if (problem === undefined) this.onmessage?.(message.data);
      else this.refuse(`a ${request.method as string} request with wrong params (${problem})`, { id: request.id as RequestId, code: INVALID_PARAMS });
      return;
    }
    const refusal = refusalOf(value);
    this.refuse(refusal.why, refusal.answer);
  }

  private refuse(why: string, answer: { id?: RequestId; code: number } | undefined): void {
    // A field name in `why` is the host's text: no control character reaches the terminal.
    this.report(`turnback mcp: refused ${why.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?')}${answer === undefined ? '' : ' (answered with an error)'}; serving on`);
    if (answer === undefined) return;
    const message = `${answer.code === PARSE_ERROR ? 'Parse error' : answer.code === INVALID_PARAMS ? 'Invalid params' : 'Invalid request'}: ${why}`;
    void this.send({ jsonrpc: '2.0', ...(answer.id !== undefined ? { id: answer.id } : {}), error: { code: answer.code, message } } as JSONRPCMessage);
  }
}
