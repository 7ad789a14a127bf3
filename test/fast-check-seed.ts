import fc from 'fast-check';
import { testSeed } from './helpers/seed.js';

// Every property test draws from one fixed seed, so a failure in CI replays as is; set
// TURNBACK_TEST_SEED to explore others (a failure prints the seed and path that replay it).
fc.configureGlobal({ seed: testSeed(20261202) });
