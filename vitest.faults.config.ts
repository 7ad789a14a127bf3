import { defineConfig } from 'vitest/config';

// `npm run faults`: the fault campaign at full counts (test/faults/campaign.ts), one line per
// class at the end (test/faults/summary.ts). `npm test` runs the same files at quick counts.
export default defineConfig({
  test: {
    include: ['test/faults/*.test.ts'],
    globalSetup: ['test/global-setup.ts', 'test/faults/summary.ts'],
    env: { TURNBACK_FAULTS: 'full' },
    testTimeout: 1_800_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
