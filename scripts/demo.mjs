#!/usr/bin/env node
// Runs the built turnback CLI on a throwaway sample project: three turns (an edit, a command
// that deletes a folder, a formatter that rewrites many files), their turn-end lists, an undo
// preview, an undo and a redo — printed as a person would see them. Exits 1 unless the tree ends
// up exactly as expected at every step.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli', 'main.cjs');
const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'turnback-demo-')));
const home = path.join(root, 'home');
const proj = path.join(root, 'sample');
const env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1' };
delete env.TURNBACK_DIR;
let failures = 0;

function write(rel, text) {
  mkdirSync(path.dirname(path.join(proj, rel)), { recursive: true });
  writeFileSync(path.join(proj, rel), text);
}

function tree() {
  const out = {};
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === '.git') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else out[path.relative(proj, full).split(path.sep).join('/')] = readFileSync(full, 'utf8');
    }
  };
  walk(proj);
  return out;
}

function same(a, b) {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.filter((k) => a[k] !== b[k]);
}

function check(what, expected) {
  const diff = same(tree(), expected);
  if (diff.length === 0) console.log(`\n✓ ${what}`);
  else {
    failures += 1;
    console.log(`\n✗ ${what}: differs at ${diff.join(', ')}`);
  }
}

function turnback(args, input) {
  const shown = args.map((a) => (/^[\w./@=:,+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
  console.log(`\n$ turnback ${shown}`);
  const result = spawnSync(process.execPath, ['--no-warnings', cli, ...args], { cwd: proj, env, encoding: 'utf8', input: input ?? '' });
  if (result.stdout) process.stdout.write(result.stdout);
  if (result.stderr) process.stdout.write(result.stderr);
  return result;
}

try {
  mkdirSync(home, { recursive: true });
  // The sample project: a few sources, notes (one of them never committed), a git repo.
  for (let i = 1; i <= 12; i++) write(`src/mod${i}.js`, `export function f${i}(x) {\n  return x + ${i}\n}\n`);
  write('src/parser.js', 'export function parse(text) {\n  return text.split(" ")\n}\n');
  write('README.md', '# sample\n');
  for (let i = 1; i <= 5; i++) write(`docs/notes/note-${i}.md`, `note ${i}\n`);
  execFileSync('git', ['init', '-q'], { cwd: proj, env });
  execFileSync('git', ['-c', 'user.email=demo@example.com', '-c', 'user.name=demo', 'add', '-A'], { cwd: proj, env });
  execFileSync('git', ['-c', 'user.email=demo@example.com', '-c', 'user.name=demo', 'commit', '-qm', 'sample'], { cwd: proj, env });
  write('docs/notes/ideas.md', 'only here, never committed\n');
  write('tidy.mjs', [
    "import { readdirSync, readFileSync, writeFileSync } from 'node:fs';",
    "for (const f of readdirSync('src')) {",
    "  const p = 'src/' + f;",
    "  writeFileSync(p, readFileSync(p, 'utf8').replace(/\\)\\n}/g, ');\\n}').replace(/(\\d)\\n}/g, '$1;\\n}'));",
    '}',
    '',
  ].join('\n'));

  const start = tree();
  turnback(['status']);

  // Turn 1: an edit.
  turnback(['run', '--', 'node', '-e', "require('fs').writeFileSync('src/parser.js', 'export function parse(text) {\\n  return text.trim().split(/\\\\s+/)\\n}\\n')"]);
  const afterEdit = tree();
  if (afterEdit['src/parser.js'] === start['src/parser.js']) failures += 1;

  // Turn 2: a shell command that deletes a folder (with a note git never had).
  turnback(['run', '--', 'rm', '-rf', 'docs/notes']);
  const afterDelete = tree();

  // Turn 3: a formatter-like rewrite of many files.
  turnback(['run', '--label', 'before node tidy.mjs (formatter)', '--', 'node', 'tidy.mjs']);
  const afterFormat = tree();

  turnback(['list']);
  const listed = JSON.parse(spawnSync(process.execPath, ['--no-warnings', cli, 'list', '--json'], { cwd: proj, env, encoding: 'utf8' }).stdout).checkpoints;
  const deleteTurn = listed.find((c) => c.label === 'before rm -rf docs/notes');
  if (deleteTurn === undefined) throw new Error('the rm turn is not listed');

  const formatTurn = listed.find((c) => c.label === 'before node tidy.mjs (formatter)');
  if (formatTurn === undefined) throw new Error('the formatter turn is not listed');

  // What the formatter's turn did to one file, then a preview of going back to before the folder
  // was deleted, and the undo itself.
  turnback(['diff', formatTurn.shortId, 'src/mod1.js']);
  turnback(['undo', deleteTurn.shortId, '--dry-run']);
  const undo = turnback(['undo', deleteTurn.shortId], 'y\n');
  if (undo.status !== 0) failures += 1;
  check('undo put the tree back to after the edit (notes recreated, formatting reverted)', afterEdit);
  if (afterDelete['docs/notes/ideas.md'] !== undefined) failures += 1;

  // Redo: back to exactly before the undo.
  const redo = turnback(['redo', '--yes']);
  if (redo.status !== 0) failures += 1;
  check('redo returned the tree to after the formatter', afterFormat);

  turnback(['status']);
} catch (error) {
  failures += 1;
  console.error(error);
} finally {
  rmSync(root, { recursive: true, force: true });
}

if (failures > 0) {
  console.log(`\ndemo FAILED (${failures})`);
  process.exit(1);
}
console.log('\ndemo ok');
