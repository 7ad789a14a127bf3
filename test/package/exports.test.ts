import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The built package, loaded by its own name through the exports map, as a user's code would.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ENTRIES = ['turnback', 'turnback/admin', 'turnback/savepoint', 'turnback/ai-sdk', 'turnback/mcp', 'turnback/openai-agents', 'turnback/langchain', 'turnback/acp', 'turnback/hooks', 'turnback/claude-agent-sdk', 'turnback/remote'] as const;

function run(args: string[]): string {
  return execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8' }).trim();
}

type Surface = Record<(typeof ENTRIES)[number], Record<string, string>>;

/** The names a runtime module of an entry must export: the surface's classes, functions and consts. */
function valueNames(surface: Surface, entry: (typeof ENTRIES)[number]): string[] {
  return Object.entries(surface[entry])
    .filter(([, kind]) => /^(class|function|const|enum)\b/.test(kind))
    .map(([name]) => name)
    .sort();
}

describe('the package', () => {
  it('declares the module layout: ESM and CJS builds with types for every entry, nothing run at install', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg).toMatchObject({ name: 'turnback', type: 'module', sideEffects: false, files: ['dist'], engines: { node: '^20.17.0 || ^22.0.0 || ^24.0.0' }, bin: { turnback: './dist/cli/turnback.cjs' } });
    // Nothing runs at install: no compiler needed, nothing for pnpm to skip.
    expect(Object.keys(pkg.scripts as Record<string, string>).filter((name) => /install/.test(name))).toEqual([]);
    const exports = pkg.exports as Record<string, { import: Record<string, string>; require: Record<string, string> } | string>;
    expect(Object.keys(exports).sort()).toEqual(['.', './acp', './admin', './ai-sdk', './claude-agent-sdk', './hooks', './langchain', './mcp', './openai-agents', './package.json', './remote', './savepoint']);
    expect(exports['./package.json']).toBe('./package.json');
    for (const key of ['.', './admin', './savepoint', './ai-sdk', './mcp', './openai-agents', './langchain', './acp', './hooks', './claude-agent-sdk', './remote']) {
      const entry = exports[key] as { import: Record<string, string>; require: Record<string, string> };
      for (const file of [entry.import.types, entry.import.default, entry.require.types, entry.require.default]) expect(existsSync(path.join(root, file as string))).toBe(true);
    }
    expect(existsSync(path.join(root, 'dist', 'lstat-worker.js'))).toBe(true);
  });

  it('has exactly the public surface recorded in api/surface.json (npm run api updates it)', async () => {
    // @ts-expect-error: a plain .mjs script without declarations.
    const { apiSurface } = (await import('../../scripts/api-report.mjs')) as { apiSurface: () => Surface };
    const recorded = JSON.parse(readFileSync(path.join(root, 'api', 'surface.json'), 'utf8')) as Surface;
    expect(apiSurface()).toEqual(recorded);
  });

  it('loads both entries by name as ESM and as CommonJS, each exporting exactly its values', () => {
    const recorded = JSON.parse(readFileSync(path.join(root, 'api', 'surface.json'), 'utf8')) as Surface;
    for (const entry of ENTRIES) {
      const esm = JSON.parse(run(['--input-type=module', '-e', `const m = await import('${entry}'); console.log(JSON.stringify(Object.keys(m).sort()))`])) as string[];
      const cjs = JSON.parse(run(['-e', `console.log(JSON.stringify(Object.keys(require('${entry}')).sort()))`])) as string[];
      expect(esm).toEqual(valueNames(recorded, entry));
      expect(cjs).toEqual(valueNames(recorded, entry));
    }
    expect(run(['-e', "const t = require('turnback/admin'); const { CheckpointError } = require('turnback'); console.log(t.DEFAULTS.retain, new CheckpointError('IO', 'x') instanceof Error)"])).toBe('100 true');
  });

  it('the main entry never reaches the store writers: a store view has only the read-and-maintain methods', () => {
    const script = `
      const fs = require('node:fs'); const os = require('node:os'); const path = require('node:path');
      const { openStore, openObserver } = require('turnback/admin');
      const { CheckpointObserver, isCheckpointError } = require('turnback');
      (async () => {
        const base = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-api-'));
        fs.mkdirSync(path.join(base, 'p'));
        const view = await openStore(path.join(base, 'store'), { projectRoot: path.join(base, 'p') });
        const observer = openObserver(view, { sessionId: 's' });
        const fromMain = new CheckpointObserver({ store: view, sessionId: 't' });
        let refused;
        try { new CheckpointObserver({ store: { ...view } }); } catch (e) { refused = isCheckpointError(e, 'INVALID_ARGUMENT'); }
        console.log(JSON.stringify({ view: Object.keys(view).sort(), writer: typeof view.putBytes, observer: observer instanceof CheckpointObserver, fromMain: fromMain.projectRoot === observer.projectRoot, refused }));
        await observer.close(); await fromMain.close(); await view.close();
        fs.rmSync(base, { recursive: true, force: true });
      })();`;
    const seen = JSON.parse(run(['-e', script])) as Record<string, unknown>;
    expect(seen).toEqual({
      view: ['close', 'copyGitBlobsIn', 'dropCheckpoint', 'hasObject', 'list', 'manifest', 'projectRoot', 'prune', 'readObject', 'removal', 'restingOnGit', 'root', 'storeSizeBytes', 'verify'],
      writer: 'undefined',
      observer: true,
      fromMain: true,
      refused: true,
    });
  });
});
