import { describe, expect, it } from 'vitest';
import { watcherLine } from '../../src/cli/info.js';

// What `turnback status` says about the project's watcher (issue #28): watching, not vouching and
// why, or off; and what the verification sweep found.

const at = (iso: string): string => `at(${iso})`;

describe("status's watcher line", () => {
  it('says when the watcher vouches, and how often the verification sweep agreed with it', () => {
    expect(watcherLine({ state: 'watching', backend: 'watchman 4.9.0', verified: 0, disagreements: 0 }, at)).toBe('watcher: watching (watchman 4.9.0); not verified yet');
    expect(watcherLine({ state: 'watching', backend: 'watchman 4.9.0', verified: 3, disagreements: 0 }, at)).toBe('watcher: watching (watchman 4.9.0); verified 3 times, no disagreement');
  });

  it('says why it does not vouch, that pictures sweep meanwhile, and the last disagreement (its path escaped)', () => {
    const line = watcherLine(
      { state: 'not-vouching', reason: 'disagreement', detail: 'the verification sweep found a file the watcher did not report', backend: 'watchman 4.9.0', verified: 2, disagreements: 1, lastDisagreement: { path: 'src/\u001b[31mx', at: 0 } },
      at,
    );
    expect(line).toBe('watcher: not vouching (disagreement: the verification sweep found a file the watcher did not report): the next picture sweeps the whole tree; verified 2 times, 1 disagreement, the last src/\\e[31mx at at(1970-01-01T00:00:00.000Z)');
  });

  it('says it is off, and why, when nothing watches', () => {
    expect(watcherLine({ state: 'off', detail: 'watchman is not installed' }, at)).toBe('watcher: off (watchman is not installed): every picture sweeps the whole tree');
    expect(watcherLine({ state: 'starting', detail: 'the watcher is starting' }, at)).toBe('watcher: starting (the watcher is starting)');
  });
});
