/**
 * turnback/acp — turnback on the agent side of the Agent Client Protocol
 * (`@agentclientprotocol/sdk` 2.x is an optional peer dependency, needed only by this entry):
 * {@link withWorkspaceCheckpoints} registers seed 000's `session/workspace_checkpoint` and seed
 * 003's `session/rollback` / `session/redo` on an SDK agent app.
 *
 * @packageDocumentation
 */
export {
  REDO_METHOD,
  RESTORE_TOOL_CALL_METHOD,
  ROLLBACK_METHOD,
  WORKSPACE_CHECKPOINT_ALIAS,
  WORKSPACE_CHECKPOINT_METHOD,
  parseWorkspaceCheckpointParams,
  withWorkspaceCheckpoints,
  type AcpCheckpointOptions,
  type TurnMoveResult,
  type WorkspaceCheckpointParams,
} from './adapters/acp.js';
export { runAcpProxy, type AcpProxyOptions } from './adapters/acp-proxy.js';
