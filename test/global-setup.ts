import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Builds dist/ once when the CLI is missing, so end-to-end tests can run `node dist/cli/main.cjs`. */
export default function setup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const cli = path.join(root, 'dist', 'cli', 'main.cjs');
  if (existsSync(cli)) return;
  try {
    execFileSync('npx', ['tsup'], { cwd: root, stdio: 'inherit' });
  } catch (error) {
    // A failing declaration build still leaves the JavaScript in place; only its absence is fatal.
    if (!existsSync(cli)) throw error;
  }
}
