import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Builds dist/ once when the CLI is missing, so end-to-end tests can run `node dist/cli/main.js`. */
export default function setup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  if (!existsSync(path.join(root, 'dist', 'cli', 'main.js'))) {
    execFileSync('npx', ['tsup'], { cwd: root, stdio: 'inherit' });
  }
}
