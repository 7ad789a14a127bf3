import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { aiSdkScenarios, type AiSdk } from './ai-sdk-scenarios.js';

// The real AI SDK 7, which needs Node >= 22, from a package folder of its own (test/ai7, installed
// by `.ci/run` with `npm ci --prefix test/ai7`): the project's dev dependency stays on ai 6, the
// last major that runs on Node 20. On Node 20, or without test/ai7 installed, the scenarios are
// skipped with the reason printed; TURNBACK_TEST_AI7=required (set by `.ci/run` on Node 22 and 24)
// turns that into a failure, so CI can never skip them silently.

const folder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'ai7', 'node_modules', 'ai');
const nodeMajor = Number(process.versions.node.split('.')[0]);
const why = nodeMajor < 22 ? `ai 7 needs Node >= 22 (this is ${process.versions.node})` : !existsSync(folder) ? 'test/ai7 is not installed (npm ci --prefix test/ai7)' : undefined;

let sdk: AiSdk | undefined;
if (why === undefined) {
  const entry = (sub: string): string => pathToFileURL(path.join(folder, 'dist', sub, 'index.js')).href;
  const ai = (await import(entry(''))) as typeof import('ai');
  const test = (await import(entry('test'))) as { MockLanguageModelV4: AiSdk['MockLanguageModel'] };
  sdk = { generateText: ai.generateText, stepCountIs: ai.stepCountIs, tool: ai.tool, MockLanguageModel: test.MockLanguageModelV4 };
} else if (process.env.TURNBACK_TEST_AI7 === 'required') {
  describe('turnback/ai-sdk with ai 7', () => {
    it('runs (TURNBACK_TEST_AI7=required)', () => {
      expect.fail(`the ai 7 scenarios cannot run: ${why}`);
    });
  });
} else {
  console.log(`turnback/ai-sdk with ai 7: skipped, ${why}`);
  describe('turnback/ai-sdk with ai 7', () => {
    it.skip(`skipped: ${why}`, () => undefined);
  });
}

if (sdk !== undefined) {
  const loaded = sdk;
  describe('ai 7 itself', () => {
    it('is the major this file is for', async () => {
      const { createRequire } = await import('node:module');
      const version = (createRequire(path.join(folder, 'package.json'))(path.join(folder, 'package.json')) as { version: string }).version;
      expect(version.split('.')[0]).toBe('7');
    });
  });
  aiSdkScenarios('turnback/ai-sdk with ai 7', () => loaded);
}
