import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { aiSdkScenarios } from './ai-sdk-scenarios.js';

// The real AI SDK 6 (the dev dependency: the last major that runs on Node 20).
aiSdkScenarios('turnback/ai-sdk with ai 6', () => ({ generateText, stepCountIs, tool, MockLanguageModel: MockLanguageModelV3 }));
