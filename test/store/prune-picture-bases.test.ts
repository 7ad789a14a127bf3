import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { CheckpointObserver } from '../../src/session/observer.js';
import { CheckpointStore } from '../../src/store/store.js';
import { removeFolder, tempFolder } from '../helpers/temp.js';

// A picture base (state/pic-*) names its copies as columns — every record's hash in one string,
// the sizes apart — so no object key appears in its text. Prune must keep those copies all the
// same: the next picture reuses them without reading the files, and a change's pre-image is one.

const FILES = 3_000;
let dir: string;
let project: string;
let store: CheckpointStore;

beforeEach(async () => {
  dir = await tempFolder('turnback-prune-bases-');
  project = path.join(dir, 'project');
  fs.mkdirSync(project);
  for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(project, `f${i}.txt`), `content ${i}\n`.repeat(5));
  store = await CheckpointStore.open(path.join(dir, 'store'), { projectRoot: project });
});

afterEach(async () => {
  await store.close();
  await removeFolder(dir);
});

it('prune keeps every copy a picture base names, though no checkpoint names it', async () => {
  const observer = new CheckpointObserver({ store, sessionId: 's' });
  await observer.callBegin('c');
  await observer.callEnd('c');
  await observer.close();
  expect((await store.listState('pic-')).length).toBeGreaterThan(0);
  const objects = (await store.listObjects()).length;
  expect(objects).toBeGreaterThanOrEqual(FILES);
  for (const id of await store.sealedIds()) await store.dropCheckpoint(id);
  const report = await store.prune({ graceMs: 0 });
  expect(report.removedObjects).toBe(0);
  expect((await store.listObjects()).length).toBe(objects);
});
