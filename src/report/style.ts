/**
 * How report lines are decorated. Reports are pure and return plain text by default; the CLI
 * passes a colouring style only when it writes to a terminal without `NO_COLOR`.
 */
export interface LineStyle {
  /** A flagged line's marker and flags (a loss the reader should look at). */
  warn(text: string): string;
  /** Secondary text: counts, hints, notes. */
  dim(text: string): string;
  /** Emphasis: headers and the undo command offered. */
  bold(text: string): string;
}

/** The identity style: plain text, used for pipes, `NO_COLOR`, tests and `--json` callers. */
export const plainStyle: LineStyle = {
  warn: (text) => text,
  dim: (text) => text,
  bold: (text) => text,
};
