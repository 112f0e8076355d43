-- The line every wrk script of this folder ends its run with, read by the benchmarks
-- (benches/bench.py): requests, duration, errors, p50 and p99. Loaded by each script with
-- dofile, from beside it.
function done(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout
  io.write(string.format('RESULT {"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, errors, latency:percentile(50), latency:percentile(99)))
end
