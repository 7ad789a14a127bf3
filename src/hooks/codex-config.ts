import { parse as parseToml } from 'smol-toml';

// Codex runs hooks only while its `hooks` feature is on: the default in current releases; older
// ones (and a person who turned it off) need `[features] hooks = true` in ~/.codex/config.toml
// (`codex_hooks`, its deprecated name, works too). Turning it on is a text edit of one line, so
// the file's comments and layout stay as they are (pure: text in, text out).

/** Whether a Codex config's features leave hooks on: `true`, `false`, or `undefined` (not said: the default, on). */
export function codexHooksFeature(text: string | undefined): boolean | undefined {
  if (text === undefined || text.trim().length === 0) return undefined;
  const config = parseToml(text) as { features?: Record<string, unknown> };
  const features = config.features ?? {};
  if (typeof features.hooks === 'boolean') return features.hooks;
  if (typeof features.codex_hooks === 'boolean') return features.codex_hooks;
  return undefined;
}

/**
 * `text` with `hooks = true` under `[features]`: the line replaced where the table says
 * `hooks` or `codex_hooks` already, added under the table's header where it has neither, or a
 * `[features]` table appended where there is none. `changed` is false when the feature was on
 * already by that table's word.
 *
 * @throws Error when `text` is not TOML (nothing is changed), or a `features` written in a form
 *   this edit does not handle (an inline table, dotted keys).
 */
export function enableCodexHooks(text: string | undefined): { text: string; changed: boolean } {
  if (codexHooksFeature(text) === true) return { text: text ?? '', changed: false };
  const source = text ?? '';
  const lines = source.split('\n');
  const header = lines.findIndex((line) => /^\s*\[features\]\s*(#.*)?$/.test(line));
  let next: string;
  if (header < 0) {
    if (/^\s*features\s*[.=]/m.test(source)) throw new Error('its features are written as an inline table or dotted keys: set hooks = true there yourself');
    next = `${source}${source.length === 0 || source.endsWith('\n') ? '' : '\n'}${source.length === 0 ? '' : '\n'}[features]\nhooks = true\n`;
  } else {
    let end = lines.findIndex((line, i) => i > header && /^\s*\[/.test(line));
    if (end < 0) end = lines.length;
    const keyLine = lines.findIndex((line, i) => i > header && i < end && /^\s*(hooks|codex_hooks)\s*=/.test(line));
    if (keyLine >= 0) lines[keyLine] = lines[keyLine]!.replace(/=\s*[^#]*/, '= true ').replace(/ $/, '');
    else lines.splice(header + 1, 0, 'hooks = true');
    next = lines.join('\n');
  }
  if (codexHooksFeature(next) !== true) throw new Error('the edit did not turn the feature on; nothing was changed');
  return { text: next, changed: true };
}
