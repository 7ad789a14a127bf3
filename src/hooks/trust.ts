import * as path from 'node:path';
import { parse as parseToml } from 'smol-toml';

// Whether an agent will run the hooks install wrote, read from the agent's own trust records
// (pure: their texts in, a verdict out). Three agents skip a project's hooks without a word
// until the person trusts them (CHECKPOINT-DESIGN.md, each agent's hook contract): Gemini CLI
// ignores an untrusted folder's settings; Codex runs a project's hooks only in a trusted project
// and each hook only once trusted by its command's hash; Copilot CLI loads a folder's hooks only
// in a trusted folder.

/** Why the agent will not run the hooks, and the one step that trusts them. */
export interface TrustGap {
  why: string;
  step: string;
}

/** `child` is `parent` or inside it (both absolute, normalized). */
function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Gemini CLI's verdict on `project` (checkPathTrust, packages/core/src/utils/trust.ts): the
 * environment first (`GEMINI_CLI_TRUST_WORKSPACE`, `GEMINI_RESTRICTED_MODE`), else the longest
 * rule of trustedFolders.json whose folder holds the project (`TRUST_PARENT` names a folder by
 * its child). `rules` come with their paths already real; `undefined` when trusted.
 */
export function geminiTrustGap(input: { project: string; rules: Record<string, unknown> | undefined; file: string; env: Record<string, string | undefined> }): TrustGap | undefined {
  const step = `open \`gemini\` in the project once and trust the folder, or add ${JSON.stringify(input.project)}: "TRUST_FOLDER" to ${input.file} (GEMINI_CLI_TRUST_WORKSPACE=true trusts it for one run)`;
  if (input.env.GEMINI_RESTRICTED_MODE === 'true' || input.env.GEMINI_CLI_TRUST_WORKSPACE === 'false') return { why: 'Gemini CLI runs in restricted mode here (GEMINI_RESTRICTED_MODE or GEMINI_CLI_TRUST_WORKSPACE=false), so it ignores the project\'s settings, hooks included', step };
  if (input.env.GEMINI_CLI_TRUST_WORKSPACE === 'true') return undefined;
  let longest = -1;
  let level: unknown;
  for (const [rule, trust] of Object.entries(input.rules ?? {})) {
    const folder = trust === 'TRUST_PARENT' ? path.dirname(rule) : rule;
    if (isInside(folder, input.project) && rule.length > longest) {
      longest = rule.length;
      level = trust;
    }
  }
  if (level === 'TRUST_FOLDER' || level === 'TRUST_PARENT') return undefined;
  if (level === 'DO_NOT_TRUST') return { why: `the project is marked DO_NOT_TRUST in ${input.file}, so Gemini CLI ignores its settings, hooks included`, step };
  return { why: 'the project folder is not trusted in Gemini CLI, which ignores an untrusted folder\'s settings, hooks included', step };
}

/**
 * Codex's verdict (its config.toml's text): a project install needs the project trusted
 * (`[projects."/abs"] trust_level = "trusted"`); every hook needs its own trust, recorded as
 * `[hooks.state."…"] trusted_hash`, a hash of the hook's definition that turnback cannot
 * recompute. So the hooks count as trusted only when `changed` is false (install wrote no new
 * command) and the state holds a trusted entry naming the hook file or its folder.
 *
 * @throws Error when the text is not TOML.
 */
export function codexTrustGap(input: { text: string | undefined; project: string | undefined; hookFile: string; changed: boolean }): TrustGap | undefined {
  const config = input.text === undefined || input.text.trim() === '' ? {} : (parseToml(input.text) as Record<string, unknown>);
  const projects = (config.projects ?? {}) as Record<string, { trust_level?: unknown } | undefined>;
  if (input.project !== undefined && projects[input.project]?.trust_level !== 'trusted') {
    return {
      why: 'the project is not trusted in Codex, which skips an untrusted project\'s hooks without a word',
      step: 'open `codex` in the project once, trust the project, then trust the hooks in `/hooks`',
    };
  }
  const state = ((config.hooks as { state?: unknown } | undefined)?.state ?? {}) as Record<string, unknown>;
  const named = Object.entries(state).some(
    ([key, value]) => (key.includes(input.hookFile) || key.includes(path.dirname(input.hookFile))) && typeof value === 'object' && value !== null && typeof (value as { trusted_hash?: unknown }).trusted_hash === 'string',
  );
  if (!input.changed && named) return undefined;
  return {
    why: input.changed ? 'Codex runs a hook only once it is trusted, by its exact command, and these are new' : 'Codex has no trust recorded for these hooks, and `codex exec` skips untrusted hooks without a word',
    step: 'open `codex` in the project once and trust the hooks in `/hooks` (`codex exec --dangerously-bypass-hook-trust` runs them for one run)',
  };
}

/**
 * Copilot CLI's verdict: a folder's hooks load only in a trusted folder. `COPILOT_ALLOW_ALL=true`
 * (exactly) trusts the working folder; else its config.json's `trusted_folders` (a folder trusts
 * what is inside it).
 */
export function copilotTrustGap(input: { project: string; trustedFolders: unknown; file: string; env: Record<string, string | undefined> }): TrustGap | undefined {
  if (input.env.COPILOT_ALLOW_ALL === 'true') return undefined;
  const folders = Array.isArray(input.trustedFolders) ? input.trustedFolders.filter((f): f is string => typeof f === 'string' && path.isAbsolute(f)) : [];
  if (folders.some((folder) => isInside(path.normalize(folder), input.project))) return undefined;
  return {
    why: `the project folder is not trusted in GitHub Copilot CLI (not in ${input.file}'s trusted_folders), which loads a folder's hooks only once it is trusted`,
    step: 'run `copilot` in the project once and trust the folder (remember it), or pass `--trust-folder` to `copilot -p` (COPILOT_ALLOW_ALL=true trusts the working folder)',
  };
}
