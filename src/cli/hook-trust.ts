import { realpath } from 'node:fs/promises';
import { homeFolder } from '../core/home.js';
import * as path from 'node:path';
import type { AgentSpec } from '../hooks/agents.js';
import { codexTrustGap, copilotTrustGap, geminiTrustGap, type TrustGap } from '../hooks/trust.js';
import { readRegularText } from '../fs/regular-file.js';

// Reads the agents' own trust records for src/hooks/trust.ts: Gemini CLI's trustedFolders.json,
// Codex's config.toml, Copilot CLI's config.json. A record that is missing is no trust; one that
// cannot be read is said as the reason.

function home(): string {
  return homeFolder();
}

/** Codex's config.toml: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`. */
export function codexConfigPath(): string {
  const codexHome = process.env.CODEX_HOME !== undefined && process.env.CODEX_HOME !== '' ? process.env.CODEX_HOME : path.join(home(), '.codex');
  return path.join(codexHome, 'config.toml');
}

/** The file's text, `undefined` when there is none. */
async function textOf(file: string): Promise<string | undefined> {
  try {
    return await readRegularText(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function realOrSelf(file: string): Promise<string> {
  try {
    return await realpath(file);
  } catch {
    return file;
  }
}

/** A JSON object's text read as the agents read it (JSON; `undefined` when absent). */
function jsonObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const parsed = JSON.parse(text) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
  return parsed as Record<string, unknown>;
}

/**
 * Why `spec` will not run the hooks in `hookFile`, and the step that trusts them, or `undefined`
 * (trusted, or an agent with no trust rule). `changed`: install has just written new commands.
 */
export async function trustGapOf(spec: AgentSpec, input: { projectRoot: string; user: boolean; hookFile: string; changed: boolean }): Promise<TrustGap | undefined> {
  const env = process.env;
  const project = await realOrSelf(input.projectRoot);
  let file = '';
  try {
    switch (spec.name) {
      case 'gemini': {
        if (input.user) return undefined;
        file = env.GEMINI_CLI_TRUSTED_FOLDERS_PATH !== undefined && env.GEMINI_CLI_TRUSTED_FOLDERS_PATH !== '' ? env.GEMINI_CLI_TRUSTED_FOLDERS_PATH : path.join(home(), '.gemini', 'trustedFolders.json');
        const rules = jsonObject(await textOf(file));
        const real: Record<string, unknown> = {};
        for (const [rule, level] of Object.entries(rules ?? {})) if (path.isAbsolute(rule)) real[level === 'TRUST_PARENT' ? path.join(await realOrSelf(path.dirname(rule)), path.basename(rule)) : await realOrSelf(rule)] = level;
        return geminiTrustGap({ project, rules: real, file, env });
      }
      case 'codex':
        file = codexConfigPath();
        return codexTrustGap({ text: await textOf(file), project: input.user ? undefined : project, hookFile: input.hookFile, changed: input.changed });
      case 'copilot': {
        if (input.user) return undefined;
        file = path.join(home(), '.copilot', 'config.json');
        const config = env.COPILOT_ALLOW_ALL === 'true' ? undefined : jsonObject(await textOf(file));
        return copilotTrustGap({ project, trustedFolders: config?.trusted_folders, file, env });
      }
      default:
        return undefined;
    }
  } catch (error) {
    return { why: `${spec.title}'s trust record ${file} cannot be read (${(error as Error).message})`, step: `fix ${file}, then trust the project in ${spec.title}` };
  }
}
