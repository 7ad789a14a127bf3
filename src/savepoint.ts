/**
 * turnback/savepoint — the model's own savepoint tool (`undo_savepoint`), framework-neutral: a
 * name, a description, the JSON Schema the model sees and `execute`. Savepoints are checkpoints
 * of kind `savepoint` in the session's one store, restored through the one engine. The framework
 * adapters build on {@link createSavepointTool}, and on {@link checkpointedCall} for the tools they
 * wrap ({@link withCheckpoint} is that wrapper for any tool of the core shape).
 *
 * @packageDocumentation
 */
export {
  SAVEPOINT_TOOL_NAME,
  createSavepointTool,
  parseSavepointInput,
  savepointInput,
  type SavepointInput,
  type SavepointReport,
  type SavepointTool,
  type SavepointToolOptions,
} from './tools/savepoint-tool.js';
export { checkpointedCall, withCheckpoint, type ExecutableTool, type ToolCallCapture, type WithCheckpointOptions } from './tools/tool-call.js';
export { SAVEPOINT_BOUNDS, SAVEPOINT_CEILINGS, SAVEPOINT_DEFAULTS, type SavepointBounds, type SavepointLimits } from './capture/savepoint-walk.js';
export type { SavepointDiff, SavepointInfo, SavepointSaveOptions } from './session/savepoints.js';
