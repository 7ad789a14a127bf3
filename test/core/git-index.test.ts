import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseGitIndex, parseGitIndexTable, tableObject } from '../../src/core/git-index.js';
import { withSeed } from '../helpers/seed.js';
import { tempFolder } from '../helpers/temp.js';

// The index as columns (what a long-lived process keeps) says what the entries say, for each index
// version git writes, with a conflict's three stages, an executable file and a link among them.

const git = (cwd: string, ...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' });

describe("git's index read as columns", () => {
  for (const version of [2, 3, 4]) {
    it(`gives the same paths, modes, stages, object ids and stats as the entries (index version ${version})`, async () => {
      await withSeed(28, async (random) => {
        const repo = await tempFolder();
        git(repo, 'init', '-q');
        const names: string[] = [];
        for (let i = 0; i < 300; i++) {
          const folder = `d${random.int(0, 12)}/e${random.int(0, 3)}`;
          await mkdir(path.join(repo, folder), { recursive: true });
          const name = `${folder}/f${i}-${'x'.repeat(random.int(0, 40))}.txt`;
          await writeFile(path.join(repo, name), `${i}\n`, { mode: i % 7 === 0 ? 0o755 : 0o644 });
          names.push(name);
        }
        execFileSync('ln', ['-s', 'd0', path.join(repo, 'link')]);
        await writeFile(path.join(repo, 'both.txt'), 'base\n');
        git(repo, 'add', '-A');
        git(repo, 'commit', '-qm', 'base');
        git(repo, 'checkout', '-qb', 'other');
        await writeFile(path.join(repo, 'both.txt'), 'other\n');
        git(repo, 'commit', '-qam', 'other');
        git(repo, 'checkout', '-q', '-');
        await writeFile(path.join(repo, 'both.txt'), 'main\n');
        git(repo, 'commit', '-qam', 'main');
        try {
          git(repo, 'merge', '-q', 'other');
        } catch {
          // The conflict is the point: both.txt now has stages 1, 2 and 3.
        }
        git(repo, 'update-index', `--index-version=${version}`);
        const bytes = await readFile(path.join(repo, '.git', 'index'));
        const entries = parseGitIndex(bytes, 20, { objects: true, stat: true });
        const table = parseGitIndexTable(bytes, 20);
        expect(entries).toBeDefined();
        expect(table?.count).toBe(entries?.length);
        expect(entries?.filter((e) => e.path === 'both.txt').map((e) => e.stage)).toEqual([1, 2, 3]);
        expect(entries?.some((e) => e.mode === 0o120000)).toBe(true);
        expect(entries?.some((e) => e.mode === 0o100755)).toBe(true);
        const fromTable = (entries ?? []).map((_, i) => ({
          path: table?.paths[i],
          mode: table?.modes[i],
          stage: table?.stages[i],
          object: table === undefined ? undefined : tableObject(table, i),
          stat: { mtimeMs: table?.mtimes[i], ino: table?.inos[i], size: table?.sizes[i] },
        }));
        expect(fromTable).toEqual(entries);
      });
    });
  }

  it('reads nothing from a cut or foreign file, as the entries do', () => {
    expect(parseGitIndexTable(Buffer.from('DIRC\u0000\u0000\u0000\u0002\u0000\u0000\u0000\u0005', 'latin1'))).toBeUndefined();
    expect(parseGitIndexTable(Buffer.from('not an index at all', 'latin1'))).toBeUndefined();
    expect(parseGitIndexTable(Buffer.alloc(0))).toBeUndefined();
  });
});
