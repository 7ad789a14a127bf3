// Preloaded into the command server by bench/first-picture.mjs --profile (through NODE_OPTIONS,
// where `--cpu-prof` is refused): V8's profiler in the server process only, its profile written to
// $TURNBACK_BENCH_PROFILE_DIR when the server leaves, and on SIGUSR2 (then profiling goes on).
'use strict';
if (process.argv.includes('--turnback-serve') && process.env.TURNBACK_BENCH_PROFILE_DIR) {
  const inspector = require('node:inspector');
  const fs = require('node:fs');
  const dir = process.env.TURNBACK_BENCH_PROFILE_DIR;
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 500 });
  session.post('Profiler.start');
  let n = 0;
  const dump = () => {
    // The same-thread session answers synchronously, so this works in an `exit` handler too.
    session.post('Profiler.stop', (error, result) => {
      if (!error) fs.writeFileSync(`${dir}/server-${process.pid}-${n++}.cpuprofile`, JSON.stringify(result.profile));
    });
  };
  process.on('exit', dump);
  process.on('SIGUSR2', () => {
    dump();
    session.post('Profiler.start');
  });
}
