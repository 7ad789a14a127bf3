import { mkdir, symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { realPathOf } from '../../src/fs/paths.js';
import { isCheckpointError } from '../../src/core/errors.js';
import { tempFolder } from '../helpers/temp.js';

// The one function that turns a path an agent sends into where it really is (issue #29).

describe('realPathOf', () => {
  it('resolves a link to the project, a relative name against a linked folder, and a file that does not exist yet through its real parent', async () => {
    const root = await tempFolder('turnback-realpath-');
    const proj = path.join(root, 'proj');
    await mkdir(path.join(proj, 'src'), { recursive: true });
    await writeFile(path.join(proj, 'notes.txt'), 'n\n');
    await symlink(proj, path.join(root, 'link'));
    expect(await realPathOf(path.join(root, 'link', 'notes.txt'), '/')).toEqual({ real: path.join(proj, 'notes.txt') });
    expect(await realPathOf('notes.txt', path.join(root, 'link'))).toEqual({ real: path.join(proj, 'notes.txt') });
    expect(await realPathOf(path.join(root, 'link', 'src', 'new', 'deep.ts'), '/')).toEqual({ real: path.join(proj, 'src', 'new', 'deep.ts') });
  });

  it('a final component that is a link gives its own entry and its target; a dangling one, the link alone', async () => {
    const root = await tempFolder('turnback-realpath-');
    const proj = path.join(root, 'proj');
    await mkdir(proj);
    await writeFile(path.join(proj, 'target.txt'), 't\n');
    await symlink('target.txt', path.join(proj, 'alias.txt'));
    await symlink('missing.txt', path.join(proj, 'dangling.txt'));
    expect(await realPathOf(path.join(proj, 'alias.txt'), '/')).toEqual({ real: path.join(proj, 'target.txt'), link: path.join(proj, 'alias.txt') });
    expect(await realPathOf(path.join(proj, 'dangling.txt'), '/')).toEqual({ real: path.join(proj, 'dangling.txt') });
  });

  it('a name too long, a loop of links, an empty or NUL path: INVALID_PATH, typed', async () => {
    const root = await tempFolder('turnback-realpath-');
    await symlink(path.join(root, 'b'), path.join(root, 'a'));
    await symlink(path.join(root, 'a'), path.join(root, 'b'));
    for (const [input, base] of [[path.join(root, 'x'.repeat(300), 'f'), '/'], [path.join(root, 'a', 'f'), '/'], ['', root], ['a\0b', root]] as const) {
      const error = await realPathOf(input, base).then(() => undefined, (e: unknown) => e);
      expect(isCheckpointError(error, 'INVALID_PATH'), `${input.slice(0, 40)}: ${String(error)}`).toBe(true);
    }
  });
});
