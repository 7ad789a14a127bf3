// What a person sees must be what is there: a file name or a label may hold control characters
// (ESC sequences retitle a terminal or move the cursor; a newline forges a line in the preview a
// person confirms) or bidirectional overrides. Every path and piece of outside text printed for a
// person goes through these; `--json` output stays exact.

/**
 * C0 and C1 controls, DEL, the zero-width and bidirectional formatting characters, and the lone
 * surrogates U+DC80–U+DCFF that stand for the raw bytes of a name that is not UTF-8
 * (fs/raw-names.ts; with the `u` flag a surrogate pair is one code point and never matches).
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\udc80-\udcff]/u;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'gu');

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e' };

function escapeChar(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.codePointAt(0) as number;
  // A raw byte of a name is shown as the byte itself, as git shows such a name.
  if (code >= 0xdc80 && code <= 0xdcff) return `\\x${(code - 0xdc00).toString(16)}`;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
}

/**
 * A path as shown to a person: as it is when it holds nothing unsafe; otherwise in double quotes
 * with C-style escapes (`"evil\e]0;x\x07"`), as git quotes such names, so it can never pass for
 * another name or a line of its own.
 */
export function shownPath(path: string): string {
  if (!UNSAFE.test(path)) return path;
  return `"${path.replace(/["\\]/g, (c) => `\\${c}`).replace(UNSAFE_ALL, escapeChar)}"`;
}

/** Free text from outside (a label, a command line, an error message) with its unsafe characters escaped. */
export function shownText(text: string): string {
  return UNSAFE.test(text) ? text.replace(UNSAFE_ALL, escapeChar) : text;
}
