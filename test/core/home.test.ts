import { readdir, readFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { homeFolder } from '../../src/core/home.js';

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await sourceFiles(full)));
    else if (entry.name.endsWith('.ts')) files.push(full);
  }
  return files;
}

describe('the home folder', () => {
  it("is the given environment's HOME, never the process's own when another is given", () => {
    expect(homeFolder({ HOME: '/home/someone-else' })).toBe('/home/someone-else');
    expect(homeFolder({ ...process.env, HOME: '/elsewhere' })).toBe('/elsewhere');
  });

  it.runIf(process.platform !== 'win32')("without HOME (or with an empty one) is the account's, not the process's HOME", () => {
    const account = os.userInfo().homedir;
    expect(homeFolder({})).toBe(account);
    expect(homeFolder({ HOME: '' })).toBe(account);
  });

  it('is read from the environment everywhere in src/: no os.homedir() outside src/core/home.ts', async () => {
    // os.homedir() reads the C environment, which a served command's environment never reaches.
    const offenders: string[] = [];
    for (const file of await sourceFiles(src)) {
      if (file === path.join(src, 'core', 'home.ts')) continue;
      // The code, without its comments (which may name os.homedir() to say why it is not used).
      const code = (await readFile(file, 'utf8')).replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
      if (/homedir\s*\(/.test(code)) offenders.push(path.relative(src, file));
    }
    expect(offenders).toEqual([]);
  });
});
