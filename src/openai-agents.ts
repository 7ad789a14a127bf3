/**
 * turnback/openai-agents — turnback inside OpenAI Agents JS (`@openai/agents` is an optional peer
 * dependency, needed only by this entry): the savepoint tool as a function tool,
 * {@link withCheckpoint} for any function tool, and decorators for the apply-patch editor and the
 * local shell.
 *
 * @packageDocumentation
 */
export { checkpointedEditor, checkpointedShell, savepointTool, withCheckpoint, type WithCheckpointOptions } from './adapters/openai-agents.js';
