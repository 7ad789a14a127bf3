import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FolderAnchors } from '../../src/fs/anchors.js';
import { nodeFileSystem, type FileSystem } from '../../src/fs/file-system.js';
import { makeRoot } from '../restore/fixtures.js';

// `confirm` is the check before every publish of a restore: the held folder must still be the
// one its path reaches from the root, through no link. Each way a folder can leave that place
// is made for real here, with the synchronous calls and with the promise API alone.
const { sync: _sync, ...promiseOnly } = nodeFileSystem;
const fileSystems: [string, FileSystem][] = [
  ['synchronous calls', nodeFileSystem],
  ['promise API only', promiseOnly],
];

let root: string;
let outside: string;
let anchors: FolderAnchors | undefined;
beforeEach(async () => {
  root = await makeRoot();
  outside = await makeRoot();
  await fs.mkdir(path.join(root, 'a', 'b'), { recursive: true });
});
afterEach(async () => {
  await anchors?.release();
  anchors = undefined;
});

describe.each(fileSystems)('FolderAnchors.confirm (%s)', (_name, fileSystem) => {
  const held = async (): Promise<{ a: FolderAnchors; dir: string }> => {
    anchors = new FolderAnchors(fileSystem, root);
    const dir = path.join(root, 'a', 'b');
    await anchors.hold(dir);
    return { a: anchors, dir };
  };

  it('holds while nothing moved, the root included', async () => {
    const { a, dir } = await held();
    expect(await a.confirm(dir)).toBe(true);
    await a.hold(root);
    expect(await a.confirm(root)).toBe(true);
  });

  it('fails when a folder above was moved out and a link to it stands in its place (the path still reaches the same folder)', async () => {
    const { a, dir } = await held();
    await fs.rename(path.join(root, 'a'), path.join(outside, 'a'));
    await fs.symlink(path.join(outside, 'a'), path.join(root, 'a'));
    // The path reaches the very folder held: only where it now lies tells it is outside.
    expect((await fs.stat(dir)).ino).toBe((await fs.stat(path.join(outside, 'a', 'b'))).ino);
    expect(await a.confirm(dir)).toBe(false);
  });

  it('fails when a folder above was renamed inside the root and a link to it stands in its place', async () => {
    const { a, dir } = await held();
    await fs.rename(path.join(root, 'a'), path.join(root, 'c'));
    await fs.symlink('c', path.join(root, 'a'));
    expect(await a.confirm(dir)).toBe(false);
  });

  it('fails when the folder itself was replaced by another of the same name, or removed', async () => {
    const { a, dir } = await held();
    await fs.rename(dir, path.join(root, 'a', 'old'));
    await fs.mkdir(dir);
    expect(await a.confirm(dir)).toBe(false);
    await fs.rmdir(dir);
    expect(await a.confirm(dir)).toBe(false);
  });

  it('holds again once the folder is back where it was', async () => {
    const { a, dir } = await held();
    await fs.rename(path.join(root, 'a'), path.join(root, 'c'));
    expect(await a.confirm(dir)).toBe(false);
    await fs.rename(path.join(root, 'c'), path.join(root, 'a'));
    expect(await a.confirm(dir)).toBe(true);
  });
});
