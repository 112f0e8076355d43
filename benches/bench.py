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
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import search_bench
# The shared pieces, imported by name: the other scripts under benches/ reach them as `bench.X`.
from bench_attack import Attacker, split_attack
from bench_data import PUSH_ROWS, collect_list_bodies, fresh_copy, generated_taxonomy, location, push_file
from bench_procs import (ROOT, Postgres, cpu_seconds, free_port, log, peak_rss_mib, pg_shell, post, run,
                         scratch_dir, serve, side_by_side, stop_process, tree, wait_http, write_report)
from bench_report import BASE_SKIPPED, STANDARD, machine, mean, report

# Names the other scripts under benches/ reach through this module (`bench.machine`, …).
__all__ = ["machine", "pg_shell", "serve", "stop_process"]

BIN = ROOT / "target/release/storefront"
# `--cores N`: the cpus the measured server is pinned to, and the load generator's (taskset).
PIN = None
# wrk's threads (`--wrk-threads`); by default two, one for a single connection.
WRK_THREADS = None
CEILING = ROOT / "target/release/examples/ceiling"
TOOLS = ROOT / "target/tools"
PEER_VENV = TOOLS / "peer-venv"
GOOGLE = ROOT / "data/google-product-taxonomy.en-US.txt"
# Locations seeded for the update and archive workloads (benches/wrk/change.lua walks them).
CHANGE_LOCATIONS = 20_000
# `--base-bin`: an earlier build of this service, measured beside ours on the create workload.
BASE_BIN = None
# The rate limits ours and the base serve with: off, or (`--limits`) on at budgets no workload
# spends, so that every request pays for its check as it does in production.
LIMITS_OFF = ["--rate-limit", "0", "--storefront-rate-limit", "0"]
LIMITS_UNREACHED = ["--rate-limit", "1000000/s", "--rate-burst", "1000000",
                    "--storefront-rate-limit", "1000000/s", "--storefront-rate-burst", "1000000"]
LIMITS = LIMITS_OFF


class Server:
    def __init__(self, kind, db, workdir, page_file=None):
        self.kind = kind
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, STOREFRONT_LOG_FORMAT="json")
        if kind in ("ours", "base"):
            binary = BIN if kind == "ours" else BASE_BIN
            url = db if str(db).startswith("postgres://") else f"sqlite://{db}"
            cmd = [str(binary), "--database", url, "serve", "--addr", f"127.0.0.1:{self.port}", *LIMITS]
            ready = self.base + "/readyz"
        elif kind == "ceiling":
            cmd = [str(CEILING), f"127.0.0.1:{self.port}", str(page_file)]
            ready = None
        else:
            env["STOREFRONT_PEER_DB"] = str(db)
            cmd = [str(PEER_VENV / "bin/uvicorn"), "app:app", "--workers", "2", "--host", "127.0.0.1",
                   "--port", str(self.port), "--log-level", "warning", "--no-access-log"]
            ready = None
        if PIN and kind != "peer":
            cmd = ["taskset", "-c", PIN[0], *cmd]
        self.started = time.time()
        self.proc = subprocess.Popen(cmd, cwd=ROOT / "benches/peer" if kind == "peer" else workdir, env=env,
                                     stdout=subprocess.DEVNULL, stderr=open(Path(workdir) / f"{kind}.log", "ab"),
                                     start_new_session=True)
        if ready:
            wait_http(ready)
        else:
            self.wait_port()
        self.ready_after = time.time() - self.started

    def wait_port(self):
        import socket
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                time.sleep(0.5 if self.kind == "peer" else 0.05)  # let uvicorn's workers come up
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.kind} did not start")

    def pids(self):
        return tree(self.proc.pid)

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except Exception:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


# ---- data -----------------------------------------------------------------------------------

def storefront(db, *args, stdin=None, binary=None):
    url = db if str(db).startswith("postgres://") else f"sqlite://{db}"
    return run([str(binary or BIN), "--log-format", "json", "--database", url, *args],
               capture_output=True, text=True, input=stdin).stdout


def prepare(workdir, big_leaves, workloads):
    log("== preparing databases")
    dbs = {}
    needed = {"create": "create", "google": "list-google", "big": "list-1m"}
    if "push" in workloads and "create" not in workloads:
        workloads = [*workloads, "create"]  # push starts from create's empty template
    # The cold start is measured on the Google taxonomy, whatever the workloads.
    for name, taxonomy in [("create", None), ("google", GOOGLE), ("big", "big")]:
        if name != "google" and needed[name] not in workloads:
            continue
        db = workdir / f"{name}.template.db"
        issued = json.loads(storefront(db, "merchant", "create", "--name", "bench", "--json"))
        if taxonomy == "big":
            path = workdir / "big-taxonomy.json"
            generated_taxonomy(path, big_leaves)
            t = time.time()
            storefront(db, "categories", "import", str(path))
            log(f"   imported the generated taxonomy in {time.time() - t:.1f} s")
        elif taxonomy:
            storefront(db, "categories", "import", str(taxonomy))
        # Serve it once, so the template carries its cursor secret: cursors collected on one copy
        # are then valid on every copy.
        Server("ours", db, workdir).stop()
        dbs[name] = (db, issued["api_key"])
    if BASE_BIN and "create" in workloads:
        # The earlier build's own schema: it must not pay for (or miss) what ours migrates in.
        db = workdir / "create.base.template.db"
        issued = json.loads(storefront(db, "merchant", "create", "--name", "bench", "--json", binary=BASE_BIN))
        Server("base", db, workdir).stop()
        dbs["create.base"] = (db, issued["api_key"])
    # The peer's own index for its ORDER BY (a team would add one).
    for name in [n for n in ("create", "google") if n in dbs]:
        peer_db = workdir / f"{name}.peer.template.db"
        shutil.copy(dbs[name][0], peer_db)
        import sqlite3
        c = sqlite3.connect(peer_db)
        c.execute("CREATE INDEX IF NOT EXISTS peer_categories_order ON categories (sort_order IS NULL, sort_order, id)")
        c.execute("CREATE INDEX IF NOT EXISTS peer_categories_parent ON categories (parent_id)")
        # Its own neighbour search by latitude band (ours finds neighbours on the search index).
        if "band" not in {row[1] for row in c.execute("PRAGMA table_info(locations)")}:
            c.execute("ALTER TABLE locations ADD COLUMN band INTEGER NOT NULL DEFAULT 0")
        c.execute("CREATE INDEX IF NOT EXISTS peer_locations_nearby ON locations (merchant_pk, band, longitude)")
        c.commit()
        c.close()
        dbs[name + ".peer"] = (peer_db, dbs[name][1])
    return dbs


def migrated(db):
    """A cached database brought to our schema once (ours migrates it when it opens it) and
    checkpointed: each copy of it is then served as it is, not migrated again on every copy while
    it is measured (a migration that builds an index over a million rows would be paid, and its
    write-ahead log checkpointed, in every run)."""
    import sqlite3
    storefront(db, "merchant", "list")
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def location_database(n):
    """A database whose merchant has `n` locations, created through the service itself; generated
    once and kept under target/bench-cache (a million takes a few minutes)."""
    cache = TOOLS.parent / "bench-cache"
    cache.mkdir(parents=True, exist_ok=True)
    db, meta = cache / f"locations-{n}.db", cache / f"locations-{n}.json"
    if meta.exists() and db.exists():
        return migrated(db), json.loads(meta.read_text())["api_key"]
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    log(f"== generating a merchant with {n:,} locations into {db}")
    key = json.loads(storefront(db, "merchant", "create", "--name", "bench", "--json"))["api_key"]
    server = Server("ours", db, cache)
    t = time.time()
    try:
        from concurrent.futures import ThreadPoolExecutor
        def batch(start):
            items = [location(i) for i in range(start, min(start + 200, n))]
            answer = post(server.base, "/v1/location/create", key, {"locations": items})
            assert all(r["status"] == "ACTIVE" for r in answer["locations"]), answer
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(batch, range(0, n, 200)))
    finally:
        server.stop()
    log(f"   created in {time.time() - t:.0f} s")
    meta.write_text(json.dumps({"api_key": key}))
    return migrated(db), key


def measure_push(cfg, workdir, dbs, csv_path, concurrency=4):
    """`storefront locations push` of the generated CSV into an empty database, timed as a whole:
    wall clock, the CLI's own CPU and peak RSS (its rusage), the server's CPU over the same time."""
    template, key = dbs["create"]
    db = fresh_copy(template, workdir, "push")
    server = Server("ours", db, workdir)
    try:
        pids = server.pids()
        cpu0 = cpu_seconds(pids)
        env = dict(os.environ, STOREFRONT_URL=server.base, STOREFRONT_API_KEY=key)
        t = time.time()
        proc = subprocess.Popen([str(BIN), "locations", "push", str(csv_path), "--concurrency", str(concurrency)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        out = proc.stdout.read().decode()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.time() - t
        server_cpu = cpu_seconds(server.pids()) - cpu0
    finally:
        server.stop()
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    if status != 0 or not out.startswith(f"{PUSH_ROWS} rows: {PUSH_ROWS} created"):
        log(f"   !! push: exit status {status}: {out.strip()}")
    cli_cpu = usage.ru_utime + usage.ru_stime
    return {"rps": PUSH_ROWS / wall, "items_per_s": PUSH_ROWS / wall, "wall_s": wall, "cli_cpu_s": cli_cpu,
            "server_cpu_s": server_cpu, "cli_rss_mib": usage.ru_maxrss / 1024, "errors": int(status != 0),
            "p50_ms": 0, "p99_ms": 0, "cpu_ms_per_req": 0, "peak_rss_mib": usage.ru_maxrss / 1024, "requests": PUSH_ROWS}


BASE_COPIES = {}


def base_schema_copy(template, dbs, workdir):
    """A copy of one of our databases that the earlier build can open for reading: at the schema
    version it knows (that of the database it made itself, `create.base`), with what later
    migrations dropped added back (the latitude band, migration 6, no longer written). Made once a
    template."""
    import sqlite3
    if template in BASE_COPIES:
        return BASE_COPIES[template]
    probe = dbs["create.base"][0] if "create.base" in dbs else workdir / "base-probe.db"
    if not Path(probe).exists():
        storefront(probe, "merchant", "create", "--name", "probe", "--json", binary=BASE_BIN)
    with sqlite3.connect(probe) as c:
        known = c.execute("PRAGMA user_version").fetchone()[0]
    db = fresh_copy(template, workdir, "base-schema")
    c = sqlite3.connect(db)
    columns = {row[1] for row in c.execute("PRAGMA table_info(locations)")}
    if "band" not in columns:
        c.execute("ALTER TABLE locations ADD COLUMN band INTEGER NOT NULL DEFAULT 0")
    if c.execute("PRAGMA user_version").fetchone()[0] > known:
        c.execute(f"PRAGMA user_version = {int(known)}")
    c.commit()
    c.close()
    BASE_COPIES[template] = db
    return db


def base_capabilities(workdir, workloads, same_schema=False):
    """Which of `workloads` the base build cannot be measured on, into BASE_SKIPPED: a build from
    before the search has none (404), and no earlier build can open a PostgreSQL database of our
    newer schema (its migrations refuse it), so search-1m-pg and locations-1m-pg are ours alone."""
    probe = workdir / "base-capabilities.db"
    key = json.loads(storefront(probe, "merchant", "create", "--name", "probe", "--json", binary=BASE_BIN))["api_key"]
    server = Server("base", probe, workdir)
    try:
        req = urllib.request.Request(server.base + "/v1/location/search", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
        try:
            urllib.request.urlopen(req, timeout=10).close()
            searches = True
        except urllib.error.HTTPError as e:
            searches = e.code != 404
    finally:
        server.stop()
    for w in workloads:
        if w.startswith("search-") and not searches:
            BASE_SKIPPED[w] = "the base build has no search"
        elif w.startswith(ON_PG_MILLION) and not same_schema:
            BASE_SKIPPED[w] = "the base build cannot open a PostgreSQL database of our schema"
    log("== the base build is not measured on: " + (", ".join(f"{w} ({why})" for w, why in BASE_SKIPPED.items()) or "none"))


# ---- measuring ------------------------------------------------------------------------------

def wrk(base, conns, seconds, script, args):
    threads = min(WRK_THREADS or 2, max(1, conns))
    cmd = ["taskset", "-c", PIN[1]] if PIN else []
    cmd += ["wrk", "-t", str(threads), "-c", str(conns), "-d", f"{seconds}s", "--timeout", "10s", "--latency",
           "-s", str(script), base, "--", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(out)


# Workloads that only read a database generated once (served as it is, never copied).
READS_ONLY = ("locations-", "search-")
# Workloads that read the million copied into PostgreSQL (search-1m's, served as it is).
ON_PG_MILLION = ("search-1m-pg", "locations-1m-pg")

# The create workload on PostgreSQL: how many merchants its requests take turns between.
PG_MERCHANTS = {"create-pg": 1, "create-pg8": 8}


def measure(kind, workload, conns, cfg, workdir, dbs, page_files, bodies, pg=None):
    if workload in PG_MERCHANTS:
        db = pg.fresh(f"{kind}_{workload}")
        binary = BIN if kind == "ours" else BASE_BIN
        keys = [json.loads(storefront(db, "merchant", "create", "--name", f"bench {i}", "--json", binary=binary))["api_key"]
                for i in range(PG_MERCHANTS[workload])]
        return measure_on(kind, workload, conns, cfg, workdir, db, ",".join(keys), page_files, bodies, pg)
    template, key = {
        "create": dbs.get({"peer": "create.peer", "base": "create.base"}.get(kind, "create")),
        "list-google": dbs.get("google.peer" if kind == "peer" else "google"),  # ours and base alike
        "list-1m": dbs.get("big"),
        "update": dbs.get("changes"),
        "archive": dbs.get("changes"),
        "locations-1k": dbs.get("locations-1k"),
        "locations-1m": dbs.get("locations-1m"),
        "locations-1m-pg": dbs.get("locations-1m-pg"),
        "search-1k": dbs.get("search-1k.peer" if kind == "peer" else "search-1k"),
        "search-1m": dbs.get("search-1m.peer" if kind == "peer" else "search-1m"),
        "search-1m-pg": dbs.get("search-1m-pg"),
        "search-1m-sf": dbs.get("search-1m.peer" if kind == "peer" else "search-1m-sf"),
        "search-1m-pg-sf": dbs.get("search-1m-pg-sf"),
    }[split_attack(workload)[0]]
    if workload.startswith(ON_PG_MILLION):
        return measure_on(kind, workload, conns, cfg, workdir, template, key, page_files, bodies, pg)
    if kind == "base" and workload != "create":
        template = base_schema_copy(template, dbs, workdir)
    # The location lists and searches only read: their (large) databases are served as they are.
    reads_only = workload.startswith(READS_ONLY)
    db = template if reads_only else fresh_copy(template, workdir, f"{kind}-{workload}")
    return measure_on(kind, workload, conns, cfg, workdir, db, key, page_files, bodies)


def measure_on(kind, workload, conns, cfg, workdir, db, key, page_files, bodies, pg=None):
    """One closed-loop wrk run of `workload` against a server of `kind` on `db` (a SQLite file, or
    a PostgreSQL URL whose server's CPU is counted with ours); `create+slow` and the like run an
    `Attacker` beside it."""
    workload, attack = split_attack(workload)
    reads_only = workload.startswith(READS_ONLY)
    attacker_key = None
    if attack == "slow":
        attacker_key = json.loads(storefront(db, "merchant", "create", "--name", "attacker", "--json"))["api_key"]
    server = Server(kind, db, workdir, page_files.get(workload))
    attacker = Attacker(attack, server.port, attacker_key) if attack else None
    try:
        if attacker:
            attacker.__enter__()
        if workload == "create" or workload in PG_MERCHANTS:
            script, items = ROOT / "benches/wrk/create.lua", 200
            args = lambda tag: [key, tag]
        elif workload in ("update", "archive"):
            script, items = ROOT / "benches/wrk/change.lua", 200
            args = lambda tag: [key, workload, str(CHANGE_LOCATIONS // 200)]
        elif workload.startswith("search-"):
            script, items = ROOT / "benches/wrk/list.lua", 20
            args = lambda tag: [key, str(bodies[("ours", workload)]), "/v1/location/search"]
        elif reads_only:
            script, items = ROOT / "benches/wrk/list.lua", 100
            args = lambda tag: [key, str(bodies[("ours", workload)]), "/v1/location/list"]
        else:
            script, items = ROOT / "benches/wrk/list.lua", 100
            body_file = bodies[(kind if kind not in ("ceiling", "base") else "ours", workload)]
            args = lambda tag: [key, str(body_file)]
        # A search server just started holds no index: its first search is answered on the database.
        first = (first_search(server.base, key, bodies[("ours", workload)])
                 if workload.startswith("search-") and kind in ("ours", "base") else None)
        wrk(server.base, conns, cfg.warmup, script, args(f"w{time.time_ns()}"))
        index = index_held(server.base) if workload.startswith("search-") else None
        if first is not None:
            index = {**(index or {}), "ready_s": server.ready_after, "first_search_ms": first}
        pids = lambda: server.pids() + (pg.pids() if pg else [])
        counts_transactions = pg is not None and str(db).startswith("postgres://")
        if counts_transactions:
            time.sleep(1.2)
            transactions0 = pg.transactions()
            pg_cpu0 = cpu_seconds(pg.pids())
        cpu0 = cpu_seconds(pids())
        result = wrk(server.base, conns, cfg.duration, script, args(f"m{time.time_ns()}"))
        cpu = cpu_seconds(pids()) - cpu0
        if counts_transactions:
            # PostgreSQL's own share of the CPU counted, apart: what the server waits on, not does.
            pg_cpu = cpu_seconds(pg.pids()) - pg_cpu0
            time.sleep(1.2)
            requests = max(result["requests"], 1)
            index = {**(index or {}), "pg_tx_per_req": (pg.transactions() - transactions0) / requests,
                     "pg_cpu_ms_per_req": pg_cpu * 1000 / requests}
        rss = peak_rss_mib(server.pids())
        anon = peak_rss_mib(server.pids(), "RssAnon:")
    finally:
        if attacker:
            attacker.__exit__(None, None, None)
        server.stop()
        for suffix in ("", "-wal", "-shm"):
            if not reads_only and not str(db).startswith("postgres://"):
                Path(str(db) + suffix).unlink(missing_ok=True)
    seconds = result["duration_us"] / 1e6
    n = max(result["requests"], 1)
    if result["errors"]:
        log(f"   !! {kind} {workload} c={conns}: {result['errors']} of {result['requests']} requests failed or were not 2xx")
    return {"rps": result["requests"] / seconds, "items_per_s": result["requests"] * items / seconds,
            "p50_ms": result["p50_us"] / 1000, "p99_ms": result["p99_us"] / 1000, "cpu_ms_per_req": cpu * 1000 / n,
            "peak_rss_mib": rss, "anon_rss_mib": anon, "errors": result["errors"], "requests": result["requests"],
            **(index or {})}


def first_search(base, key, body_file):
    """The first question of `body_file` asked once, in ms: a server just started answers it
    without waiting for an index."""
    import urllib.request
    body = next(line for line in Path(body_file).read_text().splitlines() if line).encode()
    request = urllib.request.Request(base + "/v1/location/search", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as r:
        r.read()
    return (time.perf_counter() - started) * 1000


def scrape(base):
    """The server's metrics: series name (with its labels) to value."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            lines = r.read().decode().splitlines()
    except urllib.error.HTTPError:
        return {}
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in lines if line and not line.startswith("#")}


def index_held(base, wait_s=180, merchants=1):
    """After the warm-up of a search workload: waits until the searched merchant's index is held in
    memory (a build that the warm-up's first search started), so that the run measures searches from
    memory; the index's bytes and how long the wait was. None for a build that keeps no index in
    memory (the base, or --search-memory 0). `merchants`: how many indexes are to be held (their
    bytes together)."""
    started = time.time()
    while True:
        metrics = scrape(base)
        if not any(k.startswith("searches_total") for k in metrics):
            return None
        if metrics.get("search_memory_merchants", 0) >= merchants:
            return {"index_bytes": metrics.get("search_memory_bytes", 0), "index_wait_s": time.time() - started}
        if time.time() - started > wait_s:
            log(f"   !! no index held within {wait_s} s")
            return None
        time.sleep(0.2)


def cold_start(dbs, workdir, times=5):
    samples = []
    for _ in range(times):
        db = fresh_copy(dbs["google"][0], workdir, "cold")
        server = Server("ours", db, workdir)
        samples.append(server.ready_after)
        server.stop()
    return statistics.median(samples)


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
        global LIMITS
        LIMITS = LIMITS_UNREACHED
    if cfg.cores:
        return by_cores(cfg)
    if cfg.wrk_threads:
        global WRK_THREADS
        WRK_THREADS = cfg.wrk_threads
    if cfg.ours_bin:
        global BIN
        BIN = Path(cfg.ours_bin).resolve()
    if cfg.standard:
        cfg.base_bin, cfg.servers, cfg.workloads = cfg.standard, "ours,ceiling", ",".join(STANDARD)
        cfg.conns = "16" if cfg.conns == p.get_default("conns") else cfg.conns
        cfg.duration = max(cfg.duration, 8)
    cfg.out = cfg.out or str(ROOT / ("target/bench/standard.md" if cfg.standard else "target/bench/report.md"))
    cfg.conns = [int(c) for c in cfg.conns.split(",")]
    cfg.big_total = 10 + 10 * 100 + 10 * 100 * max(1, cfg.big // 1000)
    servers, workloads = cfg.servers.split(","), cfg.workloads.split(",")
    global BASE_BIN
    if cfg.base_bin:
        BASE_BIN = Path(cfg.base_bin).resolve()
        if "base" not in servers:
            servers.append("base")
    command = "scripts/bench " + " ".join(sys.argv[1:])

    workdir = Path(scratch_dir("storefront-bench-"))
    pg = None
    try:
        if any(w in PG_MERCHANTS or w.endswith(("-pg", "-pg-sf")) for w in workloads):
            os.chmod(workdir, 0o755)  # the cluster runs as the postgres user
            pg = Postgres(workdir)
        dbs = prepare(workdir, cfg.big, workloads)
        bodies, page_files = {}, {}
        if ("update" in workloads or "archive" in workloads) and "ours" in servers:
            dbs["changes"] = location_database(CHANGE_LOCATIONS)
        for workload, n in [("locations-1k", 1000), ("locations-1m", cfg.locations)]:
            if workload in workloads and "ours" in servers:
                dbs[workload] = location_database(n)
                server = Server("ours", dbs[workload][0], workdir)
                try:
                    # The ceiling serves the first page of ours, of the same size.
                    page = post(server.base, "/v1/location/list", dbs[workload][1], {"pagination": {"limit": 100}})
                    page_files[workload] = workdir / f"page-{workload}.json"
                    page_files[workload].write_text(json.dumps(page, separators=(",", ":")))
                    bodies[("ours", workload)] = collect_list_bodies(
                        server.base, dbs[workload][1], workdir, workload, path="/v1/location/list")
                finally:
                    server.stop()
        for workload, n in [("search-1k", 1000), ("search-1m", cfg.locations)]:
            if workload in workloads or (workload == "search-1m" and any(w.startswith(("search-1m-", "locations-1m-pg"))
                                                                         for w in workloads)):
                db, peer, key = search_bench.database(sys.modules[__name__], n, workdir)
                dbs[workload], dbs[workload + ".peer"] = (db, key), (peer, key)
                bodies[("ours", workload)] = search_bench.bodies(workdir, workload)
                page_files[workload] = search_bench.answer_page(sys.modules[__name__], db, key, bodies[("ours", workload)],
                                                                workdir, workload)
        if any(w.startswith(ON_PG_MILLION) for w in workloads):
            dbs["search-1m-pg"] = search_bench.postgres_database(sys.modules[__name__], pg, dbs["search-1m"][0], workdir)
            bodies[("ours", "search-1m-pg")] = bodies[("ours", "search-1m")]
        # Location lists on PostgreSQL: the search's million, of three type sets, so that a page
        # without a filter merges three ranges of the index.
        if "locations-1m-pg" in workloads and "ours" in servers:
            dbs["locations-1m-pg"] = dbs["search-1m-pg"]
            server = Server("ours", dbs["locations-1m-pg"][0], workdir)
            try:
                bodies[("ours", "locations-1m-pg")] = collect_list_bodies(
                    server.base, dbs["locations-1m-pg"][1], workdir, "locations-1m-pg", path="/v1/location/list")
            finally:
                server.stop()
        # The buyers' searches: the same questions with a storefront key (the key a checkout page has).
        for workload, on in [("search-1m-sf", "search-1m"), ("search-1m-pg-sf", "search-1m-pg")]:
            if workload in workloads:
                db = dbs[on][0]
                dbs[workload] = (db, search_bench.storefront_key(sys.modules[__name__], db))
                bodies[("ours", workload)], page_files[workload] = bodies[("ours", on)], page_files.get("search-1m")
        # The ceiling serves the very page ours serves first; bodies are collected from each server.
        for workload, name in [("list-google", "google"), ("list-1m", "big")]:
            if workload not in workloads:
                continue
            db = fresh_copy(dbs[name][0], workdir, "collect")
            server = Server("ours", db, workdir)
            try:
                key = dbs[name][1]
                page = post(server.base, "/v1/categories/list", key, {"pagination": {"limit": 100}})
                page_files[workload] = workdir / f"page-{name}.json"
                page_files[workload].write_text(json.dumps(page, separators=(",", ":")))
                bodies[("ours", workload)] = collect_list_bodies(server.base, key, workdir, name)
            finally:
                server.stop()
            if "peer" in servers and workload == "list-google":
                db = fresh_copy(dbs["google.peer"][0], workdir, "collect-peer")
                server = Server("peer", db, workdir)
                try:
                    bodies[("peer", workload)] = collect_list_bodies(server.base, dbs["google"][1], workdir, "peer-google")
                finally:
                    server.stop()
        if BASE_BIN:
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
        text = report(results, cfg, cold, command, pin=PIN, base_bin=BASE_BIN, limits=LIMITS)
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


if os.environ.get("STOREFRONT_BENCH_PIN"):
    PIN = tuple(os.environ["STOREFRONT_BENCH_PIN"].split("/", 1))


if __name__ == "__main__":
    main()
