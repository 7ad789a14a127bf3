import { withThousands } from '../core/numbers.js';
import type { TextSink } from '../server/seam.js';

/** Pictures shorter than this print nothing; longer ones get a progress line. */
const DEFAULT_AFTER_MS = 1000;

/**
 * The delay before the progress line appears: `TURNBACK_PROGRESS_AFTER_MS` (milliseconds, a
 * whole number ≥ 0) when set, else about a second. The variable exists so tests (and people who
 * want the line always, or never) can choose; anything else in it is ignored.
 */
export function progressDelayMs(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.TURNBACK_PROGRESS_AFTER_MS;
  if (text === undefined || !/^\d{1,9}$/.test(text)) return DEFAULT_AFTER_MS;
  return Number(text);
}

/** Counts a picture reports while it runs. */
export interface PictureProgress {
  /** Folder entries listed, folders included. */
  walked: number;
  /** Files the walk found (folders not counted); `walked` stands in when a picture does not say. */
  files?: number;
  copied: number;
  toCopy: number;
}

/**
 * A progress line on stderr once a picture has taken longer than {@link progressDelayMs}: on a
 * terminal one line rewritten in place as counts arrive, elsewhere (logs, pipes) one line when it
 * starts and one when it ends, so a log is not flooded. Nothing at all for a quick picture.
 */
export class Progress {
  readonly #tty: boolean;
  readonly #started = Date.now();
  readonly #stream: TextSink;
  readonly #done: string;
  #shown = false;
  #last: string;
  readonly #timer: NodeJS.Timeout;

  /**
   * @param what the line shown until counts arrive, e.g. `turnback: taking a picture before make…`
   * @param done the closing words, e.g. `picture taken` (followed by the time)
   */
  constructor(stream: TextSink, what: string, done = 'picture taken') {
    this.#stream = stream;
    this.#tty = stream.isTTY === true;
    this.#last = what;
    this.#done = done;
    this.#timer = setTimeout(() => this.#show(), progressDelayMs());
    this.#timer.unref();
  }

  /** New counts from the picture. */
  update(progress: PictureProgress): void {
    this.#last = `turnback: taking a picture… ${withThousands(progress.files ?? progress.walked)} files seen, ${withThousands(progress.copied)} of ${withThousands(progress.toCopy)} copied`;
    if (this.#shown && this.#tty) this.#show();
  }

  #show(): void {
    if (this.#tty) this.#stream.write(`\r\u001b[K${this.#last}`);
    else if (!this.#shown) this.#stream.write(`${this.#last}\n`);
    this.#shown = true;
  }

  /**
   * Ends the line without a "taken" line: the picture failed, and what follows says why. Safe to
   * call twice, and before or after {@link Progress.done}.
   */
  abandon(): void {
    clearTimeout(this.#timer);
    if (this.#shown && this.#tty) this.#stream.write('\r\u001b[K');
    this.#shown = false;
  }

  /** Ends the line (if one was shown) with the time taken. Safe to call twice. */
  done(): void {
    clearTimeout(this.#timer);
    if (!this.#shown) return;
    this.#shown = false;
    const seconds = ((Date.now() - this.#started) / 1000).toFixed(1);
    this.#stream.write(`${this.#tty ? '\r\u001b[K' : ''}turnback: ${this.#done} in ${seconds} s\n`);
  }
}
