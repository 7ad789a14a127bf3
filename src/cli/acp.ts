import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { mergeTables } from './config-file.js';
import { loadContext, type GlobalOptions } from './context.js';
import { EXIT } from './exit-codes.js';
import { CliExit, type Io } from './io.js';

/** What the built `turnback/acp` entry gives the command. */
interface AcpEntry {
  runAcpProxy(options: { command: readonly string[]; config: unknown; input: NodeJS.ReadableStream; output: NodeJS.WritableStream }): Promise<number>;
}

/**
 * `turnback acp -- AGENT…`: a stdio proxy that adds turnback's checkpoints to any ACP agent (see
 * adapters/acp-proxy.ts). The ACP SDK is loaded only by this command, from the built `dist/acp.js`
 * beside it. Where checkpoints are off it still forwards, unchanged, and says so on stderr.
 */
export async function acpCommand(argv: string[], options: GlobalOptions, io: Io): Promise<number> {
  if (argv.length === 0) throw new CliExit(EXIT.usage, 'USAGE', 'acp needs the agent to run: turnback acp -- AGENT ARGS…');
  const context = await loadContext(options, io.invocation);
  let entry: AcpEntry;
  try {
    // The ESM build: the ACP SDK is ESM only, and require() of ESM needs Node 20.19 or later.
    entry = (await import(pathToFileURL(path.join(__dirname, '..', 'acp.js')).href)) as AcpEntry;
  } catch (error) {
    const missing = /agentclientprotocol/.test(String((error as Error).message));
    throw new CliExit(EXIT.error, 'ACP_UNAVAILABLE', missing ? 'turnback acp cannot find the ACP SDK, one of its own dependencies (@agentclientprotocol/sdk): the install is damaged; install turnback again' : `turnback acp cannot load its proxy: ${(error as Error).message}`);
  }
  if (context.refusal !== undefined || !context.config.enabled) io.err(`turnback acp: checkpoints are off here (${context.refusal ?? 'enabled = false'}); forwarding only`);
  // The [checkpoints] keys in effect here (the user's, then the project's), with the store the command uses.
  const config =
    context.refusal !== undefined || !context.config.enabled
      ? {}
      : { capabilities: { checkpoint: { ...mergeTables(context.config.user.table, context.config.project.table), enabled: true, dir: context.storeDir } } };
  return entry.runAcpProxy({ command: argv, config, input: process.stdin, output: process.stdout });
}
