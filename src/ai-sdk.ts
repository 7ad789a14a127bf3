/**
 * turnback/ai-sdk — turnback inside the Vercel AI SDK (ai 6 and ai 7, by their shared tool
 * shape; `ai` is an optional peer dependency this entry never imports): the model's savepoint
 * tool as an AI SDK tool, and {@link withCheckpoint} for any AI SDK tool.
 *
 * @packageDocumentation
 */
export { savepointTool, withCheckpoint, type AiSdkExecuteOptions, type AiSdkSavepointTool, type InputOf, type ToolWithExecute, type WithCheckpointOptions } from './adapters/ai-sdk.js';
