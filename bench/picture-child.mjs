// Child process of the memory benchmark: takes pictures of a big tree and reports its peak RSS.
// Usage: node bench/picture-child.mjs <projectRoot> <storeDir> [idle|three]
import * as nodePath from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const DIST = process.env.TURNBACK_DIST ? nodePath.resolve(process.env.TURNBACK_DIST) : nodePath.join(nodePath.dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const { CheckpointObserver } = await import(pathToFileURL(nodePath.join(DIST, 'index.js')).href);
const { openStore } = await import(pathToFileURL(nodePath.join(DIST, 'admin.js')).href);

const [projectRoot, storeDir, mode] = process.argv.slice(2);
const rss = () => process.resourceUsage().maxRSS; // KB
if (mode === 'idle') {
  // The floor: node plus the library loaded, nothing pictured.
  const store = await openStore(storeDir, { projectRoot });
  await store.close();
  process.stdout.write(`${JSON.stringify({ idleMaxRssKb: rss() })}\n`);
} else {
  const store = await openStore(storeDir, { projectRoot });
  // Limits raised so the whole tree is pictured; the defaults would stop at 10,000 copied files.
  const observer = new CheckpointObserver({
    store,
    sessionId: 'bench-memory',
    coverage: { maxPictureFiles: 1_000_000, maxWalkEntries: 10_000_000, maxPictureSeconds: 900, maxPictureMib: 100_000 },
  });
  let start = performance.now();
  const begin = await observer.callBegin('memory');
  const firstMs = performance.now() - start;
  const afterFirstKb = rss();
  start = performance.now();
  const end = await observer.callEnd('memory');
  const secondMs = performance.now() - start;
  let thirdMs;
  if (mode === 'three') {
    // A third and fourth picture, as a session takes them (the pause is where a helper thread
    // would come online; above 50,000 paths none is started).
    start = performance.now();
    await observer.callBegin('memory-3');
    thirdMs = performance.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 500));
    start = performance.now();
    await observer.callEnd('memory-3');
    thirdMs += performance.now() - start;
  }
  await observer.close();
  await store.close();
  process.stdout.write(
    `${JSON.stringify({ firstMs, secondMs, thirdMs, afterFirstKb, maxRssKb: rss(), partial: begin.partial || end.partial, summary: begin.summary || end.summary, changes: end.changes.length })}\n`,
  );
}
