#!/usr/bin/env python3
"""The benchmark (issue 7): both endpoints of this service, side by side in one run on one machine
with (a) the ceiling of our own HTTP stack and (b) a FastAPI + pydantic v2 peer; results and the
targets as ratios go to BENCHMARKS.md. Run it with `scripts/bench` (see --help).

Each (server, workload, connections) is measured REPS times, each time on a freshly started
server over a fresh copy of the database: a warm-up, then a closed-loop wrk run. Reported:
requests/s, items/s, p50/p99 latency, server CPU time per request (from /proc/<pid>/stat before
and after the measured run, all of the server's processes), peak RSS (VmHWM, summed over the
server's processes), and the service's cold start (spawn to /readyz 200) with the Google taxonomy.
"""

import argparse
import json
import os
import platform
import random
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import search_bench

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target/release/storefront"
# `--cores N`: the cpus the measured server is pinned to, and the load generator's (taskset).
PIN = None
CEILING = ROOT / "target/release/examples/ceiling"
TOOLS = ROOT / "target/tools"
PEER_VENV = TOOLS / "peer-venv"
GOOGLE = ROOT / "data/google-product-taxonomy.en-US.txt"
TICK = os.sysconf("SC_CLK_TCK")
# Locations seeded for the update and archive workloads (benches/wrk/change.lua walks them).
CHANGE_LOCATIONS = 20_000
# `--base-bin`: an earlier build of this service, measured beside ours on the create workload.
BASE_BIN = None


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(base, path, key, body, timeout=120):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_http(url, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.02)
    raise RuntimeError(f"{url} not ready")


# ---- processes ------------------------------------------------------------------------------

def tree(pid):
    """pid and all its descendants."""
    pids, frontier = [pid], [pid]
    while frontier:
        parent = frontier.pop()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == parent:
                    pids.append(int(entry))
                    frontier.append(int(entry))
    return pids


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / TICK


def peak_rss_mib(pids, field="VmHWM:"):
    """The servers' peak resident memory (`VmHWM`), or with `field="RssAnon:"` their own memory now:
    resident memory less the pages of mapped files (SQLite's memory-mapped database)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(field):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def serve(binary, database, flags=()):
    """`binary serve` on `database` (a URL) and a free port, without the merchant rate limit,
    ready; its process (a session of its own) and base URL. Stop it with `stop_process`."""
    port = free_port()
    proc = subprocess.Popen([str(binary), "--log-format", "json", "--database", str(database), "serve", "--addr",
                             f"127.0.0.1:{port}", "--rate-limit", "0", *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    wait_http(base + "/readyz")
    return proc, base


def write_report(path, lines):
    """Writes a report's lines to `path` (its folder made) and prints them."""
    text = "\n".join(lines) + "\n"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
    print(text)


def stop_process(proc):
    """SIGTERM, then SIGKILL after a minute."""
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def pg_shell(command, capture=False):
    """`command` in bash with scripts/lib/postgres.sh loaded; its output when `capture`."""
    return subprocess.run(["bash", "-c", f". {ROOT}/scripts/lib/postgres.sh && {command}"], check=True,
                          capture_output=capture, text=True).stdout


class Postgres:
    """A throwaway PostgreSQL cluster in the workdir (scripts/lib/postgres.sh), with fsync on: the
    create workloads on PostgreSQL are compared with SQLite's synchronous=FULL. Its shared buffers
    are sized as a deployment's would be for the million-location search (2 GB, a twelfth of this
    machine's memory, about the size of the database): with PostgreSQL's default of 128 MB, every record a
    search reads is copied in from the kernel's cache, where SQLite maps its file."""

    SHARED_BUFFERS = "2GB"

    def __init__(self, workdir):
        self.dir, self.port, self.n = Path(workdir) / "pg", free_port(), 0
        self.shell(f"PG_FSYNC=on PG_SHARED_BUFFERS={self.SHARED_BUFFERS} pg_start {self.dir} {self.port}")
        self.bin = self.shell("pg_bin", capture=True).strip()
        self.postmaster = int((self.dir / "data/postmaster.pid").read_text().split()[0])

    def shell(self, command, capture=False):
        return pg_shell(command, capture)

    def fresh(self, tag):
        """An empty database's URL."""
        self.n += 1
        name = f"bench_{tag}_{self.n}".replace("-", "_")
        run([f"{self.bin}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name])
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def pids(self):
        return tree(self.postmaster)

    def stop(self):
        self.shell(f"pg_stop {self.dir}")


class Server:
    def __init__(self, kind, db, workdir, page_file=None):
        self.kind = kind
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, STOREFRONT_LOG_FORMAT="json")
        if kind in ("ours", "base"):
            binary = BIN if kind == "ours" else BASE_BIN
            url = db if str(db).startswith("postgres://") else f"sqlite://{db}"
            cmd = [str(binary), "--database", url, "serve", "--addr", f"127.0.0.1:{self.port}", "--rate-limit", "0"]
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


def generated_taxonomy(path, n_leaves):
    """10 roots > 100 departments each > leaves: about n_leaves categories, some sort_order null."""
    rnd = random.Random(42)
    per_dept = max(1, n_leaves // 1000)
    with open(path, "w") as f:
        f.write("[\n")
        first = True
        def emit(c):
            nonlocal first
            f.write(("" if first else ",\n") + json.dumps(c, separators=(",", ":")))
            first = False
        for r in range(10):
            emit({"id": f"r{r}", "name": f"Root {r}", "slug": f"root-{r}", "parent_id": None, "leaf": False,
                  "sort_order": r, "status": "active"})
            for d in range(100):
                dept = f"r{r}d{d}"
                emit({"id": dept, "name": f"Department {r}.{d}", "slug": f"department-{r}-{d}", "parent_id": f"r{r}",
                      "leaf": False, "sort_order": d, "status": "active" if d % 17 else "disabled"})
                for l in range(per_dept):
                    emit({"id": f"{dept}l{l}", "name": f"Category {r}.{d}.{l}", "slug": f"category-{r}-{d}-{l}",
                          "parent_id": dept, "leaf": True, "sort_order": None if rnd.random() < 0.05 else rnd.randrange(1000),
                          "description": "A generated category for the benchmark" if l % 10 == 0 else None,
                          "is_service": l % 50 == 0 or None, "is_digital": l % 70 == 0 or None,
                          "status": "disabled" if l % 23 == 0 else "active"})
        f.write("\n]\n")


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


def location(i):
    """The i-th generated location: a warehouse on a grid 200 m apart (no quarantine)."""
    return {"merchant_location_id": f"gen-{i}", "location_types": ["WAREHOUSE"], "name": f"Warehouse {i}",
            "address_tail": "101000, Russia, Moscow, Tverskaya street, 1",
            "latitude": round(-60 + (i // 1000) * 0.002, 6), "longitude": round(-170 + (i % 1000) * 0.003, 6),
            "limits": {"length": 200, "width": 120, "height": 150, "weight": 500},
            "working_schedule": [{"day": d, "schedule": {"time_start": "09:00", "time_end": "21:00", "break": "13:00-14:00"}}
                                 for d in ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY")],
            "is_accepts_returns": True}


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


PUSH_ROWS = 20_000
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def push_file(workdir):
    """PUSH_ROWS generated locations (those of `location`) as the CSV that `locations push` reads."""
    import csv
    path = workdir / "push.csv"
    header = ["merchant_location_id", "location_types", "name", "address_tail", "latitude", "longitude",
              "limits.length", "limits.width", "limits.height", "limits.weight",
              *[f"working_schedule.{d}" for d in DAYS], "is_accepts_returns"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for i in range(PUSH_ROWS):
            loc = location(i)
            days = {d["day"].lower(): f"{d['schedule']['time_start']}-{d['schedule']['time_end']} break {d['schedule']['break']}"
                    for d in loc["working_schedule"]}
            w.writerow([f"push-{i}", "; ".join(loc["location_types"]), loc["name"], loc["address_tail"],
                        loc["latitude"], loc["longitude"], *[loc["limits"][k] for k in ("length", "width", "height", "weight")],
                        *[days.get(d, "") for d in DAYS], "true"])
    return path


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


def base_capabilities(workdir, workloads):
    """Which of `workloads` the base build cannot be measured on, into BASE_SKIPPED: a build from
    before the search has none (404), and no earlier build can open a PostgreSQL database of our
    newer schema (its migrations refuse it), so search-1m-pg is ours alone."""
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
        elif w == "search-1m-pg":
            BASE_SKIPPED[w] = "the base build cannot open a PostgreSQL database of our schema"
    log("== the base build is not measured on: " + (", ".join(f"{w} ({why})" for w, why in BASE_SKIPPED.items()) or "none"))


def fresh_copy(template, workdir, tag):
    db = workdir / f"{tag}-{time.time_ns()}.db"
    shutil.copy(template, db)
    wal = Path(str(template) + "-wal")
    if wal.exists():
        shutil.copy(wal, str(db) + "-wal")
    return db


def collect_list_bodies(base, key, workdir, name, positions=200, path="/v1/categories/list"):
    """First page plus pages at random positions, reached by walking real cursors."""
    cursors, body = [None], {"pagination": {"limit": 1000}}
    while True:
        page = post(base, path, key, body)
        nxt = page["pagination"]["next_cursor"]
        if not nxt:
            break
        cursors.append(nxt)
        body = {"pagination": {"limit": 1000, "cursor": nxt}}
    # Positions inside the pages too: step in with limit 100 from a few of those cursors.
    more = []
    for c in random.Random(7).sample(cursors, min(len(cursors), positions // 4)):
        body = {"pagination": {"limit": 100, **({"cursor": c} if c else {})}}
        for _ in range(3):
            page = post(base, path, key, body)
            nxt = page["pagination"]["next_cursor"]
            if not nxt:
                break
            more.append(nxt)
            body = {"pagination": {"limit": 100, "cursor": nxt}}
    pool = cursors + more
    chosen = random.Random(11).sample(pool, min(len(pool), positions))
    path = workdir / f"bodies-{name}.txt"
    with open(path, "w") as f:
        for c in chosen:
            f.write(json.dumps({"pagination": {"limit": 100, **({"cursor": c} if c else {})}}) + "\n")
    return path


# ---- measuring ------------------------------------------------------------------------------

def wrk(base, conns, seconds, script, args):
    threads = max(1, min(conns, 2))
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

# The create workload on PostgreSQL: how many merchants its requests take turns between.
PG_MERCHANTS = {"create-pg": 1, "create-pg8": 8}


# ---- attackers (CONTRACT §17) ------------------------------------------------------------------

ATTACKER_ADDR = "127.0.0.2"


class Attacker:
    """One client address (127.0.0.2) doing what §17 names, beside the measured workload (wrk, from
    127.0.0.1), until stopped: `silent` holds as many silent connections as the per-client cap lets
    it (256), opening new ones as the server closes them; `slow` keeps 16 creates of 8 MiB arriving
    slowly (2 MiB at once, then a byte every half second) as another merchant; `401` sends requests
    with made-up keys over two connections at `FLOOD_PER_S` in all (a hundred times the default 401
    budget; unpaced, on a 2-core machine, the Python flood itself would take a core from the
    measured workload, which says nothing of the server)."""

    FLOOD_PER_S = 2000

    def __init__(self, kind, port, key=None):
        self.kind, self.port, self.key = kind, port, key
        self.stopping = threading.Event()
        self.sent = 0
        workers = {"silent": 4, "slow": 16, "401": 2}[kind]
        self.threads = [threading.Thread(target=getattr(self, f"run_{kind.replace('401', 'unauthenticated')}"), daemon=True)
                        for _ in range(workers)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        time.sleep(1)  # let it reach its full strength before the measurement
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=15)

    def connect(self):
        s = socket.socket()
        s.bind((ATTACKER_ADDR, 0))
        s.settimeout(5)
        s.connect(("127.0.0.1", self.port))
        return s

    def run_silent(self):
        held = []
        while not self.stopping.is_set():
            while len(held) < 64:
                try:
                    held.append(self.connect())
                except OSError:
                    break
            readable, _, _ = select.select(held, [], [], 0.5) if held else ([], [], [])
            for s in readable:
                try:
                    closed = not s.recv(1)
                except OSError:
                    closed = True
                if closed:
                    held.remove(s)
                    s.close()
            if not held:
                time.sleep(0.2)
        for s in held:
            s.close()

    def run_slow(self):
        head = (f"POST /v1/location/create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {self.key}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {8 << 20}\r\n\r\n").encode()
        while not self.stopping.is_set():
            try:
                s = self.connect()
                s.sendall(head + b" " * (2 << 20))
                while not self.stopping.is_set():
                    s.sendall(b" ")
                    if select.select([s], [], [], 0.5)[0]:
                        break  # answered (408, or the connection closed)
                s.close()
            except OSError:
                time.sleep(0.2)

    def run_unauthenticated(self):
        n = 0
        interval = len(self.threads) / self.FLOOD_PER_S
        next_at = time.time()
        while not self.stopping.is_set():
            try:
                s = self.connect()
                while not self.stopping.is_set():
                    next_at += interval
                    pause = next_at - time.time()
                    if pause > 0:
                        time.sleep(pause)
                    n += 1
                    s.sendall((f"POST /v1/categories/list HTTP/1.1\r\nHost: x\r\n"
                               f"Authorization: Bearer sf_{n:024x}_madeup\r\nContent-Length: 0\r\n\r\n").encode())
                    answer = b""
                    while b"\r\n\r\n" not in answer:
                        chunk = s.recv(65536)
                        if not chunk:
                            raise OSError("closed")
                        answer += chunk
                    head, _, body = answer.partition(b"\r\n\r\n")
                    length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
                    while len(body) < length:
                        body += s.recv(65536)
                    self.sent += 1
            except OSError:
                time.sleep(0.05)


def split_attack(workload):
    """`create+slow` → ("create", "slow"); `create` → ("create", None)."""
    base, _, attack = workload.partition("+")
    return base, attack or None


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
        "search-1k": dbs.get("search-1k.peer" if kind == "peer" else "search-1k"),
        "search-1m": dbs.get("search-1m.peer" if kind == "peer" else "search-1m"),
        "search-1m-pg": dbs.get("search-1m-pg"),
    }[split_attack(workload)[0]]
    if workload == "search-1m-pg":
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
        wrk(server.base, conns, cfg.warmup, script, args(f"w{time.time_ns()}"))
        pids = lambda: server.pids() + (pg.pids() if pg else [])
        cpu0 = cpu_seconds(pids())
        result = wrk(server.base, conns, cfg.duration, script, args(f"m{time.time_ns()}"))
        cpu = cpu_seconds(pids()) - cpu0
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
            "peak_rss_mib": rss, "anon_rss_mib": anon, "errors": result["errors"], "requests": result["requests"]}


def cold_start(dbs, workdir, times=5):
    samples = []
    for _ in range(times):
        db = fresh_copy(dbs["google"][0], workdir, "cold")
        server = Server("ours", db, workdir)
        samples.append(server.ready_after)
        server.stop()
    return statistics.median(samples)


# ---- report ---------------------------------------------------------------------------------

def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), platform.processor())
    mem = next(l.split()[1] for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith("MemTotal"))
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    wrk_v = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.splitlines()[0]
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(int(mem) / 1024 / 1024, 1),
            "kernel": platform.release(), "rustc": rustc, "python": platform.python_version(), "wrk": wrk_v}


def mean(runs, key):
    return statistics.mean(r[key] for r in runs)


# `--standard BASE`: the workloads no change may slow down, measured beside an earlier build and the
# ceiling (issue 37). search-1k is measured too: a search's cost at 1 M is judged against it.
STANDARD = ("create", "create-pg", "list-google", "search-1k", "search-1m", "search-1m-pg", "locations-1m")
# What the base build could not be measured on, and why (filled as the run finds out).
BASE_SKIPPED = {}


def standard_checks(check, get, ratio, results, cfg, t):
    """The targets of `--standard`: each workload's req/s and CPU per request beside the base build,
    then issue 37's absolute goals."""
    for w in STANDARD:
        if w in BASE_SKIPPED:
            check(f"{w}: req/s, ours ÷ base, {t} conns (n/a: {BASE_SKIPPED[w]})", None, "≥ 0.95", lambda v: True)
            continue
        check(f"{w}: req/s, ours ÷ base, {t} conns", ratio(get("ours", w, t), get("base", w, t)), "≥ 0.95", lambda v: v >= 0.95)
        check(f"{w}: server CPU per request, ours ÷ base, {t} conns",
              ratio(get("ours", w, t, "cpu_ms_per_req"), get("base", w, t, "cpu_ms_per_req")), "≤ 1.05", lambda v: v <= 1.05)
    check(f"create on PostgreSQL, one merchant, req/s, ours ÷ base, {t} conns (issue 37: at least the base's)",
          ratio(get("ours", "create-pg", t), get("base", "create-pg", t)), "≥ 1.0", lambda v: v >= 1.0)
    check(f"create on PostgreSQL ÷ create on SQLite, req/s, ours, {t} conns",
          ratio(get("ours", "create-pg", t), get("ours", "create", t)), "≥ 0.8", lambda v: v >= 0.8)
    check(f"searches/s, PostgreSQL ÷ SQLite, {cfg.locations:,} locations, {t} conns",
          ratio(get("ours", "search-1m-pg", t), get("ours", "search-1m", t)), "≥ 0.5", lambda v: v >= 0.5)
    check(f"search p99, PostgreSQL, {cfg.locations:,} locations, {t} conns (ms)", get("ours", "search-1m-pg", t, "p99_ms"),
          "≤ 25 ms", lambda v: v <= 25)
    check(f"searches/s ÷ ceiling serving an answer of the same size, SQLite, {cfg.locations:,} locations, {t} conns",
          ratio(get("ours", "search-1m", t), get("ceiling", "search-1m", t)), "≥ 0.3", lambda v: v >= 0.3)
    check(f"search cost (server CPU per search), {cfg.locations:,} ÷ 1,000 locations, SQLite, {t} conns",
          ratio(get("ours", "search-1m", t, "cpu_ms_per_req"), get("ours", "search-1k", t, "cpu_ms_per_req")),
          "≤ 1.2×", lambda v: v <= 1.2)
    check(f"search p99, SQLite, {cfg.locations:,} locations, {t} conns (ms)", get("ours", "search-1m", t, "p99_ms"),
          "≤ 5 ms", lambda v: v <= 5)
    check(f"list req/s, ours ÷ ceiling, Google, {t} conns", ratio(get("ours", "list-google", t), get("ceiling", "list-google", t)),
          "≥ 0.65", lambda v: v >= 0.65)
    peak = lambda w, key="peak_rss_mib": max((r[key] for r in results.get(f"ours|{w}|{t}", [])), default=None)
    check(f"peak RSS, ours, create load, {t} conns (MiB)", peak("create"), "≤ 64 MiB", lambda v: v <= 64, "{:.1f}")
    check(f"the search server's own memory (RSS less the mapped file), {cfg.locations:,} locations, {t} conns (MiB)",
          peak("search-1m", "anon_rss_mib"), "≤ 100 MiB", lambda v: v <= 100, "{:.1f}")


def report(results, cfg, cold, command):
    def get(kind, workload, conns, key="rps"):
        runs = results.get(f"{kind}|{workload}|{conns}")
        return mean(runs, key) if runs else None

    lines = ["# Benchmarks", "",
             f"Produced by `{command}` on {time.strftime('%Y-%m-%d')}: warm-up {cfg.warmup} s, then {cfg.duration} s "
             f"closed-loop per point, {cfg.reps} repetitions each on a freshly started server and a fresh copy of "
             "the database, the servers taking turns; figures are the mean of the repetitions. The load generator (wrk) runs on the same machine.",
             "", "Machine: " + ", ".join(f"{k} {v}" for k, v in machine().items())
             + (f"; the server pinned to cpus {PIN[0]} with taskset, wrk to cpus {PIN[1]}" if PIN else ""), "",
             "Servers: **ours** (`target/release/storefront serve --rate-limit 0`: SQLite, WAL, `synchronous=FULL`, "
             "all validation on, logs on); **ceiling** (`benches/ceiling.rs`: the same axum/tokio, answers "
             "pre-serialised, create only parses the body into `serde_json::Value`); **peer** (`benches/peer/app.py`: "
             "FastAPI + pydantic v2, typed request and answer models, on `uvicorn[standard]` (uvloop, httptools), "
             "2 workers, the same SQLite schema, one transaction per request)"
             + (f"; **base** (`{BASE_BIN}`: an earlier build of ours, the same flags, on copies of the same databases "
                "at its own schema version)." if BASE_BIN else "."),
             ""]
    for workload, title in [("create", "Create: 200 distinct, valid locations per request (about 300 KB)"),
                            ("create-pg", "Create on PostgreSQL (fsync on), one merchant: the same requests"),
                            ("create-pg8", "Create on PostgreSQL (fsync on), eight merchants taking turns request by request"),
                            ("list-google", "List: 100-item pages at random positions, Google taxonomy (5,582 categories)"),
                            ("list-1m", f"List: 100-item pages at random positions, generated taxonomy ({cfg.big_total:,} categories)"),
                            ("update", "Update: 200 locations a request, each with another working schedule (no coordinates moved)"),
                            ("archive", "Archive and restore: 200 locations a request, a batch's visits alternating archive and restore"),
                            ("locations-1k", "List locations: 100-record pages at random cursors, a merchant with 1,000 locations"),
                            ("locations-1m", f"List locations: 100-record pages at random cursors, a merchant with {cfg.locations:,} locations"),
                            ("search-1k", "Search: 20 nearest within 5 km, filter mix, a merchant with 1,000 locations around 20 cities"),
                            ("search-1m", f"Search: the same questions, a merchant with {cfg.locations:,} locations around the same 20 cities"),
                            ("search-1m-pg", f"Search on PostgreSQL (fsync on, its CPU counted): the same questions, {cfg.locations:,} locations")]:
        lines += [f"## {title}", "", "| server | conns | req/s | items/s | p50 ms | p99 ms | server CPU ms/req | peak RSS MiB | errors |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for kind in ("ours", "base", "ceiling", "peer"):
            for conns in cfg.conns:
                runs = results.get(f"{kind}|{workload}|{conns}")
                if not runs:
                    continue
                lines.append(f"| {kind} | {conns} | {mean(runs, 'rps'):,.0f} | {mean(runs, 'items_per_s'):,.0f} | "
                             f"{mean(runs, 'p50_ms'):.2f} | {mean(runs, 'p99_ms'):.2f} | {mean(runs, 'cpu_ms_per_req'):.3f} | "
                             f"{max(r['peak_rss_mib'] for r in runs):.1f} | {sum(r['errors'] for r in runs)} |")
        lines.append("")

    push_runs = results.get("ours|push|4")
    if push_runs:
        lines += [f"## Push: `storefront locations push` of a generated {PUSH_ROWS:,}-row CSV into an empty database, --concurrency 4", "",
                  "Timed as a whole, beside the create workload at 4 connections in the same run.", "",
                  "| rows/s | wall s | CLI CPU s | server CPU s | CLI CPU ÷ server CPU | CLI peak RSS MiB | create items/s at 4 conns |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        create4 = get("ours", "create", 4, "items_per_s")
        lines.append(f"| {mean(push_runs, 'items_per_s'):,.0f} | {mean(push_runs, 'wall_s'):.2f} | {mean(push_runs, 'cli_cpu_s'):.2f} | "
                     f"{mean(push_runs, 'server_cpu_s'):.2f} | {mean(push_runs, 'cli_cpu_s') / max(mean(push_runs, 'server_cpu_s'), 1e-9):.3f} | "
                     f"{max(r['cli_rss_mib'] for r in push_runs):.1f} | {'n/a' if create4 is None else f'{create4:,.0f}'} |")
        lines.append("")

    t = 16 if 16 in cfg.conns else cfg.conns[-1]
    checks = []
    def check(name, value, target, ok, fmt="{:.2f}"):
        checks.append((name, "n/a" if value is None else fmt.format(value), target,
                       "n/a" if value is None else ("met" if ok(value) else "**not met**")))
    ratio = lambda a, b: None if a is None or b is None or b == 0 else a / b
    if cfg.standard:
        standard_checks(check, get, ratio, results, cfg, t)
    else:
        check(f"create req/s, ours ÷ base (the build before the location list), {t} conns",
              ratio(get("ours", "create", t), get("base", "create", t)), "≥ 0.9", lambda v: v >= 0.9)
        check(f"create server CPU per request, ours ÷ base, {t} conns",
              ratio(get("ours", "create", t, "cpu_ms_per_req"), get("base", "create", t, "cpu_ms_per_req")), "≤ 1.1", lambda v: v <= 1.1)
        check(f"list req/s, ours ÷ base, Google, {t} conns",
              ratio(get("ours", "list-google", t), get("base", "list-google", t)), "0.95–1.05 (issue 26)", lambda v: v >= 0.95)
        check(f"create req/s, ours ÷ peer, {t} conns", ratio(get("ours", "create", t), get("peer", "create", t)), "≥ 4×", lambda v: v >= 4)
        check(f"create server CPU per request, ours ÷ peer, {t} conns",
              ratio(get("ours", "create", t, "cpu_ms_per_req"), get("peer", "create", t, "cpu_ms_per_req")), "≤ 1/6 (0.17)", lambda v: v <= 1 / 6)
        check(f"list req/s, ours ÷ ceiling, Google, {t} conns", ratio(get("ours", "list-google", t), get("ceiling", "list-google", t)), "≥ 0.60", lambda v: v >= 0.6)
        check(f"list req/s, ours ÷ peer, Google, {t} conns", ratio(get("ours", "list-google", t), get("peer", "list-google", t)), "≥ 10×", lambda v: v >= 10)
        check(f"list page cost (server CPU per request), 1M ÷ Google, {t} conns",
              ratio(get("ours", "list-1m", t, "cpu_ms_per_req"), get("ours", "list-google", t, "cpu_ms_per_req")), "≤ 1.2×", lambda v: v <= 1.2)
        check(f"list p99, ours, Google, {t} conns (ms)", get("ours", "list-google", t, "p99_ms"), "≤ 5 ms", lambda v: v <= 5)
        check(f"list p99, ours, 1M, {t} conns (ms)", get("ours", "list-1m", t, "p99_ms"), "≤ 5 ms", lambda v: v <= 5)
        peak = lambda w: max((r["peak_rss_mib"] for r in results.get(f"ours|{w}|{t}", [])), default=None)
        check(f"peak RSS, ours, create load, {t} conns (MiB)", peak("create"), "≤ 64 MiB", lambda v: v <= 64, "{:.1f}")
        check(f"peak RSS, ours, serving the Google taxonomy, {t} conns (MiB)", peak("list-google"), "≤ 32 MiB", lambda v: v <= 32, "{:.1f}")
        check(f"peak RSS, ours, {cfg.big_total:,} categories loaded, {t} conns (MiB)", peak("list-1m"), "≤ 400 MiB", lambda v: v <= 400, "{:.1f}")
        check("cold start to ready with the Google taxonomy, median of 5 (s)", cold, "≤ 1 s", lambda v: v <= 1, "{:.3f}")
        check(f"update req/s ÷ create req/s, ours, {t} conns", ratio(get("ours", "update", t), get("ours", "create", t)),
              "≥ 0.8", lambda v: v >= 0.8)
        check(f"archive/restore req/s ÷ create req/s, ours, {t} conns", ratio(get("ours", "archive", t), get("ours", "create", t)),
              "≥ 2", lambda v: v >= 2)
        check(f"location page cost (server CPU per request), {cfg.locations:,} ÷ 1,000 locations, {t} conns",
              ratio(get("ours", "locations-1m", t, "cpu_ms_per_req"), get("ours", "locations-1k", t, "cpu_ms_per_req")),
              "≤ 1.2×", lambda v: v <= 1.2)
        check(f"location pages/s, 1,000 locations, {t} conns", get("ours", "locations-1k", t), "≥ 10,000", lambda v: v >= 10_000, "{:,.0f}")
        check(f"location pages/s ÷ ceiling serving a page of the same size, {t} conns",
              ratio(get("ours", "locations-1k", t), get("ceiling", "locations-1k", t)), "(context)", lambda v: True)
        check(f"location list p99, 1,000 locations, {t} conns (ms)", get("ours", "locations-1k", t, "p99_ms"), "≤ 10 ms", lambda v: v <= 10)
        check(f"location list p99, {cfg.locations:,} locations, {t} conns (ms)", get("ours", "locations-1m", t, "p99_ms"), "≤ 10 ms", lambda v: v <= 10)
        if push_runs:
            check("push rows/s ÷ create items/s, 4 conns", ratio(get("ours", "push", 4, "items_per_s"), get("ours", "create", 4, "items_per_s")),
                  "≥ 0.8", lambda v: v >= 0.8)
            check("push: the CLI's CPU ÷ the server's, same rows",
                  ratio(mean(push_runs, "cli_cpu_s"), mean(push_runs, "server_cpu_s")), "≤ 0.25", lambda v: v <= 0.25, "{:.3f}")
            check(f"push: the CLI's peak RSS, {PUSH_ROWS:,} rows (MiB)", max(r["cli_rss_mib"] for r in push_runs), "≤ 64 MiB",
                  lambda v: v <= 64, "{:.1f}")
        check(f"searches/s, {cfg.locations:,} locations, SQLite, {t} conns", get("ours", "search-1m", t), "≥ 5,000",
              lambda v: v >= 5000, "{:,.0f}")
        check(f"search p99, {cfg.locations:,} locations, SQLite, {t} conns (ms)", get("ours", "search-1m", t, "p99_ms"), "≤ 10 ms",
              lambda v: v <= 10)
        check(f"search cost (server CPU per search), {cfg.locations:,} ÷ 1,000 locations, {t} conns",
              ratio(get("ours", "search-1m", t, "cpu_ms_per_req"), get("ours", "search-1k", t, "cpu_ms_per_req")),
              "≤ 1.5×", lambda v: v <= 1.5)
        check(f"searches/s ÷ ceiling serving an answer of the same size, {cfg.locations:,} locations, {t} conns",
              ratio(get("ours", "search-1m", t), get("ceiling", "search-1m", t)), "≥ 0.3", lambda v: v >= 0.3)
        check(f"searches/s, ours ÷ peer (FastAPI, SQLite R*Tree), {cfg.locations:,} locations, {t} conns",
              ratio(get("ours", "search-1m", t), get("peer", "search-1m", t)), "≥ 5×", lambda v: v >= 5)
        check(f"searches/s, ours ÷ peer, 1,000 locations, {t} conns",
              ratio(get("ours", "search-1k", t), get("peer", "search-1k", t)), "(context)", lambda v: True)
        check(f"searches/s, PostgreSQL (fsync on, its CPU counted), {cfg.locations:,} locations, {t} conns",
              get("ours", "search-1m-pg", t), "(report)", lambda v: True, "{:,.0f}")
        check(f"searches/s, PostgreSQL ÷ SQLite, {cfg.locations:,} locations, {t} conns",
              ratio(get("ours", "search-1m-pg", t), get("ours", "search-1m", t)), "≥ 0.4", lambda v: v >= 0.4)
        check(f"create on PostgreSQL, one merchant, req/s ÷ create on SQLite, ours, {t} conns",
              ratio(get("ours", "create-pg", t), get("ours", "create", t)), "≥ 0.8", lambda v: v >= 0.8)
        check(f"create on PostgreSQL, eight merchants ÷ one merchant, req/s, ours, {t} conns",
              ratio(get("ours", "create-pg8", t), get("ours", "create-pg", t)), "(context)", lambda v: True)
        check(f"create on PostgreSQL, one merchant, req/s, ours ÷ base, {t} conns",
              ratio(get("ours", "create-pg", t), get("base", "create-pg", t)), "(context)", lambda v: True)
    attacked = sorted({key.split("|")[1] for key in results if "+" in key.split("|")[1]})
    if attacked:
        lines += ["## Beside an attacker (CONTRACT §17, issue 26)", "",
                  "The same workload from 127.0.0.1 (wrk), alone and with an attacker on 127.0.0.2 at the same time: "
                  "`silent` holds 256 silent connections (the per-client cap), reopening them as they are closed; "
                  "`slow` keeps 16 creates of 8 MiB arriving slowly as another merchant; `401` sends made-up keys "
                  f"at {Attacker.FLOOD_PER_S:,}/s (a hundred times the 401 budget). The server's CPU counts its work for the "
                  "attacker too; the attacker (Python) and wrk share the same 2 cores.", "",
                  "| workload | attacker | conns | req/s alone | req/s beside | ratio | p99 ms alone | p99 ms beside | ratio |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for w in attacked:
            base, attack = split_attack(w)
            for conns in cfg.conns:
                alone, beside = get("ours", base, conns), get("ours", w, conns)
                if alone is None or beside is None:
                    continue
                p99a, p99b = get("ours", base, conns, "p99_ms"), get("ours", w, conns, "p99_ms")
                lines.append(f"| {base} | {attack} | {conns} | {alone:,.0f} | {beside:,.0f} | {beside / alone:.2f} | "
                             f"{p99a:.2f} | {p99b:.2f} | {p99b / p99a:.2f} |")
                if conns == t:
                    check(f"{base} req/s beside `{attack}` ÷ alone, {t} conns", beside / alone, "≥ 0.8", lambda v: v >= 0.8)
                    check(f"{base} p99 beside `{attack}` ÷ alone, {t} conns", p99b / p99a, "≤ 2×", lambda v: v <= 2)
        lines.append("")
    heading = ("## Targets: the standard set beside the earlier build (`--standard`), and issue 37's goals" if cfg.standard
               else "## Targets (issues 7, 15, 16, 17, 19, 26 and 27)")
    lines += [heading, "", "| target | measured | goal | verdict |", "|---|---:|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in checks]
    lines.append("")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conns", default="1,4,16,64")
    p.add_argument("--duration", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--big", type=int, default=1_000_000, help="leaves of the generated taxonomy")
    p.add_argument("--servers", default="ours,ceiling,peer")
    p.add_argument("--workloads", default="create,create-pg,create-pg8,update,archive,list-google,list-1m,locations-1k,locations-1m,push")
    p.add_argument("--locations", type=int, default=1_000_000, help="locations of the big merchant")
    p.add_argument("--out", help="where the report goes (default BENCHMARKS.md; with --standard target/bench/standard.md)")
    p.add_argument("--standard", metavar="BASE_BINARY",
                   help="the standard set every change must not slow down (" + ", ".join(STANDARD) + "), at 16 "
                   "connections beside BASE_BINARY (an earlier release build of storefront) and the ceiling, with one "
                   "targets table: each ratio to the base and issue 37's goals")
    p.add_argument("--cores", help="LIST (e.g. 1,2): each run's server pinned to that many cores with taskset, the "
                   "load generator to the others (a count that leaves it none is refused); one report per count")
    p.add_argument("--ours-bin", help="the build measured as ours (default target/release/storefront)")
    p.add_argument("--base-bin", help="an earlier build of storefront, measured beside ours on create, the category "
                   "list and search (server 'base'; it reads copies of our databases at its own schema version)")
    cfg = p.parse_args()
    if cfg.cores:
        return by_cores(cfg)
    if cfg.ours_bin:
        global BIN
        BIN = Path(cfg.ours_bin).resolve()
    if cfg.standard:
        cfg.base_bin, cfg.servers, cfg.workloads = cfg.standard, "ours,ceiling", ",".join(STANDARD)
        cfg.conns = "16" if cfg.conns == p.get_default("conns") else cfg.conns
        cfg.duration = max(cfg.duration, 8)
    cfg.out = cfg.out or str(ROOT / ("target/bench/standard.md" if cfg.standard else "BENCHMARKS.md"))
    cfg.conns = [int(c) for c in cfg.conns.split(",")]
    cfg.big_total = 10 + 10 * 100 + 10 * 100 * max(1, cfg.big // 1000)
    servers, workloads = cfg.servers.split(","), cfg.workloads.split(",")
    global BASE_BIN
    if cfg.base_bin:
        BASE_BIN = Path(cfg.base_bin).resolve()
        if "base" not in servers:
            servers.append("base")
    command = "scripts/bench " + " ".join(sys.argv[1:])

    workdir = Path(tempfile.mkdtemp(prefix="storefront-bench-"))
    pg = None
    try:
        if any(w in PG_MERCHANTS or w.endswith("-pg") for w in workloads):
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
            if workload in workloads or (workload == "search-1m" and "search-1m-pg" in workloads):
                db, peer, key = search_bench.database(sys.modules[__name__], n, workdir)
                dbs[workload], dbs[workload + ".peer"] = (db, key), (peer, key)
                bodies[("ours", workload)] = search_bench.bodies(workdir, workload)
                page_files[workload] = search_bench.answer_page(sys.modules[__name__], db, key, bodies[("ours", workload)],
                                                                workdir, workload)
        if "search-1m-pg" in workloads:
            dbs["search-1m-pg"] = search_bench.postgres_database(sys.modules[__name__], pg, dbs["search-1m"][0], workdir)
            bodies[("ours", "search-1m-pg")] = bodies[("ours", "search-1m")]
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
            base_capabilities(workdir, workloads)
        csv_path = push_file(workdir) if "push" in workloads else None
        cold = cold_start(dbs, workdir) if "ours" in servers else None
        log(f"== cold start with the Google taxonomy: {cold:.3f} s" if cold else "")
        results = {}
        # The servers take turns within each repetition, so that what they are compared by was
        # measured minutes apart at most: this shared machine's speed drifts over a run.
        for workload in workloads:
            for conns in cfg.conns:
                for rep in range(cfg.reps):
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
                        if kind in ("ceiling", "peer") and (workload in PG_MERCHANTS or workload == "search-1m-pg"):
                            continue
                        if kind == "base" and (workload in BASE_SKIPPED or workload not in (*STANDARD, *PG_MERCHANTS)):
                            continue  # the base build is measured where a target compares with it
                        r = measure(kind, workload, conns, cfg, workdir, dbs, page_files, bodies, pg)
                        results.setdefault(f"{kind}|{workload}|{conns}", []).append(r)
                        log(f"   {workload:12} {kind:8} c={conns:<3} rep {rep + 1}: {r['rps']:9,.0f} req/s  p99 {r['p99_ms']:7.2f} ms  "
                            f"cpu {r['cpu_ms_per_req']:.3f} ms/req  rss {r['peak_rss_mib']:.1f} MiB  errors {r['errors']}")
        (ROOT / "target/bench").mkdir(parents=True, exist_ok=True)
        (ROOT / "target/bench/results.json").write_text(json.dumps({"results": results, "cold_start_s": cold}, indent=1))
        text = report(results, cfg, cold, command)
        Path(cfg.out).write_text(text)
        print(text)
    finally:
        if pg:
            pg.stop()
        shutil.rmtree(workdir, ignore_errors=True)


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
