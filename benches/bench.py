#!/usr/bin/env python3
"""The benchmark (issue 7): both endpoints of this service, side by side in one run on one machine
with (a) the ceiling of our own HTTP stack and (b) a FastAPI + pydantic v2 peer; results and the
targets as ratios go to target/bench/report.md (their figures then into BENCHMARKS.md's goals). Run it with `scripts/bench` (see --help).

Each (server, workload, connections) is measured REPS times, each time on a freshly started
server over a fresh copy of the database: a warm-up, then a closed-loop wrk run. Reported:
requests/s, items/s, p50/p99 latency, server CPU time per request (from /proc/<pid>/stat before
and after the measured run, all of the server's processes), peak RSS (VmHWM, summed over the
server's processes), and the service's cold start (spawn to /readyz 200) with the Google taxonomy.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import bench_settings as settings
# The shared pieces, imported by name: the other scripts under benches/ reach them as `bench.X`,
# and set what a run measures with as `bench.settings.X`.
from bench_data import collect_list_bodies, location, push_file
from bench_measure import PG_MERCHANTS, base_capabilities, measure, measure_push
from bench_prepare import workload_data
from bench_procs import (ROOT, Postgres, cpu_seconds, free_port, log, pg_shell, post, scratch_dir, serve,
                         side_by_side, stop_process, tree, write_report)
from bench_report import BASE_SKIPPED, STANDARD, machine, mean, report
from bench_servers import Server, cold_start, index_held, migrated, scrape, storefront, wrk
from bench_settings import CEILING, LIMITS_UNREACHED, TOOLS

# Names the other scripts under benches/ reach through this module (`bench.machine`, …), and
# `search_bench` through the module it is handed.
__all__ = ["CEILING", "Server", "TOOLS", "collect_list_bodies", "cpu_seconds", "free_port", "index_held",
           "location", "machine", "migrated", "pg_shell", "post", "scrape", "serve", "settings", "side_by_side",
           "stop_process", "storefront", "tree", "wrk"]

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conns", default="1,4,16,64")
    p.add_argument("--duration", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--wrk-threads", type=int, help="wrk's threads (default 2, 1 for a single connection): on two "
                   "cores, the load generator's second thread takes CPU from the server measured")
    p.add_argument("--big", type=int, default=1_000_000, help="leaves of the generated taxonomy")
    p.add_argument("--servers", default="ours,ceiling,peer")
    p.add_argument("--workloads", default="create,create-pg,create-pg8,update,archive,list-google,list-1m,locations-1k,locations-1m,push")
    p.add_argument("--locations", type=int, default=1_000_000, help="locations of the big merchant")
    p.add_argument("--out", help="where the report goes (default target/bench/report.md; with --standard target/bench/standard.md)")
    p.add_argument("--standard", metavar="BASE_BINARY",
                   help="the standard set every change must not slow down (" + ", ".join(STANDARD) + "), at 16 "
                   "connections beside BASE_BINARY (an earlier release build of storefront) and the ceiling, with one "
                   "targets table: each ratio to the base and issue 37's goals")
    p.add_argument("--cores", help="LIST (e.g. 1,2): each run's server pinned to that many cores with taskset, the "
                   "load generator to the others (a count that leaves it none is refused); one report per count")
    p.add_argument("--ours-bin", help="the build measured as ours (default target/release/storefront)")
    p.add_argument("--base-same-schema", action="store_true",
                   help="the base build has our database schema (a build of this turn's work): measure it on PostgreSQL too")
    p.add_argument("--base-bin", help="an earlier build of storefront, measured beside ours on create, the category "
                   "list and search (server 'base'; it reads copies of our databases at its own schema version)")
    p.add_argument("--limits", action="store_true",
                   help="serve ours and the base with the rate limits on, at budgets no workload spends (" +
                   " ".join(LIMITS_UNREACHED) + "): each request pays for its budget's check, as in production")
    cfg = p.parse_args()
    if cfg.limits:
        settings.LIMITS = LIMITS_UNREACHED
    if cfg.cores:
        return by_cores(cfg)
    if cfg.wrk_threads:
        settings.WRK_THREADS = cfg.wrk_threads
    if cfg.ours_bin:
        settings.BIN = Path(cfg.ours_bin).resolve()
    if cfg.standard:
        cfg.base_bin, cfg.servers, cfg.workloads = cfg.standard, "ours,ceiling", ",".join(STANDARD)
        cfg.conns = "16" if cfg.conns == p.get_default("conns") else cfg.conns
        cfg.duration = max(cfg.duration, 8)
    cfg.out = cfg.out or str(ROOT / ("target/bench/standard.md" if cfg.standard else "target/bench/report.md"))
    cfg.conns = [int(c) for c in cfg.conns.split(",")]
    cfg.big_total = 10 + 10 * 100 + 10 * 100 * max(1, cfg.big // 1000)
    servers, workloads = cfg.servers.split(","), cfg.workloads.split(",")
    if cfg.base_bin:
        settings.BASE_BIN = Path(cfg.base_bin).resolve()
        if "base" not in servers:
            servers.append("base")
    command = "scripts/bench " + " ".join(sys.argv[1:])

    workdir = Path(scratch_dir("storefront-bench-"))
    pg = None
    try:
        if any(w in PG_MERCHANTS or w.endswith(("-pg", "-pg-sf")) for w in workloads):
            os.chmod(workdir, 0o755)  # the cluster runs as the postgres user
            pg = Postgres(workdir)
        dbs, bodies, page_files = workload_data(cfg, workdir, servers, workloads, pg)
        if settings.BASE_BIN:
            base_capabilities(workdir, workloads, cfg.base_same_schema)
        csv_path = push_file(workdir) if "push" in workloads else None
        cold = cold_start(dbs, workdir) if "ours" in servers else None
        log(f"== cold start with the Google taxonomy: {cold:.3f} s" if cold else "")
        results = {}
        # Each repetition measures every workload, and the servers take turns within it, so that
        # what a ratio compares (two servers, or two workloads: PostgreSQL's search and SQLite's)
        # was measured minutes apart at most: this shared machine's speed drifts over a run.
        for rep in range(cfg.reps):
            for workload in workloads:
                for conns in cfg.conns:
                    if workload == "push":
                        if conns == cfg.conns[0]:
                            r = measure_push(cfg, workdir, dbs, csv_path)
                            results.setdefault("ours|push|4", []).append(r)
                            log(f"   push         ours     rep {rep + 1}: {r['items_per_s']:9,.0f} rows/s  wall {r['wall_s']:.2f} s  "
                                f"cli cpu {r['cli_cpu_s']:.2f} s  server cpu {r['server_cpu_s']:.2f} s  cli rss {r['cli_rss_mib']:.1f} MiB")
                        continue
                    # Who goes first turns with each repetition: the first server on a database
                    # only read (search, locations) also pays for faulting its pages in.
                    for kind in servers[rep % len(servers):] + servers[:rep % len(servers)]:
                        if kind == "peer" and workload == "list-1m":
                            continue
                        if kind == "ceiling" and workload == "locations-1k":
                            pass  # the ceiling of a page of that size
                        elif kind not in ("ours", "base") and (workload.startswith("locations-") or workload in ("update", "archive")):
                            continue  # only ours has a location list and changes
                        # The ceiling and the peer have no keys: search-1m's figures stand for the buyers' too.
                        if kind in ("ceiling", "peer") and (workload in PG_MERCHANTS or workload.startswith("search-1m-pg")
                                                            or workload.endswith("-sf")):
                            continue
                        if kind == "base" and (workload in BASE_SKIPPED or workload not in (*STANDARD, *PG_MERCHANTS)):
                            continue  # the base build is measured where a target compares with it
                        r = measure(kind, workload, conns, cfg, workdir, dbs, page_files, bodies, pg)
                        results.setdefault(f"{kind}|{workload}|{conns}", []).append(r)
                        log(f"   {workload:12} {kind:8} c={conns:<3} rep {rep + 1}: {r['rps']:9,.0f} req/s  p99 {r['p99_ms']:7.2f} ms  "
                            f"cpu {r['cpu_ms_per_req']:.3f} ms/req  rss {r['peak_rss_mib']:.1f} MiB  errors {r['errors']}"
                            + (f"  ready {r['ready_s']:.2f} s, first search {r['first_search_ms']:.1f} ms"
                               if "first_search_ms" in r else "")
                            + (f"  index {r['index_bytes'] / 2**20:.1f} MiB (held {r['index_wait_s']:.1f} s after the warm-up)"
                               if "index_bytes" in r else "")
                            + (f"  PostgreSQL transactions {r['pg_tx_per_req']:.3f}/req, its CPU {r['pg_cpu_ms_per_req']:.3f} "
                               "ms/req of the above" if "pg_tx_per_req" in r else ""))
        (ROOT / "target/bench").mkdir(parents=True, exist_ok=True)
        (ROOT / "target/bench/results.json").write_text(json.dumps({"results": results, "cold_start_s": cold}, indent=1))
        text = report(results, cfg, cold, command, pin=settings.PIN, base_bin=settings.BASE_BIN, limits=settings.LIMITS)
        Path(cfg.out).write_text(text)
        print(text)
    finally:
        if pg:
            pg.stop()


def pinning(n):
    """The cpus a server of `n` cores is pinned to and the load generator's: the server's are the
    last `n` of those this process may use, the generator has the rest; None when none are left."""
    cpus = sorted(os.sched_getaffinity(0))
    if n < 1 or n >= len(cpus):
        return None
    span = lambda cs: ",".join(str(c) for c in cs)
    return span(cpus[-n:]), span(cpus[:-n])


def by_cores(cfg):
    """`--cores LIST`: this benchmark again for each count, its server pinned (see `pinning`);
    each count's report in target/bench/cores-N.md, and the req/s of each at every count."""
    counts = [int(c) for c in cfg.cores.split(",")]
    cpus = len(os.sched_getaffinity(0))
    for n in counts:
        if pinning(n) is None:
            sys.exit(f"--cores {n}: this machine has {cpus} cpus, and the load generator needs at least one "
                     f"(on {cpus} cpus: --cores 1 to {cpus - 1})")
    argv, skip = [], False
    for a in sys.argv[1:]:
        if skip:
            skip = False
        elif a in ("--cores", "--out"):
            skip = True
        elif not a.startswith(("--cores=", "--out=")):
            argv.append(a)
    runs = {}
    for n in counts:
        server, client = pinning(n)
        out = ROOT / f"target/bench/cores-{n}.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        log(f"== {n} core(s): the server on cpus {server}, wrk on {client}")
        subprocess.run([sys.executable, __file__, *argv, "--out", str(out)], check=True,
                       env=dict(os.environ, STOREFRONT_BENCH_PIN=f"{server}/{client}"))
        runs[n] = json.loads((ROOT / "target/bench/results.json").read_text())["results"]
        log(f"   report: {out}")
    lines = [f"# Scaling: `scripts/bench {' '.join(sys.argv[1:])}`", "",
             "Each row's server pinned to that many cores with taskset, wrk to the others; req/s, the mean of "
             "the repetitions, and its ratio to the first count.", "",
             "| server | workload | conns | " + " | ".join(f"{n} core(s)" for n in counts) + " |",
             "|---|---|---:|" + "---:|" * len(counts)]
    for key in sorted({k for r in runs.values() for k in r}):
        kind, workload, conns = key.split("|")
        rps = [mean(runs[n][key], "rps") if key in runs[n] else None for n in counts]
        first = rps[0]
        cells = [f"{v:,.0f}" + (f" ({v / first:.2f}x)" if first and i else "") if v else "-"
                 for i, v in enumerate(rps)]
        lines.append(f"| {kind} | {workload} | {conns} | " + " | ".join(cells) + " |")
    write_report(ROOT / "target/bench/cores.md", lines)


if __name__ == "__main__":
    main()
