import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { AGENT_BINARIES, AGENTS_REQUIRED, agentBin, missingReason, pinnedVersion, type HarnessAgent } from './harness.js';

// Which of the real agents this run drives: the one line `npm test` prints when some are
// skipped, and under TURNBACK_TEST_AGENTS=required (.ci/run) a failure naming the missing ones.

const agents = Object.keys(AGENT_BINARIES) as HarnessAgent[];
const missing = agents.flatMap((agent) => {
  const reason = missingReason(agent);
  return reason === undefined ? [] : [`${agent} (${reason})`];
});
if (missing.length > 0 && !AGENTS_REQUIRED) console.warn(`turnback agent harness: skipped ${missing.join(', ')}: npm install --prefix test/agents --no-save installs them`);

describe('the real agents of the harness', () => {
  it('are each pinned to an exact version', async () => {
    for (const agent of agents) expect(await pinnedVersion(agent)).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it.runIf(AGENTS_REQUIRED)('are all installed when the run requires them', () => {
    expect(missing).toEqual([]);
  });

  // An installed agent is the very version pinned: an update that changes a payload shape must
  // fail here first, not at a user's.
  it.each(agents.filter((agent) => missingReason(agent) === undefined))('%s is the pinned version', async (agent) => {
    const printed = execFileSync(agentBin(agent), ['--version'], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' }, timeout: 60_000 });
    expect(printed).toContain(await pinnedVersion(agent));
  });
});
