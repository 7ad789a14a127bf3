import { lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENTS } from '../../src/hooks/agents.js';
import { tempFolder } from '../helpers/temp.js';
import { listing } from '../session/helpers.js';
import { cliRepo } from './harness.js';

// `turnback hooks install` and `uninstall` never write through a symlink that leads out of the
// project (or, with --user, out of the home folder): for every agent's settings path, a link at
// the file itself or at the first folder of its path, pointing outside, is refused with the path
// and the reason, and nothing outside changes. A link that stays inside is followed.

const agents = Object.values(AGENTS);

/** The first folder of a settings path (`.claude`, `.github`), and the rest (`settings.json`, `hooks/turnback.json`). */
function split(relative: string): { top: string; rest: string } {
  const [top, ...rest] = relative.split('/');
  return { top: top as string, rest: rest.join('/') };
}

describe('hooks install and uninstall never follow a link out of the project', () => {
  it.each(agents.map((a) => [a.name, a] as const))('%s: a settings file linked to an outside file is refused, the outside file unchanged', async (_name, spec) => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const outside = await tempFolder('turnback-outside-');
    const victim = path.join(outside, 'victim.json');
    const original = '{\n  "mine": true\n}\n';
    await writeFile(victim, original);
    const file = path.join(repo.proj, spec.files.project);
    await mkdir(path.dirname(file), { recursive: true });
    await symlink(victim, file);
    const install = repo.tb(['hooks', 'install', spec.name]);
    expect(install.code).toBe(1);
    expect(install.stderr).toContain(file);
    expect(install.stderr).toContain('outside');
    expect(install.stderr).toContain('nothing was changed');
    expect(install.stdout).not.toContain('added to');
    const uninstall = repo.tb(['hooks', 'uninstall', spec.name]);
    expect(uninstall.code).toBe(1);
    expect(await readFile(victim, 'utf8')).toBe(original);
    expect(fs.readdirSync(outside)).toEqual(['victim.json']);
    expect((await lstat(file)).isSymbolicLink()).toBe(true);
  });

  it.each(agents.map((a) => [a.name, a] as const))('%s: the settings folder linked to an outside folder is refused, nothing is created there', async (_name, spec) => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const outside = await tempFolder('turnback-outside-');
    const { top } = split(spec.files.project);
    await symlink(outside, path.join(repo.proj, top));
    const before = await listing(outside);
    const install = repo.tb(['hooks', 'install', spec.name]);
    expect(install.code).toBe(1);
    expect(install.stderr).toContain(path.join(repo.proj, top));
    expect(install.stderr).toContain('outside');
    expect(repo.tb(['hooks', 'uninstall', spec.name]).code).toBe(1);
    expect(await listing(outside)).toEqual(before);
  });

  it.each(agents.map((a) => [a.name, a] as const))('%s --user: a settings folder linked out of the home folder is refused', async (_name, spec) => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const outside = await tempFolder('turnback-outside-');
    const { top } = split(spec.files.user);
    await symlink(outside, path.join(repo.home, top));
    const install = repo.tb(['hooks', 'install', spec.name, '--user']);
    expect(install.code).toBe(1);
    expect(install.stderr).toContain(path.join(repo.home, top));
    expect(repo.tb(['hooks', 'uninstall', spec.name, '--user']).code).toBe(1);
    expect(await listing(outside)).toEqual({});
  });

  // Copilot's settings sit a folder deeper (`.github/hooks/turnback.json`): issue #30 linked
  // `.github/hooks` itself out, with `.github` a real folder of the project.
  const deep = agents.flatMap((a) => (['project', 'user'] as const).filter((where) => a.files[where].split('/').length > 2).map((where) => [`${a.name} ${where === 'user' ? '--user' : 'project'}`, a, where] as const));
  it.each(deep)('%s: a deeper folder of the settings path linked out is refused, nothing is created there', async (_name, spec, where) => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const outside = await tempFolder('turnback-outside-');
    const base = where === 'user' ? repo.home : repo.proj;
    const folder = path.join(base, path.dirname(spec.files[where]));
    await mkdir(path.dirname(folder), { recursive: true });
    await symlink(outside, folder);
    const flags = where === 'user' ? ['--user'] : [];
    const install = repo.tb(['hooks', 'install', spec.name, ...flags]);
    expect(install.code).toBe(1);
    expect(install.stderr).toContain(folder);
    expect(install.stderr).toContain('outside');
    expect(install.stdout).not.toContain('added to');
    expect(repo.tb(['hooks', 'uninstall', spec.name, ...flags]).code).toBe(1);
    expect(await listing(outside)).toEqual({});
  });

  it.each([
    ['the default: the local file, HTTP hooks', [], 'settings.local.json'],
    ['--command-hooks: the committed file', ['--command-hooks'], 'settings.json'],
  ] as const)('a link that stays inside the project is followed, and install says where the file really is (%s)', async (_case, flags, name) => {
    const repo = await cliRepo({ 'config/claude/keep.txt': 'k\n' });
    await symlink(path.join(repo.proj, 'config', 'claude'), path.join(repo.proj, '.claude'));
    const install = repo.tb(['hooks', 'install', 'claude', ...flags]);
    expect(install.code, install.stderr).toBe(0);
    const real = path.join(repo.proj, 'config', 'claude', name);
    expect(install.stdout).toContain(`(a link to ${real})`);
    expect(JSON.parse(await readFile(real, 'utf8'))).toHaveProperty('hooks');
    if (name === 'settings.local.json') {
      // The secret's file, reached through the link, is still owner-only and kept out of git where it really is.
      expect((await lstat(real)).mode & 0o077).toBe(0);
      repo.git('check-ignore', '-q', 'config/claude/settings.local.json');
    }
    expect((await lstat(path.join(repo.proj, '.claude'))).isSymbolicLink()).toBe(true);
    expect(repo.tb(['hooks', 'uninstall', 'claude']).code).toBe(0);
    expect(fs.existsSync(real)).toBe(false);
    expect(fs.existsSync(path.join(repo.proj, 'config', 'claude', '.gitignore'))).toBe(false);
    expect(fs.existsSync(path.join(repo.proj, 'config', 'claude', 'keep.txt'))).toBe(true);
    if (flags.length === 0) repo.tb(['server', 'stop']);
  });
});
