import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A model server of our own on 127.0.0.1, one wire format per agent family, answering every
// request with the next step of a scripted turn: the agents under test reach no network at all.
//
// Which step comes next is read from the conversation the agent sends, never from a request
// counter: an agent's side requests (a title, a next-speaker check, a retry) must not shift the
// script. A turn is found by its marker (`TB-TURN-1`) in the newest user text that carries one;
// the step is the number of tool results after it. A request that offers no tools is a side
// request and gets a short text.

/**
 * One step of a turn: a tool call (the agent's own tool name and input), or the turn's last words.
 * `fromOutput` fills input fields from the tool results the agent sent back: each names a
 * pattern whose first group, in the newest tool result that has it, is the value (a number when it is all digits) — the id of a process
 * the agent left running, which no script can know in advance.
 */
export type Step = { tool: string; input: Record<string, unknown>; fromOutput?: Record<string, string> } | { text: string };

/** A scripted session: turn N (marker `TB-TURN-N`, from 1) is `turns[N - 1]`, its steps in order. */
export interface Script {
  turns: Step[][];
}

/** The wire formats served. */
export type WireFormat = 'anthropic' | 'gemini' | 'responses' | 'chat';

/** One request as received, for a failing test's message. */
export interface SeenRequest {
  method: string;
  url: string;
  body: unknown;
  answered: string;
  /** When it arrived (performance.now()): the time between a turn's steps is one tool call's round (bench/claude-hooks.mjs). */
  receivedAt: number;
}

/** A running server. */
export interface ModelServer {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  requests: SeenRequest[];
  /** The tool calls answered, in order, with the id each was given. */
  calls: { turn: number; index: number; tool: string; id: string }[];
  close(): Promise<void>;
}

/** The neutral view of a conversation the script needs: user texts and tool results, in order. */
type Item = { kind: 'text'; text: string } | { kind: 'tool-result'; text: string };

const MARKER = /TB-TURN-(\d+)/g;

/** The step the conversation is at, or `undefined` when it holds no marker. */
export function stepFor(script: Script, items: readonly Item[]): { turn: number; index: number; step: Step } | undefined {
  let at = -1;
  let turn = 0;
  for (let i = items.length - 1; i >= 0 && at < 0; i--) {
    const item = items[i] as Item;
    if (item.kind !== 'text') continue;
    const found = [...item.text.matchAll(MARKER)].at(-1);
    if (found !== undefined) {
      at = i;
      turn = Number(found[1]);
    }
  }
  const steps = script.turns[turn - 1];
  if (at < 0 || steps === undefined) return undefined;
  const index = items.slice(at + 1).filter((item) => item.kind === 'tool-result').length;
  return { turn, index, step: filled(steps[Math.min(index, steps.length - 1)] ?? { text: 'done' }, items) };
}

/** `step` with its `fromOutput` fields taken from the newest tool result that has them; a pattern that finds nothing fails the request. */
function filled(step: Step, items: readonly Item[]): Step {
  if (!('tool' in step) || step.fromOutput === undefined) return step;
  const outputs = items.flatMap((item) => (item.kind === 'tool-result' ? [item.text] : [])).reverse();
  const input = { ...step.input };
  for (const [name, pattern] of Object.entries(step.fromOutput)) {
    const found = outputs.map((output) => new RegExp(pattern).exec(output)?.[1]).find((value) => value !== undefined);
    if (found === undefined) throw new Error(`no /${pattern}/ in any tool result: ${outputs.join(' | ').slice(0, 800)}`);
    input[name] = /^\d+$/.test(found) ? Number(found) : found;
  }
  return { tool: step.tool, input };
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(textOf).join('\n');
  if (typeof value === 'object' && value !== null) {
    const o = value as Record<string, unknown>;
    if (typeof o.text === 'string') return o.text;
  }
  return '';
}

type Body = Record<string, unknown>;

/** Anthropic Messages: user messages hold text and tool_result blocks. */
function anthropicItems(body: Body): Item[] {
  const items: Item[] = [];
  for (const message of (body.messages as Body[] | undefined) ?? []) {
    if (message.role !== 'user') continue;
    const content = message.content;
    if (typeof content === 'string') items.push({ kind: 'text', text: content });
    else
      for (const block of (content as Body[] | undefined) ?? []) {
        if (block.type === 'tool_result') items.push({ kind: 'tool-result', text: textOf(block.content) });
        else if (block.type === 'text') items.push({ kind: 'text', text: String(block.text) });
      }
  }
  return items;
}

/** Gemini: `contents` of role user hold text parts and functionResponse parts. */
function geminiItems(body: Body): Item[] {
  const items: Item[] = [];
  for (const content of (body.contents as Body[] | undefined) ?? []) {
    if (content.role !== 'user') continue;
    for (const part of (content.parts as Body[] | undefined) ?? []) {
      if (part.functionResponse !== undefined) items.push({ kind: 'tool-result', text: JSON.stringify(part.functionResponse) });
      else if (typeof part.text === 'string') items.push({ kind: 'text', text: part.text });
    }
  }
  return items;
}

/** OpenAI Responses: `input` items (user messages, function_call_output / custom_tool_call_output). */
function responsesItems(body: Body): Item[] {
  const items: Item[] = [];
  const input = body.input;
  if (typeof input === 'string') return [{ kind: 'text', text: input }];
  for (const item of (input as Body[] | undefined) ?? []) {
    if (typeof item.type === 'string' && item.type.endsWith('_call_output')) items.push({ kind: 'tool-result', text: textOf(item.output) });
    else if (item.role === 'user') items.push({ kind: 'text', text: textOf(item.content) });
  }
  return items;
}

/** Chat completions: user messages and tool messages. */
function chatItems(body: Body): Item[] {
  const items: Item[] = [];
  for (const message of (body.messages as Body[] | undefined) ?? []) {
    if (message.role === 'tool') items.push({ kind: 'tool-result', text: textOf(message.content) });
    else if (message.role === 'user') items.push({ kind: 'text', text: textOf(message.content) });
  }
  return items;
}

function offersTools(format: WireFormat, body: Body): boolean {
  const tools = body.tools;
  if (!Array.isArray(tools) || tools.length === 0) return false;
  if (format === 'gemini') return tools.some((t) => Array.isArray((t as Body).functionDeclarations) && ((t as Body).functionDeclarations as unknown[]).length > 0);
  return true;
}

function sse(res: ServerResponse, events: { event?: string; data: unknown }[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'close' });
  for (const e of events) res.write(`${e.event !== undefined ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`);
  res.end();
}

function json(res: ServerResponse, value: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

let counter = 0;
function callId(prefix: string, turn: number, index: number): string {
  counter += 1;
  return `${prefix}${turn}_${index}_${counter}`;
}

function answerAnthropic(res: ServerResponse, body: Body, step: Step, id: string): void {
  const model = String(body.model ?? 'claude');
  const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const block = 'tool' in step ? { type: 'tool_use', id, name: step.tool, input: {} } : { type: 'text', text: '' };
  const delta = 'tool' in step ? { type: 'input_json_delta', partial_json: JSON.stringify(step.input) } : { type: 'text_delta', text: step.text };
  const stop = 'tool' in step ? 'tool_use' : 'end_turn';
  if (body.stream !== true) {
    json(res, { id: `msg_${id}`, type: 'message', role: 'assistant', model, content: ['tool' in step ? { ...block, input: step.input } : { type: 'text', text: step.text }], stop_reason: stop, stop_sequence: null, usage });
    return;
  }
  sse(res, [
    { event: 'message_start', data: { type: 'message_start', message: { id: `msg_${id}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: block } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ]);
}

function answerGemini(res: ServerResponse, url: string, step: Step): void {
  const part = 'tool' in step ? { functionCall: { name: step.tool, args: step.input } } : { text: step.text };
  const chunk = { candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 }, modelVersion: 'gemini-2.5-pro' };
  if (url.includes(':streamGenerateContent')) sse(res, [{ data: chunk }]);
  else json(res, chunk);
}

function answerResponses(res: ServerResponse, body: Body, step: Step, id: string): void {
  const responseId = `resp_${id}`;
  const model = String(body.model ?? 'gpt-5');
  let item: Body;
  if ('tool' in step && step.tool === 'apply_patch' && typeof step.input.input === 'string') item = { type: 'custom_tool_call', id: `ctc_${id}`, call_id: id, name: 'apply_patch', input: step.input.input, status: 'completed' };
  else if ('tool' in step) item = { type: 'function_call', id: `fc_${id}`, call_id: id, name: step.tool, arguments: JSON.stringify(step.input), status: 'completed' };
  else item = { type: 'message', id: `msg_${id}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: step.text, annotations: [] }] };
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
  const response = { id: responseId, object: 'response', created_at: Math.floor(Date.now() / 1000), model, status: 'completed', output: [item], usage };
  sse(res, [
    { event: 'response.created', data: { type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress', output: [] } } },
    { event: 'response.output_item.added', data: { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item } },
    { event: 'response.output_item.done', data: { type: 'response.output_item.done', sequence_number: 2, output_index: 0, item } },
    { event: 'response.completed', data: { type: 'response.completed', sequence_number: 3, response } },
  ]);
}

function answerChat(res: ServerResponse, body: Body, step: Step, id: string): void {
  const model = String(body.model ?? 'model');
  const created = Math.floor(Date.now() / 1000);
  const message = 'tool' in step ? { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: step.tool, arguments: JSON.stringify(step.input) } }] } : { role: 'assistant', content: step.text };
  const finish = 'tool' in step ? 'tool_calls' : 'stop';
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (body.stream !== true) {
    json(res, { id: `chatcmpl-${id}`, object: 'chat.completion', created, model, choices: [{ index: 0, message, finish_reason: finish }], usage });
    return;
  }
  const delta = 'tool' in step ? { role: 'assistant', content: null, tool_calls: [{ index: 0, id, type: 'function', function: { name: step.tool, arguments: JSON.stringify(step.input) } }] } : { role: 'assistant', content: step.text };
  sse(res, [
    { data: { id: `chatcmpl-${id}`, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: null }] } },
    { data: { id: `chatcmpl-${id}`, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta: {}, finish_reason: finish }], usage } },
    { data: '[DONE]' },
  ]);
}

/** What a model list asks for (`/v1/models`): one model, so a client that checks finds it. */
function models(res: ServerResponse, format: WireFormat): void {
  if (format === 'gemini') json(res, { models: [{ name: 'models/gemini-2.5-pro' }] });
  else json(res, { object: 'list', data: [{ id: 'test-model', object: 'model', created: 0, owned_by: 'turnback' }] });
}

async function readBody(req: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.length === 0) return {};
  try {
    return JSON.parse(text) as Body;
  } catch {
    return { raw: text };
  }
}

/** Starts a server of `format` on 127.0.0.1 (a free port) playing `script`. */
export async function startModelServer(format: WireFormat, script: Script): Promise<ModelServer> {
  const requests: SeenRequest[] = [];
  const calls: ModelServer['calls'] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const receivedAt = performance.now();
      const body = await readBody(req);
      const url = req.url ?? '/';
      const seen: SeenRequest = { method: req.method ?? 'GET', url, body, answered: '', receivedAt };
      requests.push(seen);
      if (req.method === 'GET' || url.includes('count_tokens') || url.includes(':countTokens')) {
        seen.answered = 'models';
        if (url.includes('count_tokens')) json(res, { input_tokens: 10 });
        else if (url.includes(':countTokens')) json(res, { totalTokens: 10 });
        else models(res, format);
        return;
      }
      const items = format === 'anthropic' ? anthropicItems(body) : format === 'gemini' ? geminiItems(body) : format === 'responses' ? responsesItems(body) : chatItems(body);
      let at: ReturnType<typeof stepFor>;
      try {
        at = offersTools(format, body) ? stepFor(script, items) : undefined;
      } catch (error) {
        // A step the script cannot fill: said in the failing test's message, not retried into silence.
        seen.answered = `refused: ${(error as Error).message}`;
        throw error;
      }
      const step: Step = at?.step ?? { text: format === 'gemini' && url.includes(':generateContent') ? '{"reasoning":"the turn is done","next_speaker":"user"}' : 'ok' };
      const id = callId(format === 'anthropic' ? 'toolu_' : 'call_', at?.turn ?? 0, at?.index ?? 0);
      if (at !== undefined && 'tool' in step) calls.push({ turn: at.turn, index: at.index, tool: step.tool, id });
      seen.answered = at === undefined ? 'side request' : `turn ${at.turn} step ${at.index}: ${'tool' in step ? step.tool : 'text'}`;
      if (format === 'anthropic') answerAnthropic(res, body, step, id);
      else if (format === 'gemini') answerGemini(res, url, step);
      else if (format === 'responses') answerResponses(res, body, step, id);
      else answerChat(res, body, step, id);
    })().catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
