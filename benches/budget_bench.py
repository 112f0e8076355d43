#!/usr/bin/env python3
"""What sharing the rate budget costs (issue 30, CONTRACT §15), and the cluster behind HAProxy.

On one PostgreSQL server (fsync on, as bench.py's PostgreSQL workloads), with a rate limit that
admits every request of the run but still counts it (`--rate-limit 1000000/s --rate-burst 1000`:
an instance takes 100 units a round trip), side by side in one run:
- `list-google` (the Google taxonomy's category list, 100 a page at random cursors) and `create`
  (200 locations a request) through one instance, the budget shared (the default on PostgreSQL)
  and local (`--local-rate-budget`): requests/s, p99 and the CPU per request of the instance and
  PostgreSQL together;
- the same two through HAProxy in front of two instances sharing the budget (reported: this
  machine has two cores, so the cluster cannot double anything; the CPU counts HAProxy too).
Each measurement REPS times, alternating, on a fresh server; the medians are printed as a
markdown table (for BENCHMARKS.md). Run it with `scripts/bench --budget [--reps N ...]`.
"""

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

import bench
from bench import BIN, GOOGLE, ROOT, Postgres, cpu_seconds, free_port, log, storefront, tree, wait_http, wrk

LIMIT = ["--rate-limit", "1000000/s", "--rate-burst", "1000"]


class Process:
    """A started process (`self.proc`, in a session of its own) measured with its children."""

    def pids(self):
        return tree(self.proc.pid)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


class Instance(Process):
    """`storefront serve` on the PostgreSQL database `db`, with `extra` flags."""

    def __init__(self, db, workdir, extra=()):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [str(BIN), "--database", db, "serve", "--addr", f"127.0.0.1:{self.port}", *LIMIT, *extra],
            env=dict(os.environ, STOREFRONT_LOG_FORMAT="json", RUST_LOG="warn"),
            stdout=subprocess.DEVNULL, stderr=open(Path(workdir) / "instance.log", "ab"), start_new_session=True)
        wait_http(self.base + "/readyz")


class Balancer(Process):
    """HAProxy in front of `instances`, as scripts/cluster configures it."""

    def __init__(self, instances, workdir):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        cfg = Path(workdir) / "haproxy.cfg"
        servers = "\n".join(f"    server s{i} 127.0.0.1:{inst.port}" for i, inst in enumerate(instances))
        cfg.write_text(f"""global
    maxconn 4096
defaults
    mode http
    option http-buffer-request
    timeout connect 2s
    timeout client 65s
    timeout server 35s
    retries 3
    retry-on conn-failure empty-response
frontend storefront
    bind 127.0.0.1:{self.port}
    default_backend instances
backend instances
    balance roundrobin
    source 127.0.0.2
    default-server send-proxy-v2
{servers}
""")
        self.proc = subprocess.Popen(["haproxy", "-f", str(cfg)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        wait_http(self.base + "/healthz")


def run_once(setup, workload, pg, db, key, bodies, cfg, workdir):
    """One wrk run of `workload` against a fresh `setup`: `shared`, `local` or `cluster2`."""
    if setup == "cluster2":
        instances = [Instance(db, workdir, ["--proxy-protocol-from", "127.0.0.2"]) for _ in range(2)]
        front = Balancer(instances, workdir)
        parts = [*instances, front]
    else:
        front = Instance(db, workdir, ["--local-rate-budget"] if setup == "local" else [])
        parts = [front]
    try:
        if workload == "create":
            script, args = ROOT / "benches/wrk/create.lua", lambda tag: [key, tag]
        else:
            script, args = ROOT / "benches/wrk/list.lua", lambda tag: [key, str(bodies)]
        wrk(front.base, cfg.conns, cfg.warmup, script, args(f"w{time.time_ns()}"))
        pids = lambda: [p for part in parts for p in part.pids()] + pg.pids()
        cpu0 = cpu_seconds(pids())
        result = wrk(front.base, cfg.conns, cfg.duration, script, args(f"m{time.time_ns()}"))
        cpu = cpu_seconds(pids()) - cpu0
    finally:
        for part in reversed(parts):
            part.stop()
    n = max(result["requests"], 1)
    if result["errors"]:
        log(f"   !! {setup} {workload}: {result['errors']} of {result['requests']} requests failed or were not 2xx")
    return {"rps": result["requests"] / (result["duration_us"] / 1e6), "p99_ms": result["p99_us"] / 1000,
            "cpu_ms": cpu * 1000 / n, "errors": result["errors"]}


def fresh_merchant(pg):
    """A new database with one merchant: its URL and the merchant's key."""
    db = pg.fresh("budget")
    return db, json.loads(storefront(db, "merchant", "create", "--name", "bench", "--json"))["api_key"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conns", type=int, default=16)
    p.add_argument("--duration", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--workloads", default="list-google,create")
    p.add_argument("--out", default=str(ROOT / "target/bench/budget.md"))
    cfg = p.parse_args()
    workdir = Path(bench.scratch_dir("storefront-budget-bench-"))
    os.chmod(workdir, 0o755)  # the cluster runs as the postgres user
    pg = Postgres(workdir)
    try:
        db, key = fresh_merchant(pg)
        storefront(db, "categories", "import", "--format", "google", str(GOOGLE))
        probe = Instance(db, workdir)
        bodies = bench.collect_list_bodies(probe.base, key, workdir, "budget-google")
        probe.stop()
        setups, workloads = ["local", "shared", "cluster2"], cfg.workloads.split(",")
        runs = {(s, w): [] for s in setups for w in workloads}
        for rep in range(cfg.reps):
            for workload in workloads:
                for setup in setups:
                    # Each create run on a database of its own, so that runs do not slow the next.
                    run_db, run_key = (db, key) if workload != "create" else fresh_merchant(pg)
                    r = run_once(setup, workload, pg, run_db, run_key, bodies, cfg, workdir)
                    runs[(setup, workload)].append(r)
                    log(f"   rep {rep + 1} {workload:12} {setup:8} {r['rps']:8.0f} req/s  p99 {r['p99_ms']:6.1f} ms  "
                        f"cpu {r['cpu_ms']:.3f} ms/req")
        med = lambda s, w, k: statistics.median(r[k] for r in runs[(s, w)])
        lines = [
            f"`scripts/bench --budget --workloads {cfg.workloads} --reps {cfg.reps} --conns {cfg.conns} "
            f"--warmup {cfg.warmup} --duration {cfg.duration}` "
            f"on {bench.machine()}; medians of {cfg.reps} alternating runs; CPU per request is the instances', "
            "PostgreSQL's (and HAProxy's, for the cluster) together.",
            "",
            "| workload | budget | req/s | p99 ms | CPU ms/req | CPU ÷ local |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for w in workloads:
            base = med("local", w, "cpu_ms")
            for s, label in [("local", "local (one instance)"), ("shared", "shared (one instance)"),
                             ("cluster2", "shared, 2 instances behind HAProxy")]:
                lines.append(f"| {w} | {label} | {med(s, w, 'rps'):.0f} | {med(s, w, 'p99_ms'):.1f} | "
                             f"{med(s, w, 'cpu_ms'):.3f} | {med(s, w, 'cpu_ms') / base:.3f} |")
        text = "\n".join(lines) + "\n"
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(text)
        print(text)
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
