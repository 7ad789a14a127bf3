import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openObserver, sandbox } from './helpers.js';

// observer.treeMark: a whole-tree picture kept under a name, so that a later mark — in another
// process, of another session — says what changed in between, without recording anything on the
// timeline (the agent hooks split overlapping calls' windows with it).

describe('treeMark', () => {
  it('says what changed since the last mark of the name, across observers of other sessions, and records no checkpoint', async () => {
    const { project, storeDir } = await sandbox();
    await fs.writeFile(path.join(project, 'a.txt'), 'a\n');
    const one = await openObserver(project, storeDir, { sessionId: 'claude:one' });
    expect(await one.treeMark('events')).toEqual({ changes: [], first: true, partial: false });
    await one.close();
    await fs.writeFile(path.join(project, 'a.txt'), 'A\n');
    await fs.writeFile(path.join(project, 'b.txt'), 'b\n');
    const two = await openObserver(project, storeDir, { sessionId: 'codex:two' });
    const second = await two.treeMark('events');
    expect(second.first).toBe(false);
    expect(second.changes.map((c) => [c.path, c.kind])).toEqual([
      ['a.txt', 'changed'],
      ['b.txt', 'created'],
    ]);
    // Nothing changed since; then the mark is removed, and the next one starts afresh.
    expect((await two.treeMark('events', { keep: false })).changes).toEqual([]);
    expect((await two.treeMark('events')).first).toBe(true);
    expect(await two.store.list()).toEqual([]);
    // A mark is no session's open call.
    expect(await two.openCalls()).toEqual([]);
    await two.close();
  });
});
