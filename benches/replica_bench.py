#!/usr/bin/env python3
"""Issue 39's workload (`scripts/bench --replicas`): where a buyer's search lands with a replica.

`search-1m-pg` (a merchant with a million locations on PostgreSQL, fsync on, the search questions
of benches/search_bench.py) searched with a storefront key by wrk (16 connections) while a writer
creates at a steady rate (another merchant: 20 creates/s of 5 locations), side by side in one run:

- `primary`: one instance on the primary alone;
- `replica`: the same instance with `--read-replica` naming a streaming hot standby of it.

Each reports searches/s, p99, the CPU of the primary's PostgreSQL processes per search, the
replica's and the instance's, and the writer's creates/s and p99. Two more measurements in each
run say what of the primary's CPU is not search work: the writer alone (its CPU a second on the
primary), and a key check (CONTRACT §19 checks keys on the primary: the category list with the same
key, answered from memory after its key check, is the primary's CPU of one). Goal: the primary's
CPU per search with the replica <= 0.05 of the run without. On two cores the replica shares the CPU
with everything else: searches/s is not the figure to read; where the work lands is.

Each configuration REPS times, alternating; medians reported.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the shared helpers: wrk, CPU, processes, PostgreSQL)
import search_bench  # noqa: E402  (the million locations and the questions)

ROOT = bench.ROOT
BIN = ROOT / "target/release/storefront"
WRITER_PER_S = 20
WRITER_BATCH = 5


class Standby:
    """A streaming hot standby of `pg` (scripts/lib/postgres.sh pg_start_standby), its shared
    buffers sized like the primary's."""

    def __init__(self, pg, workdir):
        self.dir, self.port = Path(workdir) / "replica", bench.free_port()
        t = time.time()
        bench.pg_shell(f"PG_FSYNC=on PG_SHARED_BUFFERS={pg.SHARED_BUFFERS} pg_start_standby {pg.port} {self.dir} {self.port}")
        bench.log(f"   the standby was copied and started in {time.time() - t:.0f} s")
        self.postmaster = int((self.dir / "data/postmaster.pid").read_text().split()[0])

    def url(self, name):
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def pids(self):
        return bench.tree(self.postmaster)

    def stop(self):
        bench.pg_shell(f"pg_stop {self.dir}")


def start(db, extra=()):
    return bench.serve(BIN, db, ("--storefront-rate-limit", "0", *extra))


stop = bench.stop_process


def metric(base, series):
    with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[1])
    return None


class Writer:
    """Creates WRITER_PER_S requests a second of WRITER_BATCH locations each, on a schedule (a
    late request is sent at once, not skipped), in a thread."""

    def __init__(self, base, key, first):
        self.base, self.key, self.next = base, key, first
        self.latencies, self.errors = [], 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        host, port = self.base.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        start = time.monotonic()
        sent = 0
        while not self.stopped.is_set():
            due = start + sent / WRITER_PER_S
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            items = [bench.location(self.next + i) for i in range(WRITER_BATCH)]
            self.next += WRITER_BATCH
            t = time.monotonic()
            conn.request("POST", "/v1/location/create", json.dumps({"locations": items}),
                         {"Content-Type": "application/json", "Authorization": f"Bearer {self.key}"})
            response = conn.getresponse()
            response.read()
            self.latencies.append(time.monotonic() - t)
            if response.status != 200:
                self.errors += 1
            sent += 1

    def measure(self):
        """(requests, p99 seconds) since the last call."""
        done, self.latencies = self.latencies, []
        p99 = statistics.quantiles(done, n=100)[98] if len(done) > 1 else 0.0
        return len(done), p99

    def stop(self):
        self.stopped.set()
        self.thread.join()


def run(label, db, key, writer_key, bodies, cfg, pg, standby, first, extra=()):
    """One instance, `extra` its flags: the writer alone, the searches with the writer, then key
    checks (the category list) with the writer."""
    proc, base = start(db, extra)
    try:
        if extra:
            deadline = time.time() + 60
            while metric(base, 'replica_lag_seconds{replica="0"}') != 0.0:
                if time.time() > deadline:
                    raise RuntimeError("the replica did not catch up within 60 s")
                time.sleep(0.2)
        writer = Writer(base, writer_key, first)
        try:
            script = ROOT / "benches/wrk/list.lua"
            args = [key, str(bodies), "/v1/location/search"]
            # The writer alone, then with the searches.
            time.sleep(2)
            writer.measure()
            groups = {"primary": pg.pids, "replica": standby.pids, "instance": lambda: bench.tree(proc.pid)}
            cpu0 = {k: bench.cpu_seconds(f()) for k, f in groups.items()}
            time.sleep(cfg.writer_alone)
            alone = {k: bench.cpu_seconds(f()) - cpu0[k] for k, f in groups.items()}
            alone_writes, _ = writer.measure()
            bench.wrk(base, cfg.conns, cfg.warmup, script, args)
            reads0 = (metric(base, 'db_reads_total{target="primary"}') or 0, metric(base, 'db_reads_total{target="replica"}') or 0)
            writer.measure()
            cpu0 = {k: bench.cpu_seconds(f()) for k, f in groups.items()}
            result = bench.wrk(base, cfg.conns, cfg.duration, script, args)
            cpu = {k: bench.cpu_seconds(f()) - cpu0[k] for k, f in groups.items()}
            writes, write_p99 = writer.measure()
            reads = ((metric(base, 'db_reads_total{target="primary"}') or 0) - reads0[0],
                     (metric(base, 'db_reads_total{target="replica"}') or 0) - reads0[1])
            lists = Path(bodies).with_name("category-list-bodies.txt")
            lists.write_text('{"pagination":{"limit":1}}\n')
            key_cpu0 = bench.cpu_seconds(pg.pids())
            checks = bench.wrk(base, cfg.conns, cfg.duration // 2, script, [key, str(lists), "/v1/categories/list"])
            key_cpu = bench.cpu_seconds(pg.pids()) - key_cpu0
        finally:
            writer.stop()
            next_first = writer.next
    finally:
        stop(proc)
    seconds = result["duration_us"] / 1e6
    n = max(result["requests"], 1)
    writer_share = alone["primary"] / cfg.writer_alone * seconds
    check_seconds = checks["duration_us"] / 1e6
    key_check_ms = max(key_cpu - alone["primary"] / cfg.writer_alone * check_seconds, 0) * 1000 / max(checks["requests"], 1)
    r = {
        "searches_per_s": result["requests"] / seconds, "p99_ms": result["p99_us"] / 1000, "errors": result["errors"],
        "primary_ms": cpu["primary"] * 1000 / n, "replica_ms": cpu["replica"] * 1000 / n,
        "instance_ms": cpu["instance"] * 1000 / n,
        "primary_net_ms": max(cpu["primary"] - writer_share, 0) * 1000 / n,
        "writer_alone_primary_ms_per_s": alone["primary"] * 1000 / cfg.writer_alone,
        "writes_per_s": writes / seconds, "writes_alone_per_s": alone_writes / cfg.writer_alone,
        "write_p99_ms": write_p99 * 1000, "write_errors": 0,
        "read_on_primary": reads[0], "read_on_replica": reads[1], "key_check_ms": key_check_ms,
        "search_work_ms": max(max(cpu["primary"] - writer_share, 0) * 1000 / n - key_check_ms, 0),
    }
    bench.log(f"   {label}: {r['searches_per_s']:,.0f} searches/s, p99 {r['p99_ms']:.1f} ms; CPU ms/search: primary "
              f"{r['primary_ms']:.3f} (less the writer's {r['primary_net_ms']:.3f}), replica {r['replica_ms']:.3f}, "
              f"instance {r['instance_ms']:.3f}; a key check {r['key_check_ms']:.3f}, search work {r['search_work_ms']:.3f}; writer {r['writes_per_s']:.1f}/s p99 {r['write_p99_ms']:.0f} ms; "
              f"read on primary {reads[0]:,.0f}, replica {reads[1]:,.0f}")
    return r, next_first


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--duration", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--writer-alone", type=int, default=10, dest="writer_alone",
                   help="seconds the writer runs alone before each measurement")
    p.add_argument("--conns", type=int, default=16)
    p.add_argument("--locations", type=int, default=1_000_000)
    p.add_argument("--out", default=str(ROOT / "target/bench/replicas.md"))
    cfg = p.parse_args()
    workdir = bench.scratch_dir("replica-bench-")
    os.chmod(workdir, 0o755)  # the clusters run as the postgres user
    pg = bench.Postgres(workdir)
    standby = None
    try:
        sqlite_db, _, _ = search_bench.database(bench, cfg.locations, workdir)
        db, _ = search_bench.postgres_database(bench, pg, sqlite_db, workdir)
        name = db.rsplit("/", 1)[1]
        merchant_id = subprocess.run(
            [f"{pg.bin}/psql", "-qAt", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", "-d", name, "-c",
             "SELECT id FROM merchants WHERE name = 'search'"], check=True, capture_output=True, text=True).stdout.strip()
        key = json.loads(bench.storefront(db, "key", "issue", "--merchant", merchant_id, "--scope", "storefront",
                                          "--json"))["api_key"]
        writer_key = json.loads(bench.storefront(db, "merchant", "create", "--name", "writer", "--json"))["api_key"]
        bodies = search_bench.bodies(workdir, "search-1m-pg")
        bench.log("== starting a streaming standby of the primary")
        standby = Standby(pg, workdir)
        runs = {"primary": [], "replica": []}
        first = 0
        for rep in range(cfg.reps):
            for label, extra in (("primary", ()), ("replica", ("--read-replica", standby.url(name)))):
                r, first = run(f"{label} #{rep + 1}", db, key, writer_key, bodies, cfg, pg, standby, first, extra)
                runs[label].append(r)
    finally:
        if standby:
            standby.stop()
        pg.stop()
    a, b = runs["primary"], runs["replica"]
    share = median(b, "primary_ms") / median(a, "primary_ms")
    net = median(b, "primary_net_ms") / max(median(a, "primary_net_ms"), 1e-9)
    work = median(b, "search_work_ms") / max(median(a, "search_work_ms"), 1e-9)
    verdict = lambda ok: "met" if ok else "**not met**"
    machine = bench.machine()
    row = lambda label, runs: (
        f"| {label} | {median(runs, 'searches_per_s'):,.0f} | {median(runs, 'p99_ms'):.1f} | "
        f"{median(runs, 'primary_ms'):.3f} | {median(runs, 'primary_net_ms'):.3f} | {median(runs, 'key_check_ms'):.3f} | "
        f"{median(runs, 'search_work_ms'):.3f} | {median(runs, 'replica_ms'):.3f} | "
        f"{median(runs, 'instance_ms'):.3f} | {median(runs, 'writes_per_s'):.1f} | {median(runs, 'write_p99_ms'):.0f} | "
        f"{median(runs, 'read_on_primary'):,.0f} / {median(runs, 'read_on_replica'):,.0f} |")
    lines = [
        f"Command: `scripts/bench --replicas` (reps {cfg.reps}, {cfg.duration} s runs, {cfg.conns} connections), "
        f"{time.strftime('%Y-%m-%d')}, {machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']} GiB, "
        f"{machine['rustc']}. {cfg.locations:,} locations; a writer creating {WRITER_PER_S}/s x {WRITER_BATCH} "
        f"locations throughout.",
        "",
        "| run | searches/s | p99 ms | primary CPU ms/search | less the writer's | a key check's | "
        "the rest: search work | replica CPU ms/search | instance CPU ms/search | writer creates/s | writer p99 ms "
        "| searches read on primary / replica |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        row("primary alone", a),
        row("with a replica", b),
        "",
        "| target | figure | goal | verdict |",
        "|---|---:|---|---|",
        f"| the primary's CPU per search, with a replica ÷ without | {share:.3f} | <= 0.05 | {verdict(share <= 0.05)} |",
        f"| the same, less the writer's own share on the primary | {net:.3f} | (report) | |",
        f"| the same, less the writer's share and the key check: search work | {work:.3f} | (report) | |",
        f"| the writer's creates/s, with a replica ÷ without | "
        f"{median(b, 'writes_per_s') / median(a, 'writes_per_s'):.2f} | (report) | |",
        "",
        f"The writer alone costs the primary {median(a, 'writer_alone_primary_ms_per_s'):.0f} ms of CPU a second "
        f"({median(a, 'writes_alone_per_s'):.1f} creates/s); with a replica that is, together with the WAL sent to it "
        f"and the lag checks, what the primary does while the buyers search.",
    ]
    bench.write_report(cfg.out, lines)


if __name__ == "__main__":
    main()
