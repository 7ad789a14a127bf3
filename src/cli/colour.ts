import { styleText } from 'node:util';
import type { LineStyle } from '../report/style.js';
import { plainStyle } from '../report/style.js';

/** True when `stream` should get colour: a terminal, and `NO_COLOR` unset or empty. */
export function wantsColour(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '') && env.TERM !== 'dumb';
}

/** The report style for `stream`: ANSI colour on a terminal, plain otherwise. */
export function styleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): LineStyle {
  if (!wantsColour(stream, env)) return plainStyle;
  return {
    warn: (text) => styleText('yellow', text),
    dim: (text) => styleText('dim', text),
    bold: (text) => styleText('bold', text),
  };
}
