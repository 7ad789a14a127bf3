import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, isCredentialPath, isHookSecretPath, resolveCoverage, workspaceRefusal } from '../../src/capture/coverage.js';
import { isCheckpointError } from '../../src/core/errors.js';
import { tempDir } from './helpers.js';

describe('resolveCoverage', () => {
  it('applies the defaults', () => {
    const c = resolveCoverage({});
    expect(c.maxFileMib).toBe(DEFAULT_LIMITS.maxFileMib);
    expect(c.maxPictureFiles).toBe(10_000);
    expect(c.maxPictureMib).toBe(500);
    expect(c.maxPictureSeconds).toBe(10);
    expect(c.maxWalkEntries).toBe(100_000);
    expect(c.maxDepth).toBe(64);
    expect(c.maxFileBytes).toBe(100 * 1024 * 1024);
    expect(c.skip).toEqual([]);
  });

  it('rejects bad limits and skip lists with INVALID_CONFIG', () => {
    const bad: unknown[] = [{ maxFileMib: -1 }, { maxPictureFiles: 1.5 }, { maxDepth: Number.NaN }, { maxWalkEntries: '10' }, { skip: 'out/' }, { skip: [''] }, { skip: [3] }];
    for (const options of bad) {
      let caught: unknown;
      try {
        resolveCoverage(options as never);
      } catch (error) {
        caught = error;
      }
      expect(isCheckpointError(caught, 'INVALID_CONFIG'), JSON.stringify(options)).toBe(true);
    }
  });

  it('matches skip patterns gitignore-style from the project root', () => {
    const c = resolveCoverage({ skip: ['out/', '*.tmp', '/only-root.txt'] });
    expect(c.isSkipped('out', true)).toBe(true);
    expect(c.isSkipped('out', false)).toBe(false);
    expect(c.isSkipped('a/b/x.tmp', false)).toBe(true);
    expect(c.isSkipped('only-root.txt', false)).toBe(true);
    expect(c.isSkipped('sub/only-root.txt', false)).toBe(false);
  });
});

describe('isCredentialPath', () => {
  it.each([
    ['.env', true],
    ['app/.env', true],
    ['.env.local', true],
    ['.env.production', true],
    ['.env.example', false],
    ['.env.sample', false],
    ['.env.template', false],
    ['.env.local.example', false],
    ['certs/server.pem', true],
    ['tls.KEY', true],
    ['id.p12', true],
    ['x.pfx', true],
    ['.secrets/anything.txt', true],
    ['a/.secrets/deep/file', true],
    ['.secrets', false],
    ['keys.ts', false],
    ['environment.ts', false],
    ['.envrc', false],
    ['id_rsa', false],
    // Claude Code's file of this machine alone: turnback's install writes the hook secret there.
    ['.claude/settings.local.json', true],
    ['.CLAUDE/Settings.Local.JSON', true],
    ['packages/web/.claude/settings.local.json', true],
    ['.claude/settings.json', false],
    ['settings.local.json', false],
    ['.claude/settings.local.json.bak', false],
    ['my.claude/settings.local.json', false],
    // The server's endpoint file, should XDG_STATE_HOME point into a project.
    ['.state/turnback/hook-endpoint.json', true],
    ['hook-endpoint.json', false],
  ])('%s -> %s', (p, expected) => {
    expect(isCredentialPath(p)).toBe(expected);
  });
});

describe('isHookSecretPath', () => {
  it('the hook secret\'s file is never copied, even with copyCredentials; other credentials follow the option', () => {
    expect(isHookSecretPath('.claude/settings.local.json')).toBe(true);
    expect(isHookSecretPath('.env')).toBe(false);
    const copying = resolveCoverage({ copyCredentials: true });
    expect(copying.isUncopiedCredential('.claude/settings.local.json')).toBe(true);
    expect(copying.isUncopiedCredential('sub/.claude/settings.local.json')).toBe(true);
    expect(copying.isUncopiedCredential('.env')).toBe(false);
    const defaults = resolveCoverage({});
    expect(defaults.isUncopiedCredential('.claude/settings.local.json')).toBe(true);
    expect(defaults.isUncopiedCredential('.env')).toBe(true);
  });
});

describe('workspaceRefusal', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await tempDir();
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('refuses the home folder, also through a symlink', async () => {
    expect(workspaceRefusal(dir, dir)?.reason).toBe('home');
    await fs.symlink(dir, path.join(dir, 'link'));
    expect(workspaceRefusal(path.join(dir, 'link'), dir)?.reason).toBe('home');
  });

  it('refuses the root folder', () => {
    expect(workspaceRefusal('/', dir)).toEqual({ reason: 'root', detail: expect.stringContaining('root folder') });
  });

  it('refuses a missing path or a file', async () => {
    expect(workspaceRefusal(path.join(dir, 'missing'), '/nonexistent-home')?.reason).toBe('not-a-directory');
    await fs.writeFile(path.join(dir, 'f'), 'x');
    expect(workspaceRefusal(path.join(dir, 'f'), '/nonexistent-home')?.reason).toBe('not-a-directory');
  });

  it('accepts an ordinary project folder, including one inside home', async () => {
    await fs.mkdir(path.join(dir, 'project'));
    expect(workspaceRefusal(path.join(dir, 'project'), dir)).toBeUndefined();
  });
});
