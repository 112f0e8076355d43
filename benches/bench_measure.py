"""One measured run of a workload against one server, and what the earlier build (the base) can
be measured on: the databases each server reads, the script wrk runs, the CPU counted."""

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import bench_settings as settings
from bench_attack import Attacker, split_attack
from bench_data import PUSH_ROWS, fresh_copy
from bench_procs import ROOT, cpu_seconds, log, peak_rss_mib
from bench_report import BASE_SKIPPED
from bench_servers import Server, first_search, index_held, storefront, wrk
from bench_settings import CHANGE_LOCATIONS

# Workloads that only read a database generated once (served as it is, never copied).
READS_ONLY = ("locations-", "search-")
# Workloads that read the million copied into PostgreSQL (search-1m's, served as it is).
ON_PG_MILLION = ("search-1m-pg", "locations-1m-pg")

# The create workload on PostgreSQL: how many merchants its requests take turns between.
PG_MERCHANTS = {"create-pg": 1, "create-pg8": 8}



def measure(kind, workload, conns, cfg, workdir, dbs, page_files, bodies, pg=None):
    if workload in PG_MERCHANTS:
        db = pg.fresh(f"{kind}_{workload}")
        binary = settings.BIN if kind == "ours" else settings.BASE_BIN
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
        proc = subprocess.Popen([str(settings.BIN), "locations", "push", str(csv_path), "--concurrency", str(concurrency)],
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
        storefront(probe, "merchant", "create", "--name", "probe", "--json", binary=settings.BASE_BIN)
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
    key = json.loads(storefront(probe, "merchant", "create", "--name", "probe", "--json", binary=settings.BASE_BIN))["api_key"]
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

