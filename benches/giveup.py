#!/usr/bin/env python3
"""A failing endpoint's backlog, worked through: ROWS locations pushed (creates of 200, 4 at once)
for a merchant whose one endpoint's receiver is down (nothing listens on its port), the retry
schedule one retry of 1 ms, so that each event is attempted twice and given up. On PostgreSQL
(fsync on, as the benchmark runs it), each build in turn on a fresh database: how long until every
event was attempted twice (`webhook_attempts_total{outcome="failed"}` at 2 x ROWS). This is the
delivery worker's loop over one endpoint's windows, each claimed once the last one's results are
written: a worker that waited for its next look between them shows here.

Usage: python3 benches/giveup.py ROWS BINARY [BINARY ...]
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import events_bench  # noqa: E402
from bench_procs import Postgres, scratch_dir  # noqa: E402


def failed(base):
    metrics = bench.scrape(base)
    return sum(v for k, v in metrics.items() if k.startswith("webhook_attempts_total") and "failed" in k)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows, binaries = int(sys.argv[1]), sys.argv[2:]
    work = scratch_dir("giveup-")
    os.chmod(work, 0o755)  # the cluster runs as the postgres user
    pg = Postgres(work)
    try:
        for binary in binaries:
            db = pg.fresh("giveup")
            key = events_bench.merchant(binary, db, "missed")
            proc, base = bench.serve(binary, db, events_bench.WEBHOOK_FLAGS + ["--webhook-retry-schedule", "1ms"])
            try:
                port = bench.free_port()
                bench.post(base, "/v1/webhook/create", key, {"url": f"http://127.0.0.1:{port}/missed"})
                started = time.time()
                events_bench.push(base, key, rows, "g")
                pushed = time.time() - started
                while failed(base) < 2 * rows and time.time() - started < 900:
                    time.sleep(0.2)
                print(f"{binary}: {rows} events pushed in {pushed:.1f} s, each attempted twice after "
                      f"{time.time() - started:.1f} s ({failed(base):.0f} failed attempts)", flush=True)
            finally:
                events_bench.stop(proc)
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
