import { spawnSync } from 'node:child_process';

// What the S3 remote-store tests need, read by the global setup and by the files that use the
// server: Ceph's packages on this machine, unless a server is named (TURNBACK_TEST_S3_*).

/** `TURNBACK_TEST_S3=required` (set by `.ci/run`): a missing S3 server fails the run instead of skipping its files. */
export const S3_REQUIRED = process.env.TURNBACK_TEST_S3 === 'required';

/** Why no S3 test server can be had here, or undefined when one can. */
export function cephMissing(): string | undefined {
  if (process.env.TURNBACK_TEST_S3_ENDPOINT !== undefined) return undefined;
  const found = spawnSync('sh', ['-c', 'command -v radosgw && command -v ceph-mon && command -v ceph-osd'], { stdio: 'ignore' }).status === 0;
  return found ? undefined : "Ceph's radosgw, ceph-mon and ceph-osd are not installed (apt-get install --no-install-recommends radosgw ceph-mon ceph-osd)";
}

/** Set for a file whose S3 tests are skipped: the reason, said once by the global setup. */
export const S3_SKIPPED: string | undefined = S3_REQUIRED ? undefined : cephMissing();
