import { existsSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The fault campaign's summary: each class's test appends its line (tried / held / broke) to one
 * file; after the run the lines are printed together, in class order.
 */
export default function setup(): () => void {
  const results = path.join(os.tmpdir(), `turnback-faults-${process.pid}.txt`);
  rmSync(results, { force: true });
  process.env.TURNBACK_FAULTS_RESULTS = results;
  return () => {
    const lines = existsSync(results) ? readFileSync(results, 'utf8').trim().split('\n').sort() : [];
    rmSync(results, { force: true });
    console.log(`\nfault campaign (${lines.length} classes)\n${lines.join('\n')}\n`);
  };
}
