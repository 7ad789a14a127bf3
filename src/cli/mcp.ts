import * as path from 'node:path';
import { loadContext, observerFor, openStore, type GlobalOptions } from './context.js';
import { EXIT } from './exit-codes.js';
import { CliExit, type Io } from './io.js';

/** What the built `turnback/mcp` entry gives the command. */
interface McpEntry {
  serveMcpStdio(options: { observer: ReturnType<typeof observerFor>; name?: string; version?: string }): Promise<void>;
}

/**
 * Loads the built `turnback/mcp` entry beside the command (`dist/mcp.cjs`): the command stays one
 * small file, and the MCP SDK (a dependency of the command) is loaded only by `turnback mcp`.
 */
function loadMcpEntry(): McpEntry {
  try {
    return require(path.join(__dirname, '..', 'mcp.cjs')) as McpEntry;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && /modelcontextprotocol/.test(String((error as Error).message));
    throw new CliExit(EXIT.error, 'MCP_UNAVAILABLE', missing ? 'turnback mcp cannot find the MCP SDK, one of its own dependencies (@modelcontextprotocol/sdk): the install is damaged; install turnback again' : `turnback mcp cannot load its server: ${(error as Error).message}`);
  }
}

/**
 * `turnback mcp`: an MCP server on stdin/stdout for the project (the savepoint tool, the turns,
 * a guarded restore). stdout is the protocol's: nothing else is printed there. Refuses to start
 * where checkpoints are off, touching nothing.
 */
export async function mcpCommand(options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  if (context.refusal !== undefined) throw new CliExit(EXIT.usage, 'CHECKPOINTS_OFF', `checkpoints are off here: ${context.refusal}`);
  if (!context.config.enabled) throw new CliExit(EXIT.usage, 'CHECKPOINTS_OFF', `checkpoints are off (enabled = false in ${context.config.enabledBy ?? 'the config'})`);
  const entry = loadMcpEntry();
  const store = await openStore(context);
  const observer = observerFor(context, store);
  try {
    await entry.serveMcpStdio({ observer, name: 'turnback', version: '0.1.0' });
  } finally {
    await observer.close();
  }
  return EXIT.ok;
}
