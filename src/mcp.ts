/**
 * turnback/mcp — turnback over the Model Context Protocol (`@modelcontextprotocol/sdk` is an
 * optional peer dependency, needed only by this entry): {@link createMcpServer} (the command
 * `turnback mcp` serves it on stdio) and {@link checkpointingClient} for MCP hosts.
 *
 * @packageDocumentation
 */
export {
  FILESYSTEM_SERVER_PATHS,
  checkpointingClient,
  createMcpServer,
  serveMcpStdio,
  type CheckpointingClientOptions,
  type McpServerOptions,
} from './adapters/mcp.js';
