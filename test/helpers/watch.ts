import { watch } from 'node:fs';

/**
 * Resolves once `check` holds, asking it at the start and again after every change inside
 * `folder` (fs.watch): for what another process does there — a background push noting its end,
 * a log line, a server's start file. `limitMs` is a hang guard, not the wait: it rejects, naming
 * `what`, only when no change ever made `check` hold.
 */
export function whenFolderSays(folder: string, check: () => boolean | Promise<boolean>, what: string, limitMs = 120_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false;
    let asking = false;
    let askAgain = false;
    const watcher = watch(folder, { recursive: false }, () => void ask());
    const guard = setTimeout(() => finish(new Error(`gave up waiting for ${what}`)), limitMs);
    function finish(error?: Error): void {
      if (done) return;
      done = true;
      clearTimeout(guard);
      watcher.close();
      if (error === undefined) resolve();
      else reject(error);
    }
    async function ask(): Promise<void> {
      if (done) return;
      // One question at a time; a change during it asks once more after.
      if (asking) {
        askAgain = true;
        return;
      }
      asking = true;
      try {
        do {
          askAgain = false;
          if (await check()) return finish();
        } while (askAgain && !done);
      } catch (error) {
        finish(error instanceof Error ? error : new Error(String(error)));
      } finally {
        asking = false;
      }
    }
    void ask();
  });
}
