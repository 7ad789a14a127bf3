import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

/**
 * The pipe dialogue of `turnback undo` (no terminal): pure parts first, so tests drive them
 * without a process. A number picks a picture; anything else cancels. Only `y`, `Y`, `yes` and
 * `Yes` confirm.
 */

/** The 0-based index picked by a typed line, or `undefined` (cancel). */
export function parsePick(line: string | undefined, count: number): number | undefined {
  if (line === undefined) return undefined;
  const text = line.trim();
  if (!/^[0-9]{1,6}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= 1 && n <= count ? n - 1 : undefined;
}

/** True for the answers that confirm a restore. */
export function isYes(line: string | undefined): boolean {
  return line !== undefined && ['y', 'Y', 'yes', 'Yes'].includes(line.trim());
}

/** Reads lines one at a time from a stream; `undefined` at the end of input. */
export class LineReader {
  readonly #lines: AsyncIterator<string>;
  readonly #close: () => void;
  readonly #echo: boolean;

  constructor(input: Readable) {
    // Piped answers are not echoed by a terminal; end the prompt line ourselves.
    this.#echo = (input as { isTTY?: boolean }).isTTY !== true;
    const rl = createInterface({ input, crlfDelay: Infinity, terminal: false });
    this.#lines = rl[Symbol.asyncIterator]();
    this.#close = () => rl.close();
  }

  /** Prints `prompt` (no newline) and reads the next line. */
  async ask(output: Writable, prompt: string): Promise<string | undefined> {
    output.write(prompt);
    const next = await this.#lines.next();
    if (next.done === true) {
      output.write('\n');
      return undefined;
    }
    if (this.#echo) output.write('\n');
    return next.value;
  }

  close(): void {
    this.#close();
  }
}

/** Keys the terminal picker understands. */
export type PickerKey = 'up' | 'down' | 'enter' | 'cancel' | 'other';

/** Decodes one raw-mode chunk from the terminal. */
export function decodeKey(chunk: string): PickerKey {
  switch (chunk) {
    case '\u001b[A':
    case '\u001bOA':
    case 'k':
      return 'up';
    case '\u001b[B':
    case '\u001bOB':
    case 'j':
      return 'down';
    case '\r':
    case '\n':
      return 'enter';
    case '\u001b':
    case '\u0003':
    case 'q':
      return 'cancel';
    default:
      return 'other';
  }
}

/** The picker's state: the highlighted row, and how it ended. */
export interface PickerState {
  index: number;
  done?: 'chosen' | 'cancelled';
}

/** One key applied to the picker. Pure. */
export function pickerStep(state: PickerState, key: PickerKey, count: number): PickerState {
  if (state.done !== undefined) return state;
  switch (key) {
    case 'up':
      return { index: Math.max(0, state.index - 1) };
    case 'down':
      return { index: Math.min(count - 1, state.index + 1) };
    case 'enter':
      return { index: state.index, done: 'chosen' };
    case 'cancel':
      return { index: state.index, done: 'cancelled' };
    case 'other':
      return state;
  }
}

/** The rows of the picker window (at most `height`), the highlighted one marked `›`. */
export function pickerLines(items: readonly string[], index: number, height = 10): string[] {
  const start = Math.min(Math.max(0, index - Math.floor(height / 2)), Math.max(0, items.length - height));
  return items.slice(start, start + height).map((item, i) => `${start + i === index ? '›' : ' '} ${item}`);
}

/** A raw-mode terminal session for the picker: read keys, redraw a block of lines in place. */
export class TerminalPicker {
  readonly #input: NodeJS.ReadStream;
  readonly #output: NodeJS.WriteStream;
  #drawn = 0;

  constructor(input: NodeJS.ReadStream, output: NodeJS.WriteStream) {
    this.#input = input;
    this.#output = output;
  }

  /** Replaces the previously drawn block with `lines`. */
  draw(lines: readonly string[]): void {
    const width = Math.max(20, this.#output.columns ?? 80);
    let text = this.#drawn > 0 ? `\u001b[${this.#drawn}A\r\u001b[J` : '';
    // Long lines are cut so each one occupies exactly one terminal row and redraw stays exact.
    text += lines.map((line) => (line.length >= width ? `${line.slice(0, width - 2)}…` : line)).join('\n');
    text += '\n';
    this.#output.write(text);
    this.#drawn = lines.length;
  }

  /** Waits for one key in raw mode. */
  key(): Promise<PickerKey> {
    return new Promise((resolve) => {
      const wasRaw = this.#input.isRaw;
      this.#input.setRawMode(true);
      this.#input.resume();
      this.#input.once('data', (data: Buffer) => {
        this.#input.setRawMode(wasRaw);
        this.#input.pause();
        resolve(decodeKey(data.toString('utf8')));
      });
    });
  }

  /** Lets the user move through `items`; resolves the chosen index or `undefined` (Esc, Ctrl-C). */
  async pick(header: string, items: readonly string[], footer: string): Promise<number | undefined> {
    let state: PickerState = { index: 0 };
    for (;;) {
      this.draw([header, ...pickerLines(items, state.index), footer]);
      state = pickerStep(state, await this.key(), items.length);
      if (state.done === 'chosen') return state.index;
      if (state.done === 'cancelled') return undefined;
    }
  }

  /** Shows `lines` and waits for Enter (true) or Esc / Ctrl-C (false). Other keys are ignored. */
  async confirm(lines: readonly string[], footer: string): Promise<boolean> {
    this.#drawn = 0;
    this.draw([...lines, footer]);
    for (;;) {
      const key = await this.key();
      if (key === 'enter') return true;
      if (key === 'cancel') return false;
    }
  }
}
