#!/usr/bin/env node
// The public surface of both entries (`turnback`, `turnback/admin`), read from the built type
// declarations: every exported name with its kind, and the public members of classes and
// interfaces. `node scripts/api-report.mjs` prints it; `--write` updates api/surface.json, which
// test/package/exports.test.ts compares against, so the API cannot change without a visible diff.
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ENTRIES = { turnback: 'dist/index.d.ts', 'turnback/admin': 'dist/admin.d.ts', 'turnback/savepoint': 'dist/savepoint.d.ts', 'turnback/ai-sdk': 'dist/ai-sdk.d.ts', 'turnback/mcp': 'dist/mcp.d.ts', 'turnback/openai-agents': 'dist/openai-agents.d.ts', 'turnback/langchain': 'dist/langchain.d.ts', 'turnback/acp': 'dist/acp.d.ts', 'turnback/hooks': 'dist/hooks.d.ts', 'turnback/claude-agent-sdk': 'dist/claude-agent-sdk.d.ts', 'turnback/remote': 'dist/remote.d.ts' };

function kindOf(symbol, checker) {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const f = target.flags;
  if (f & ts.SymbolFlags.Class) return 'class';
  if (f & ts.SymbolFlags.Function) return 'function';
  if (f & ts.SymbolFlags.Enum) return 'enum';
  if (f & ts.SymbolFlags.Interface) return 'interface';
  if (f & ts.SymbolFlags.TypeAlias) return 'type';
  if (f & ts.SymbolFlags.Variable) return 'const';
  return 'other';
}

function membersOf(symbol, checker, kind) {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  if (kind !== 'class' && kind !== 'interface') return undefined;
  const names = new Set();
  const add = (member, prefix) => {
    const decl = member.valueDeclaration ?? member.declarations?.[0];
    const modifiers = decl !== undefined && ts.canHaveModifiers(decl) ? (ts.getModifiers(decl) ?? []) : [];
    if (modifiers.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword)) return;
    if (member.name.startsWith('#') || member.name.startsWith('__') || member.name === 'prototype') return;
    // What Error, Promise and the like bring along belongs to the platform, not to this API.
    if (decl !== undefined && decl.getSourceFile().fileName.includes('/node_modules/')) return;
    names.add(`${prefix}${member.name}`);
  };
  // Inherited members count: they are part of what a caller can touch.
  for (const member of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(target))) add(member, '');
  if (kind === 'class') for (const member of checker.getPropertiesOfType(checker.getTypeOfSymbol(target))) add(member, 'static ');
  return [...names].sort();
}

export function apiSurface() {
  const files = Object.values(ENTRIES).map((file) => path.join(root, file));
  const program = ts.createProgram(files, { strict: true, skipLibCheck: true, types: ['node'] });
  const checker = program.getTypeChecker();
  const surface = {};
  for (const [entry, file] of Object.entries(ENTRIES)) {
    const source = program.getSourceFile(path.join(root, file));
    if (source === undefined) throw new Error(`missing ${file}: run npm run build first`);
    const moduleSymbol = checker.getSymbolAtLocation(source);
    const exports = {};
    for (const symbol of checker.getExportsOfModule(moduleSymbol).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const kind = kindOf(symbol, checker);
      const members = membersOf(symbol, checker, kind);
      exports[symbol.name] = members === undefined ? kind : `${kind} { ${members.join(', ')} }`;
    }
    surface[entry] = exports;
  }
  return surface;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = `${JSON.stringify(apiSurface(), null, 2)}\n`;
  if (process.argv.includes('--write')) writeFileSync(path.join(root, 'api', 'surface.json'), text);
  else process.stdout.write(text);
}
