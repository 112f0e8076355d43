#!/usr/bin/env python3
"""What a search costs the server's CPU, split by what the request asks, beside the ceiling.

Serves a copy of the benchmark's cached search merchant (target/bench-cache/search-1000.db by
default, made by `scripts/bench --workloads search-1k` once) on SQLite, pinned to the last cpu, with
wrk (one thread, 16 connections) pinned to the first, so that the server's core is the bound and
the load generator takes none of it. For each case: a warm-up, then a closed-loop window; the
server's CPU (user and kernel apart, from /proc) per request answered. The cases, from the least
the server can do to a real search:
- ceiling: the benchmark's ceiling (`benches/ceiling.rs`) serving the page ours answers the first
  question with: HTTP and a page of that size, nothing else;
- healthz: ours, `GET /healthz` through the whole middleware;
- 404: ours, a `POST` to a path no route has (the key not read);
- 403: ours, a storefront key refused on the location list (the key checked, nothing else);
- 400: ours, a search whose body is `{}` (the key checked, the body read and refused);
- empty: ours, a valid search where the merchant has nothing (every ring walked, no record read);
- one question: ours, the first of the benchmark's questions, asked again and again;
- questions: ours, the benchmark's 400 questions in random order (its search-1k load), with a
  full key and with a storefront key.

Usage: python3 benches/cost_split.py [--bin BINARY] [--db search-1000] [--seconds 10] [--reps 1]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import bench
import search_bench
from bench_procs import ROOT, TICK, scratch_dir


SEARCH = "/v1/location/search"


def user_and_kernel(pid):
    """The process's user and kernel CPU seconds, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def lines_file(workdir, name, lines):
    path = Path(workdir) / f"{name}.txt"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def first_answer(base, key, body):
    req = urllib.request.Request(base + SEARCH, data=body.encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def measure(kind, db, workdir, page, key, bodies, path, seconds):
    """One case: the server's req/s and CPU µs a request, user and kernel."""
    server = bench.Server(kind, db, workdir, page)
    try:
        script = ROOT / "benches/wrk/list.lua"
        args = [key, str(bodies), path] if bodies else None
        run = (lambda s: bench.wrk(server.base, 16, s, script, args)) if args else \
            (lambda s: get(server.base + path, s))
        run(3)
        if kind == "ours" and path == SEARCH and not str(bodies).endswith("refused.txt"):
            # The merchant's index, which the warm-up's first search began to build, held.
            bench.index_held(server.base)
            run(2)
        user0, kernel0 = user_and_kernel(server.proc.pid)
        result = run(seconds)
        user1, kernel1 = user_and_kernel(server.proc.pid)
    finally:
        server.stop()
    n = max(result["requests"], 1)
    return {"rps": n / (result["duration_us"] / 1e6), "user_us": (user1 - user0) * 1e6 / n,
            "kernel_us": (kernel1 - kernel0) * 1e6 / n, "errors": result["errors"]}


def get(url, seconds):
    """wrk's plain GET of `url`, in the shape of the RESULT line."""
    out = subprocess.run(["taskset", "-c", bench.settings.PIN[1], "wrk", "-t1", "-c16", f"-d{seconds}s", url],
                         capture_output=True, text=True, check=True).stdout
    requests = int(next(line for line in out.splitlines() if "requests in" in line).split()[0])
    return {"requests": requests, "duration_us": seconds * 1e6, "errors": 0}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=str(ROOT / "target/release/storefront"))
    p.add_argument("--db", default="search-1000", help="a cached search database of target/bench-cache")
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--reps", type=int, default=1)
    cfg = p.parse_args()
    cache = ROOT / "target/bench-cache"
    if not (cache / f"{cfg.db}.db").exists():
        sys.exit(f"no target/bench-cache/{cfg.db}.db: run scripts/bench --workloads search-1k (or search-1m) once")
    if not bench.CEILING.exists():
        sys.exit("no ceiling: cargo build --release --example ceiling")
    pinned = bench.pinning(1)
    if pinned is None:
        sys.exit("needs 2 cpus: one for the server, one for wrk")
    bench.settings.BIN, bench.settings.PIN, bench.settings.WRK_THREADS = Path(cfg.bin).resolve(), pinned, 1
    workdir = Path(scratch_dir("storefront-cost-split-"))
    try:
        db = workdir / "search.db"
        shutil.copy(cache / f"{cfg.db}.db", db)
        key = json.loads((cache / f"{cfg.db}.json").read_text())["api_key"]
        storefront = search_bench.storefront_key(bench, db)
        questions = search_bench.bodies(workdir, "split")
        first = questions.read_text().splitlines()[0]
        empty = json.dumps({"near": {"latitude": 0, "longitude": 0}, "radius_m": 1000, "pagination": {"limit": 20}})
        server = bench.Server("ours", db, workdir)
        try:
            page = Path(workdir) / "page.json"
            page.write_bytes(first_answer(server.base, key, first))
        finally:
            server.stop()
        cases = [
            ("ceiling (the first question's page)", "ceiling", key, questions, SEARCH),
            ("healthz", "ours", None, None, "/healthz"),
            ("404: a POST to no route, no key read", "ours", key, lines_file(workdir, "nowhere", ["{}"]), "/nowhere"),
            ("403: a storefront key refused on the location list", "ours", storefront,
             lines_file(workdir, "forbidden", ["{}"]), "/v1/location/list"),
            ("400 (`{}`), a full key", "ours", key, lines_file(workdir, "refused", ["{}"]), SEARCH),
            ("empty: nothing within 1 km, a full key", "ours", key, lines_file(workdir, "empty", [empty]), SEARCH),
            ("one question again and again, a full key", "ours", key, lines_file(workdir, "one", [first]), SEARCH),
            ("the 400 questions, a full key", "ours", key, questions, SEARCH),
            ("the 400 questions, a storefront key", "ours", storefront, questions, SEARCH),
        ]
        print(f"{cfg.db}, {bench.settings.BIN}: server on cpu {pinned[0]}, wrk -t1 -c16 on cpu {pinned[1]}, "
              f"{cfg.seconds} s a window")
        print("| case | req/s | CPU µs a request | user | kernel |")
        print("|---|---:|---:|---:|---:|")
        for rep in range(cfg.reps):
            for name, kind, case_key, bodies, path in cases:
                r = measure(kind, db, workdir, page, case_key, bodies, path, cfg.seconds)
                note = "" if kind == "ceiling" or name[:1] == "4" or not r["errors"] else f" ({r['errors']} errors)"
                print(f"| {name}{note} | {r['rps']:,.0f} | {r['user_us'] + r['kernel_us']:.1f} | "
                      f"{r['user_us']:.1f} | {r['kernel_us']:.1f} |", flush=True)
                time.sleep(0.5)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
