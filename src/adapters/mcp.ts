import * as path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { isCheckpointError } from '../core/errors.js';
import type { CheckpointId } from '../core/id.js';
import type { CheckpointObserver } from '../session/observer.js';
import { createSavepointTool, savepointInput, type SavepointToolOptions } from '../tools/savepoint-tool.js';
import { checkpointedCall } from '../tools/tool-call.js';
import { BoundedStdioTransport } from './mcp-stdio.js';

// turnback over the Model Context Protocol, both ways: a server exposing the savepoint tool and
// read-only views of turnback's turns (plus a guarded restore) to any MCP host, and a host-side
// wrapper that captures what the mutating tools of another server (the official filesystem
// server first) are about to change.

/** Checkpoint kinds an agent's turns are made of (the undo timeline). */
const TIMELINE_KINDS = new Set(['turn', 'call', 'pre-restore']);
/** Most checkpoints `list_checkpoints` returns, newest first. */
const LIST_MAX = 100;

type ToolResult = { content: { type: 'text'; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

function ok(report: object): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(report) }], structuredContent: report as Record<string, unknown> };
}

function failed(error: unknown): ToolResult {
  // Every failure carries a code of the union: one that is not a CheckpointError is a bug of ours.
  const code = isCheckpointError(error) ? error.code : 'INTERNAL';
  const message = error instanceof Error ? error.message : String(error);
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ ok: false, error: { code, message } }) }] };
}

async function answer(run: () => Promise<object>): Promise<ToolResult> {
  try {
    return ok(await run());
  } catch (error) {
    return failed(error);
  }
}

/** What {@link createMcpServer} takes. */
export interface McpServerOptions extends SavepointToolOptions {
  /** The server's name in the MCP handshake. @default 'turnback' */
  name?: string;
  /** The server's version in the handshake. @default '0.0.0' */
  version?: string;
}

/**
 * An MCP server over `observer`: `undo_savepoint` (the model's savepoints), `list_checkpoints`
 * and `diff_checkpoint` (read-only views of turnback's turns), and `restore_checkpoint` (guarded
 * like every restore; `confirm: true` required). Tool annotations say which only read and which
 * may overwrite files. Connect it to a transport, or use {@link serveMcpStdio}.
 */
export function createMcpServer(options: McpServerOptions): McpServer {
  // The savepoint tool checks the options first: a missing observer is a typed refusal.
  const savepoints = createSavepointTool(options);
  const { observer } = options;
  const server = new McpServer({ name: options.name ?? 'turnback', version: options.version ?? '0.0.0' });

  server.registerTool(
    savepoints.name,
    {
      description: savepoints.description,
      inputSchema: savepointInput as unknown as z.ZodObject,
      // Its save and list only read; its restore overwrites files: destructive, honestly.
      annotations: { title: 'Savepoints', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    (input, extra) => answer(() => savepoints.execute(input, { signal: extra.signal })),
  );

  server.registerTool(
    'list_checkpoints',
    {
      description: "turnback's checkpoints of this project (turns, shell calls, restores' saves), newest first: id, kind, label, time, files.",
      inputSchema: z.strictObject({}),
      annotations: { title: 'List checkpoints', readOnlyHint: true, openWorldHint: false },
    },
    () =>
      answer(async () => {
        const metas = (await observer.store.list()).filter((meta) => TIMELINE_KINDS.has(meta.kind)).reverse().slice(0, LIST_MAX);
        return {
          ok: true,
          count: metas.length,
          checkpoints: metas.map((meta) => ({ id: meta.id, kind: meta.kind, label: meta.label ?? null, createdAt: meta.createdAt, complete: meta.complete, files: meta.entryCount })),
        };
      }),
  );

  server.registerTool(
    'diff_checkpoint',
    {
      description: 'What one checkpoint changed: each path created, changed or deleted during it. Never file contents.',
      inputSchema: z.strictObject({ id: z.string().min(1).max(64).describe('the exact checkpoint id') }),
      annotations: { title: 'Diff a checkpoint', readOnlyHint: true, openWorldHint: false },
    },
    ({ id }) =>
      answer(async () => {
        const changes = await observer.turnChanges(id as CheckpointId);
        return { ok: true, id, changes: changes.changes.map((change) => ({ path: change.path, kind: change.kind })) };
      }),
  );

  server.registerTool(
    'restore_checkpoint',
    {
      description:
        'Puts the project back as it was when the checkpoint began (files created since are removed). Guarded: a file changed outside the session since is refused, never overwritten. The restore is saved first: its preRestoreId undoes it. Requires confirm: true.',
      inputSchema: z.strictObject({ id: z.string().min(1).max(64).describe('the exact checkpoint id'), confirm: z.literal(true).describe('must be true') }),
      annotations: { title: 'Restore a checkpoint', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ id }, extra) =>
      answer(async () => {
        const report = await observer.restore(id as CheckpointId, { signal: extra.signal });
        return {
          ok: report.failed.length === 0,
          id,
          restored: report.restored.map((entry) => ({ path: entry.path, action: entry.action })),
          refused: report.refused.map((entry) => ({ path: entry.path, reason: entry.reason ?? 'refused' })),
          failed: report.failed,
          preRestoreId: report.preRestoreId ?? null,
          cleanupPending: report.cleanupPending,
        };
      }),
  );
  return server;
}

/**
 * Serves {@link createMcpServer} on stdin/stdout until the input ends (`turnback mcp`). One
 * message per line, each at most 10 MiB: a line that cannot be served is answered with a JSON-RPC
 * error (a request) and said on stderr, and the server serves on.
 */
export async function serveMcpStdio(options: McpServerOptions): Promise<void> {
  const server = createMcpServer(options);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  await server.connect(new BoundedStdioTransport());
  await closed;
}

/**
 * The path arguments through which the official filesystem server's mutating tools change files
 * (`@modelcontextprotocol/server-filesystem`).
 */
export const FILESYSTEM_SERVER_PATHS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  write_file: ['path'],
  edit_file: ['path'],
  move_file: ['source', 'destination'],
  create_directory: ['path'],
});

/** What {@link checkpointingClient} takes. */
export interface CheckpointingClientOptions {
  observer: CheckpointObserver;
  /** Tool name → the argument names holding the paths it changes. @default {@link FILESYSTEM_SERVER_PATHS} */
  pathArguments?: Readonly<Record<string, readonly string[]>>;
  /** Where the server resolves relative paths. @default the observer's project root */
  serverRoot?: string;
}

/**
 * Wraps an MCP client's `callTool` so what the server's mutating tools change is captured first:
 * a tool named in `pathArguments` gets its paths' pre-images (and their state after, for the
 * restore guard) in the current turn and in a snapshot keyed by a call id of its own; any other
 * tool whose annotations do not say it only reads (MCP's `destructiveHint` defaults to true) is
 * bracketed by whole-tree pictures. Paths outside the project are the server's business and are
 * not captured. Never blocks a call: a capture that fails is a gap the observer reports.
 */
export function checkpointingClient<C extends Pick<Client, 'callTool' | 'listTools'>>(client: C, options: CheckpointingClientOptions): C {
  const { observer } = options;
  const pathArguments = options.pathArguments ?? FILESYSTEM_SERVER_PATHS;
  const serverRoot = options.serverRoot ?? observer.projectRoot;
  const original = client.callTool.bind(client);
  let readOnly: Promise<Set<string>> | undefined;
  let calls = 0;
  const readOnlyTools = (): Promise<Set<string>> => {
    readOnly ??= client.listTools().then(
      (listed) => new Set(listed.tools.filter((tool) => tool.annotations?.readOnlyHint === true || tool.annotations?.destructiveHint === false).map((tool) => tool.name)),
      () => new Set<string>(),
    );
    return readOnly;
  };
  const projectPaths = (args: Record<string, unknown> | undefined, names: readonly string[]): string[] => {
    const found: string[] = [];
    for (const name of names) {
      const value = args?.[name];
      if (typeof value !== 'string' || value.length === 0) continue;
      const absolute = path.resolve(serverRoot, value);
      const rel = path.relative(observer.projectRoot, absolute);
      if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) continue;
      found.push(rel.split(path.sep).join('/'));
    }
    return found;
  };

  const callTool: C['callTool'] = async (params, ...rest) => {
    const callId = `mcp-${process.pid}-${++calls}-${params.name}`;
    const names = pathArguments[params.name];
    if (names !== undefined) {
      const paths = params.arguments?.dryRun === true ? [] : projectPaths(params.arguments, names);
      if (paths.length === 0) return original(params, ...rest);
      return checkpointedCall(observer, { callId, paths }, () => original(params, ...rest));
    }
    if ((await readOnlyTools()).has(params.name)) return original(params, ...rest);
    return checkpointedCall(observer, { callId, kind: 'exec', command: `mcp tool ${params.name}` }, () => original(params, ...rest));
  };
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'callTool') return callTool;
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
