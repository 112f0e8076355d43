#!/usr/bin/env python3
"""Buyers' searches window by window once the index is held: what the benchmark's one measured
window (the first after the index is held) holds that the windows after it do not.

Serves the benchmark's million-location merchant (target/bench-cache/search-1000000.db, made by
`scripts/bench --workloads search-1m` once) on SQLite or, with --pg, on a PostgreSQL copy (fsync on,
as the benchmark runs it), with a full key or a storefront key. As the benchmark does: a 2 s
warm-up, the wait for the index, 1.2 s; then WINDOWS consecutive closed-loop windows of 6 s at 16
connections, for each of wrk's thread counts, on a freshly started server each. Prints each
window's req/s, p99, and the database reads made in it (`db_reads_total`: the records of a page
not yet in memory, keys' and the log's reads).

Usage: python3 benches/after_held.py [--bin BINARY] [--pg] [--storefront] [--windows 4]
       [--threads 1,2] [--reps 2]
"""

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import bench
import search_bench
from bench_procs import ROOT, Postgres, scratch_dir


def reads(base):
    return sum(v for k, v in bench.scrape(base).items() if k.startswith("db_reads_total"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=str(ROOT / "target/release/storefront"))
    p.add_argument("--pg", action="store_true", help="a PostgreSQL copy of the merchant (about 90 s to make)")
    p.add_argument("--storefront", action="store_true", help="a storefront key's searches (buyers')")
    p.add_argument("--windows", type=int, default=4)
    p.add_argument("--threads", default="1,2", help="wrk's thread counts, each on a server of its own")
    p.add_argument("--reps", type=int, default=2)
    cfg = p.parse_args()
    cache = ROOT / "target/bench-cache"
    if not (cache / "search-1000000.db").exists():
        sys.exit("no target/bench-cache/search-1000000.db: run scripts/bench --workloads search-1m once")
    bench.settings.BIN = Path(cfg.bin).resolve()
    workdir = Path(scratch_dir("storefront-after-held-"))
    pg = None
    try:
        file = workdir / "search.db"
        shutil.copy(cache / "search-1000000.db", file)
        if cfg.pg:
            os.chmod(workdir, 0o755)  # the cluster runs as the postgres user
            pg = Postgres(workdir)
            db, key = search_bench.postgres_database(bench, pg, file, workdir)
        else:
            db, key = file, json.loads((cache / "search-1000000.json").read_text())["api_key"]
        if cfg.storefront:
            key = search_bench.storefront_key(bench, db)
        bodies = search_bench.bodies(workdir, "after-held")
        script = ROOT / "benches/wrk/list.lua"
        args = [key, str(bodies), "/v1/location/search"]
        print(f"{'PostgreSQL' if pg else 'SQLite'}, {'a storefront key' if cfg.storefront else 'a full key'}, "
              f"{bench.settings.BIN}")
        for rep in range(1, cfg.reps + 1):
            for threads in [int(t) for t in cfg.threads.split(",")]:
                bench.settings.WRK_THREADS = threads
                server = bench.Server("ours", db, workdir)
                try:
                    bench.wrk(server.base, 16, 2, script, args)
                    bench.index_held(server.base)
                    time.sleep(1.2)
                    cells = []
                    for _ in range(cfg.windows):
                        before = reads(server.base)
                        r = bench.wrk(server.base, 16, 6, script, args)
                        cells.append(f"{r['requests'] / (r['duration_us'] / 1e6):,.0f}/s p99 {r['p99_us'] / 1000:.2f} ms "
                                     f"reads {reads(server.base) - before:.0f}")
                    print(f"rep {rep}, wrk -t{threads}: " + " | ".join(cells), flush=True)
                finally:
                    server.stop()
    finally:
        if pg:
            pg.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
