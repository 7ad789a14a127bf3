#!/usr/bin/env node
// Builds turnback's optional native accelerator (native/lstat_batch.c) with node-gyp, as npm's
// install step. It never fails the install: without a compiler, headers or node-gyp, turnback
// runs the same JavaScript code paths, only slower (see "Native accelerator" in
// CHECKPOINT-DESIGN.md). TURNBACK_NATIVE=0 skips the build.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const say = (line) => process.stderr.write(`turnback: ${line}\n`);

if (process.env.TURNBACK_NATIVE === '0') {
  say('TURNBACK_NATIVE=0: native accelerator not built');
  process.exit(0);
}

// npm hands its own node-gyp to install scripts; else look beside this Node's npm.
const prefix = path.resolve(path.dirname(process.execPath), '..');
const nodeGyp = [
  process.env.npm_config_node_gyp,
  path.join(prefix, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
].find((candidate) => candidate !== undefined && candidate !== '' && existsSync(candidate));
if (nodeGyp === undefined) {
  say('node-gyp not found: native accelerator not built; turnback uses its JavaScript path');
  process.exit(0);
}

const args = [nodeGyp, 'rebuild'];
// Headers installed with this Node (distribution packages put them there): no download needed.
if (!process.env.npm_config_nodedir && existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) args.push(`--nodedir=${prefix}`);
const run = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', timeout: 300_000 });
if (run.status === 0) {
  say('native accelerator built (build/Release/turnback_lstat.node)');
} else {
  const output = `${run.stdout ?? ''}${run.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
  say(`native accelerator not built (node-gyp ${run.error?.message ?? `exit ${run.status ?? run.signal}`}); turnback uses its JavaScript path`);
  if (output !== '') process.stderr.write(`${output}\n`);
}
