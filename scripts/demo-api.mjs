// A scripted agent turn through the public API on a temporary copy of a small sample project:
// writes, an edit, a delete and a shell command, what was captured, a restore, and proof that the
// tree is back. Run with `npm run demo:api` (builds first).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { deletePath, editFile, observerForConfig, writeFile } from '../dist/index.js';

const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'turnback-demo-')));
const project = path.join(base, 'sample');
const sample = {
  'README.md': '# sample\n',
  'src/parser.ts': 'export function parse(input: string) {\n  return input.split(",");\n}\n',
  'src/lexer.ts': 'export const tokens = ["a", "b"];\n',
  'docs/notes/intro.md': '# intro\n',
};
for (const [rel, text] of Object.entries(sample)) {
  await fs.mkdir(path.dirname(path.join(project, rel)), { recursive: true });
  await fs.writeFile(path.join(project, rel), text);
}
async function listing() {
  const out = {};
  for (const rel of (await fs.readdir(project, { recursive: true })).sort()) {
    const st = await fs.lstat(path.join(project, rel));
    if (st.isFile()) out[rel] = (await fs.readFile(path.join(project, rel))).toString('base64');
  }
  return out;
}
const before = await listing();

const observer = await observerForConfig(`[capabilities.checkpoint]\nenabled = true\ndir = "${path.join(base, 'store')}"`, { projectRoot: project, sessionId: 'demo' });
if (!observer) throw new Error('checkpoints did not start');
const ctx = { projectRoot: project, observer, callId: 'call-1' };

console.log(`sample project: ${project}\n`);
const turn = await observer.beginTurn({ label: 'refactor the parser' });
console.log(`turn ${turn} begins (the id is all a session record carries)`);
await editFile(ctx, 'src/parser.ts', 'split(",")', 'split(/,\\s*/)');
console.log('  edit_file   src/parser.ts');
await writeFile(ctx, 'src/tokens.ts', 'export type Token = string;\n');
console.log('  write_file  src/tokens.ts (new)');
await deletePath(ctx, 'src/lexer.ts');
console.log('  delete      src/lexer.ts');
await observer.callBegin('shell-1', { command: 'rm -rf docs' });
execFileSync('sh', ['-c', 'rm -rf docs'], { cwd: project });
const shell = await observer.callEnd('shell-1', { sideEffect: 'filesystem' });
console.log(`  shell       rm -rf docs  (attributed: ${shell.changes.map((c) => `${c.kind} ${c.path}`).join(', ')})`);

const changes = await observer.turnChanges(turn);
console.log(`\ncaptured in this turn: ${changes.changes.length} paths`);
for (const change of changes.changes) console.log(`  ${change.kind.padEnd(8)} ${change.path}`);

const plan = await observer.plan(turn);
console.log('\nrestore plan (touches nothing):');
for (const entry of plan.entries) console.log(`  ${entry.action.padEnd(9)} ${entry.path}`);

const report = await observer.restore(turn);
console.log(`\nrestored ${report.restored.length}, refused ${report.refused.length}, failed ${report.failed.length}; saved first as ${report.preRestoreId}`);
const after = await listing();
const same = JSON.stringify(after) === JSON.stringify(before);
console.log(same ? 'the tree is back, byte for byte' : 'MISMATCH: the tree differs');
const verify = await observer.store.verify();
console.log(`store verify: ${verify.ok ? 'ok' : JSON.stringify(verify.problems)}`);
await observer.close();
await fs.rm(base, { recursive: true, force: true });
process.exit(same && verify.ok ? 0 : 1);
