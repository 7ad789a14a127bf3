import { spawnSync } from 'node:child_process';
import { mkdir, realpath, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, cliRepo, type CliRepo, type CliResult } from './harness.js';

// Issue #26, point 3: three agents skip a project's hooks without a word until the person trusts
// them. Install reads each agent's own trust record and names the one step that trusts them;
// `hooks status` says why there has been no event; a trusted setup gets no such line.

/** `turnback ARGS` in the repository with `env` over its environment. */
function tbWith(repo: CliRepo, args: string[], env: NodeJS.ProcessEnv = {}): CliResult {
  const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: repo.proj, env: { ...repo.env, ...env }, input: '', encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function writeIn(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
}

describe('turnback hooks install and status: hooks the agent will not run until trusted', () => {
  it('Gemini CLI: an untrusted folder is named with its step; trustedFolders.json trusting it leaves no line', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const install = repo.tb(['hooks', 'install', 'gemini']);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain('not yet running: the project folder is not trusted in Gemini CLI');
    expect(install.stdout).toContain(`add ${JSON.stringify(await realpath(repo.proj))}: "TRUST_FOLDER" to ${path.join(repo.home, '.gemini', 'trustedFolders.json')}`);
    const status = repo.tb(['hooks', 'status']);
    expect(status.stdout).toContain('no event yet, because:\n  project: not running: the project folder is not trusted in Gemini CLI');
    // Distrusted by a rule of its parent's: still named.
    await writeIn(path.join(repo.home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [path.dirname(repo.proj)]: 'DO_NOT_TRUST' }));
    expect(repo.tb(['hooks', 'status']).stdout).toContain('marked DO_NOT_TRUST');
    // The longer rule, the project's own, wins (as in Gemini's checkPathTrust).
    await writeIn(path.join(repo.home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [path.dirname(repo.proj)]: 'DO_NOT_TRUST', [repo.proj]: 'TRUST_FOLDER' }));
    expect(repo.tb(['hooks', 'status']).stdout).not.toContain('not running');
    expect(repo.tb(['hooks', 'install', 'gemini']).stdout).not.toContain('not yet running');
    // The environment's word comes first.
    expect(tbWith(repo, ['hooks', 'status'], { GEMINI_CLI_TRUST_WORKSPACE: 'false' }).stdout).toContain('restricted mode');
  });

  it('Codex: an untrusted project, then new hooks, each with its step; trusted project and hooks leave no line', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const codexHome = path.join(repo.home, 'codex');
    const env = { CODEX_HOME: codexHome };
    const config = path.join(codexHome, 'config.toml');
    await writeIn(config, 'model = "o3"\n');
    const install = tbWith(repo, ['hooks', 'install', 'codex'], env);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain('not yet running: the project is not trusted in Codex');
    expect(install.stdout).toContain('trust the project, then trust the hooks in `/hooks`');
    expect(tbWith(repo, ['hooks', 'status'], env).stdout).toContain('no event yet, because:\n  project: not running: the project is not trusted in Codex');

    const proj = await realpath(repo.proj);
    await writeIn(config, `model = "o3"\n\n[projects.${JSON.stringify(proj)}]\ntrust_level = "trusted"\n`);
    expect(tbWith(repo, ['hooks', 'status'], env).stdout).toContain('Codex has no trust recorded for these hooks');
    // Reinstalled with other commands: new hooks are untrusted by their very definition.
    await writeIn(path.join(repo.proj, '.codex', 'hooks.json'), '{}\n');
    expect(tbWith(repo, ['hooks', 'install', 'codex'], env).stdout).toContain('not yet running: Codex runs a hook only once it is trusted, by its exact command, and these are new');

    const hooksFile = path.join(proj, '.codex', 'hooks.json');
    await writeIn(config, `model = "o3"\n\n[projects.${JSON.stringify(proj)}]\ntrust_level = "trusted"\n\n[hooks.state.${JSON.stringify(`${hooksFile}:pre_tool_use:0:0`)}]\ntrusted_hash = "sha256:0"\n`);
    expect(tbWith(repo, ['hooks', 'status'], env).stdout).not.toContain('not running');
    expect(tbWith(repo, ['hooks', 'install', 'codex'], env).stdout).not.toContain('not yet running');
  });

  it('GitHub Copilot CLI: an untrusted folder is named with its step; COPILOT_ALLOW_ALL=true or trusted_folders leave no line', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const install = repo.tb(['hooks', 'install', 'copilot']);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain('not yet running: the project folder is not trusted in GitHub Copilot CLI');
    expect(install.stdout).toContain('`--trust-folder`');
    expect(repo.tb(['hooks', 'status']).stdout).toContain('no event yet, because:\n  project: not running: the project folder is not trusted in GitHub Copilot CLI');
    // Only exactly "true" trusts the folder (the other truthy spellings approve tools alone).
    expect(tbWith(repo, ['hooks', 'status'], { COPILOT_ALLOW_ALL: '1' }).stdout).toContain('not running');
    expect(tbWith(repo, ['hooks', 'status'], { COPILOT_ALLOW_ALL: 'true' }).stdout).not.toContain('not running');
    await writeIn(path.join(repo.home, '.copilot', 'config.json'), JSON.stringify({ trusted_folders: [path.dirname(await realpath(repo.proj))] }));
    expect(repo.tb(['hooks', 'status']).stdout).not.toContain('not running');
    expect(repo.tb(['hooks', 'install', 'copilot']).stdout).not.toContain('not yet running');
  });

  it('Claude Code has no trust gate for its project hooks here: no such line', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude']).stdout).not.toContain('not yet running');
    expect(repo.tb(['hooks', 'status']).stdout).not.toContain('because');
  });
});
