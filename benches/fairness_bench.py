#!/usr/bin/env python3
"""Fair to every merchant (`scripts/bench --fairness BASE_BINARY`), on SQLite or (`--engine postgres`)
on a throwaway PostgreSQL server with fsync on, ours beside BASE (the build before the fair
scheduler), each run on a fresh database and a freshly started server:

- `hanging`: merchant B has one endpoint at a receiver that answers at once and creates one
  location every 200 ms for `--seconds` (then its events are waited for a minute at most); other merchants have 0, 10 or 100 endpoints (10 a
  merchant) at receivers that accept connections and never answer (the attempt time limit is the
  default 15 s), each with a backlog of 100 events. Reported: B's delivery lag (commit to arrival,
  as the receiver saw it) p50 / p99 / max, and how many of B's events arrived. Goal: p99 <= 2 s.
- `recovering`: merchant A (an endpoint whose receiver refuses connections, 20,000 events) keeps 8
  recoveries of all of them in flight for `--seconds`; merchant B creates one location after
  another meanwhile. Reported: B's create p50 / p99, and the recoveries answered. Goal: p99 <= 250 ms.
- `building`: six merchants of 30,000 locations each are searched in turn, as fast as 4 clients go,
  with `--search-memory` room for about two of their indexes: a search of a merchant not held may
  start the build of its index (reading all its locations, then sorting them), which would drop
  another's (before room was weighed by searches, every such search did, and builds ran back to
  back); merchant B creates one location after another meanwhile. Reported: B's create p50 / p99,
  the builds made and the searches answered. Goal: p99 <= 250 ms.
- `crawling`: merchant B (30,000 locations) is searched by 2 clients while a crawler (4 clients)
  searches 20,000 other merchants of one location each in turn, with `--search-memory` room for B's
  index and about half of theirs: every search of a merchant not held weighs whether room may be
  made for it, against the indexes held. Reported: B's searches a second, p50 and p99, the
  crawler's searches a second, and the builds made. Goal: B's searches a second with 20,000 shops
  at least 0.9 of those with 2,000 (`--shops 2000`): weighing a shop's room costs what it would
  drop, not what is held.
- `retrying`: merchant A's 10 endpoints (at receivers that accept connections and never answer;
  the attempt time limit 1 s, retries every second) have 300 events each, most of them soon
  retries due; merchant B's
  endpoint fails its one event's first attempt (nothing listens on its port), then its receiver
  starts. Reported: how long B's retry took to arrive after that, a minute at most. Goal: within
  2 s, as a fresh event's delivery (before retries were read endpoint by endpoint, A's due
  retries filled what a claim read, and B's waited as long as A's receivers hung).
- `throughput`: merchant C with 4 endpoints at a receiver that answers at once creates 10,000
  locations (50 creates of 200, 4 at once): 40,000 deliveries, per second from the first create
  to the last delivery; alone, and with 100 hanging endpoints of other merchants beside it.
  Goal: beside them >= 0.8 of alone.
- `idle`: the same deliveries beside 20,000 and 100,000 idle endpoints of other merchants (one
  each, every event of theirs settled; written into the database before the server starts).
  Before a turn of the worker looked only at the merchants that rang, each read every endpoint.
  Reported: deliveries/s, and beside them ÷ alone.
- `waiting`: the same deliveries beside 2,000 and 10,000 endpoints of other merchants, each with
  one retry due in an hour (an outage's, scheduled). Before a turn claimed retries only when some
  might be due, every turn offered them: a probe of each such endpoint's retries.
  Reported: deliveries/s, and beside them ÷ alone.
"""

import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import bench_data  # noqa: E402
import events_bench  # noqa: E402

ROOT = bench.ROOT
FLAGS = ["--webhook-allow-private", "--webhook-allow-http"]
# `--engine postgres`: the throwaway cluster each run makes a fresh database in.
PG = None


class Silent:
    """Receivers that accept connections and never answer, on ports of their own (each bound to
    port 0: the system picks a free one), served by a thread of their own until `stop`."""

    def __init__(self, n):
        self.n = n
        self.ports = []
        self.servers = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        if not self.ready.wait(30) or len(self.ports) != n:
            raise RuntimeError(f"only {len(self.ports)} of {n} silent receivers started")

    async def _hold(self, reader, writer):
        try:
            while await reader.read(4096):
                pass
        except (ConnectionError, OSError):
            pass
        writer.close()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        for _ in range(self.n):
            server = self.loop.run_until_complete(asyncio.start_server(self._hold, "127.0.0.1", 0, backlog=4096))
            self.servers.append(server)
            self.ports.append(server.sockets[0].getsockname()[1])
        self.ready.set()
        self.loop.run_forever()
        for server in self.servers:
            server.close()

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def urls(self):
        return [f"http://127.0.0.1:{p}/hook" for p in self.ports]


def post(base, key, path, body):
    answer = bench.post(base, path, key, body)
    failed = [r for r in answer.get("locations", []) if r.get("status") == "FAILED"]
    assert not failed, failed[:1]
    return answer


def location(tag, i):
    """A valid warehouse; a merchant's are spread far apart (no two are neighbours)."""
    return {"merchant_location_id": f"{tag}-{i}", "location_types": ["WAREHOUSE"], "name": f"{tag} {i}",
            "address_tail": "101000, Russia, Moscow, Tverskaya street, 1",
            "latitude": -60 + (i % 1200) * 0.1, "longitude": -170 + (i // 1200) * 0.5,
            "limits": {"length": 200, "width": 120, "height": 150, "weight": 500}, "is_accepts_returns": True,
            "working_schedule": [{"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "18:00"}}]}


def hanging_merchants(binary, db, base, silent, events=100):
    """Merchants of 10 hanging endpoints each, each with `events` events."""
    urls = silent.urls()
    for m in range(0, len(urls), 10):
        key = events_bench.merchant(binary, db, f"hanging-{m}")
        for url in urls[m:m + 10]:
            post(base, key, "/v1/webhook/create", {"url": url})
        for c in range(0, events, 100):
            post(base, key, "/v1/location/create", {"locations": [location(f"h{m}", c + i) for i in range(100)]})


def fresh(binary, workdir, tag, idle=0, waiting=False):
    """A fresh database (a file, or a PostgreSQL database) with `idle` idle endpoints (each with a
    retry due in an hour if `waiting`), merchant B's key, and the server on it."""
    db = PG.fresh(tag) if PG else Path(workdir) / f"{tag}-{time.time_ns()}.db"
    key = events_bench.merchant(binary, db, "b")
    if idle:
        idle_endpoints(db, idle, waiting)
    url = db if PG else f"sqlite://{db}"
    proc, base = bench.serve(binary, url, FLAGS)
    return db, key, proc, base


def hanging_run(binary, workdir, n, seconds):
    receiver = events_bench.Receiver()
    silent = Silent(n)
    db, key, proc, base = fresh(binary, workdir, f"hanging-{n}")
    try:
        hanging_merchants(binary, db, base, silent)
        post(base, key, "/v1/webhook/create", {"url": receiver.base + "/b", "types": ["location.created"]})
        receiver.reset()
        sent = 0
        end = time.time() + seconds
        while time.time() < end:
            post(base, key, "/v1/location/create", {"locations": [location("b", sent)]})
            sent += 1
            time.sleep(0.2)
        deadline = time.time() + 60
        while receiver.stats()["unique"] < sent and time.time() < deadline:
            time.sleep(0.2)
        s = receiver.stats()
    finally:
        events_bench.stop(proc)
        receiver.stop()
        silent.stop()
    seconds_of = (lambda ms: None if ms is None else ms / 1000)
    return {"sent": sent, "arrived": s["unique"], "p50_s": seconds_of(s["lag_p50_ms"]),
            "p99_s": seconds_of(s["lag_p99_ms"]), "max_s": seconds_of(s["lag_max_ms"])}


def lag(seconds):
    """A lag for the table; none arrived: a dash."""
    return "—" if seconds is None else f"{seconds:.2f} s"


def recovering_run(binary, workdir, seconds, events=20_000):
    db, key, proc, base = fresh(binary, workdir, "recovering")
    a_key = events_bench.merchant(binary, db, "a")
    refused = bench.free_port()
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 5))
    hook = post(base, a_key, "/v1/webhook/create", {"url": f"http://127.0.0.1:{refused}/hook"})
    hook_id = hook["webhook"]["webhook_id"]
    for c in range(0, events, 200):
        post(base, a_key, "/v1/location/create", {"locations": [location("a", c + i) for i in range(200)]})
    stop_at = time.time() + seconds
    answered = []

    def recover_loop(_):
        while time.time() < stop_at:
            answered.append(post(base, a_key, "/v1/webhook/recover", {"webhook_id": hook_id, "since": since}))

    try:
        creates = creates_beside(base, key, stop_at, recover_loop, 8)
    finally:
        events_bench.stop(proc)
    return {**creates, "recoveries": len(answered),
            "recovered": max((a.get("recovered", 0) for a in answered), default=0)}


def creates_beside(base, key, stop_at, loop, workers):
    """B's one-location creates, one after another until `stop_at`, while `workers` threads run
    `loop(i)` (from a second before the first); how many, and their p50 and p99."""
    latencies = []
    with ThreadPoolExecutor(workers) as pool:
        loops = [pool.submit(loop, i) for i in range(workers)]
        time.sleep(1)
        i = 0
        while time.time() < stop_at:
            t = time.perf_counter()
            post(base, key, "/v1/location/create", {"locations": [location("b", i)]})
            latencies.append(time.perf_counter() - t)
            i += 1
        for f in loops:
            f.result()
    latencies.sort()
    return {"creates": len(latencies), "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000}


def building_run(binary, workdir, seconds, merchants=6, each=30_000):
    db, key, proc, base = fresh(binary, workdir, "building")
    keys = [events_bench.merchant(binary, db, f"big-{m}") for m in range(merchants)]
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda job: post(base, keys[job[0]], "/v1/location/create",
                                           {"locations": [location(f"big{job[0]}", job[1] + i) for i in range(200)]}),
                          [(m, c) for m in range(merchants) for c in range(0, each, 200)]))
        # One merchant's index held, to size the bound: room for about two and a half of them.
        near = {"near": {"latitude": -60, "longitude": -170}, "radius_m": 50_000, "pagination": {"limit": 20}}
        post(base, keys[0], "/v1/location/search", near)
        held = bench.index_held(base)
    finally:
        events_bench.stop(proc)
    if not held:
        raise RuntimeError("no index was held: the build keeps none in memory")
    bound = int(held["index_bytes"] * 2.5)
    url = db if PG else f"sqlite://{db}"
    proc, base = bench.serve(binary, url, [*FLAGS, "--search-memory", str(bound)])
    stop_at = time.time() + seconds
    searches = []

    def search_loop(first):
        m = first
        while time.time() < stop_at:
            searches.append(post(base, keys[m], "/v1/location/search", near))
            m = (m + 1) % merchants

    try:
        builds_before = bench.scrape(base).get("search_memory_builds_total", 0)
        creates = creates_beside(base, key, stop_at, search_loop, 4)
        builds = bench.scrape(base).get("search_memory_builds_total", 0) - builds_before
    finally:
        events_bench.stop(proc)
    return {**creates, "builds": int(builds), "searches": len(searches), "bound_mib": bound / 2**20}


NEAR = {"near": {"latitude": -60, "longitude": -170}, "radius_m": 50_000, "pagination": {"limit": 20}}


def crawl_template(binary, workdir, shops):
    """Made once for every build's run: a database of merchant B (30,000 locations) and `shops`
    others of one location each; its URL, B's key and a file of the others' keys."""
    db, key, proc, base = fresh(binary, workdir, "crawling")
    try:
        with ThreadPoolExecutor(4) as pool:
            keys = list(pool.map(lambda m: events_bench.merchant(binary, db, f"shop-{m}"), range(shops)))
            list(pool.map(lambda c: post(base, key, "/v1/location/create",
                                         {"locations": [location("b", c + i) for i in range(200)]}),
                          range(0, 30_000, 200)))
            list(pool.map(lambda m: post(base, keys[m], "/v1/location/create", {"locations": [location(f"s{m}", 0)]}),
                          range(shops)))
    finally:
        events_bench.stop(proc)
    keys_file = Path(workdir) / "crawl-keys.txt"
    keys_file.write_text("\n".join(keys) + "\n")
    return db, key, keys_file, shops


def held_after(base, merchants):
    """The bytes of the indexes held once `merchants` are."""
    held = bench.index_held(base, wait_s=60, merchants=merchants)
    if not held:
        raise RuntimeError(f"{merchants} indexes not held within 60 s")
    return held["index_bytes"]


def crawling_run(binary, workdir, seconds, template):
    db, key, keys_file, shops = template
    db = PG.copy(db, "crawling") if PG else bench_data.fresh_copy(db, Path(workdir), "crawling")
    url = db if PG else f"sqlite://{db}"
    search = "/v1/location/search"
    # The bound: B's index and about half the shops'.
    proc, base = bench.serve(binary, url, FLAGS)
    try:
        post(base, key, search, NEAR)
        b_bytes = held_after(base, 1)
        first_shop = keys_file.read_text().split()[0]
        post(base, first_shop, search, NEAR)
        held_after(base, 2)
        post(base, first_shop, search, NEAR)  # from memory: its record kept too
        shop_bytes = bench.scrape(base)["search_memory_bytes"] - b_bytes
    finally:
        events_bench.stop(proc)
    bound = int(b_bytes + shop_bytes * shops / 2)
    proc, base = bench.serve(binary, url, [*FLAGS, "--search-memory", str(bound)])
    try:
        post(base, key, search, NEAR)
        held_after(base, 1)
        body_file = Path(workdir) / "crawl-near.txt"
        body_file.write_text(json.dumps(NEAR) + "\n")

        def both(seconds):
            with ThreadPoolExecutor(2) as pool:
                crawler = pool.submit(bench.wrk, base, 4, seconds, ROOT / "benches/wrk/crawl.lua",
                                      [str(keys_file), json.dumps(NEAR), search])
                buyer = pool.submit(bench.wrk, base, 2, seconds, ROOT / "benches/wrk/list.lua",
                                    [key, str(body_file), search])
                return crawler.result(), buyer.result()

        # Every shop searched once or more (its index built, or its size known), B's all along.
        both(10)
        before = bench.scrape(base)
        crawler, buyer = both(seconds)
        metrics = bench.scrape(base)
    finally:
        events_bench.stop(proc)
    per_s = (lambda r: r["requests"] / (r["duration_us"] / 1e6))
    return {"b_per_s": per_s(buyer), "b_p50_ms": buyer["p50_us"] / 1000, "b_p99_ms": buyer["p99_us"] / 1000,
            "b_errors": buyer["errors"], "crawl_per_s": per_s(crawler), "crawl_errors": crawler["errors"],
            "builds": int(metrics.get("search_memory_builds_total", 0) - before.get("search_memory_builds_total", 0)),
            "b_from_memory": metrics.get('searches_total{served="memory"}', 0) - before.get('searches_total{served="memory"}', 0),
            "held": int(metrics.get("search_memory_merchants", 0)), "bound_mib": bound / 2**20,
            "metrics": {k: v for k, v in metrics.items() if k.startswith(("search_memory", "searches_total"))}}


def retrying_run(binary, workdir, hanging=10, backlog=300):
    """Seconds for B's retry to arrive beside A's hanging endpoints' due retries (None: not in a
    minute)."""
    flags = [*FLAGS, "--webhook-retry-schedule", ",".join(["1s"] * 30), "--webhook-attempt-timeout", "1s"]
    silent = Silent(hanging)
    db = PG.fresh("retrying") if PG else Path(workdir) / f"retrying-{time.time_ns()}.db"
    a_key, b_key = events_bench.merchant(binary, db, "a"), events_bench.merchant(binary, db, "b")
    proc, base = bench.serve(binary, db if PG else f"sqlite://{db}", flags)
    receiver = None
    try:
        for url in silent.urls():
            post(base, a_key, "/v1/webhook/create", {"url": url})
        for c in range(0, backlog, 100):
            post(base, a_key, "/v1/location/create", {"locations": [location("a", c + i) for i in range(100)]})
        port = bench.free_port()
        post(base, b_key, "/v1/webhook/create", {"url": f"http://127.0.0.1:{port}/b"})
        # A's endpoints fail about an attempt a second each once their limits have fallen to one:
        # by then over a thousand of A's events are retries, due again every second.
        time.sleep(backlog / 8 * 1.2 + 10)
        post(base, b_key, "/v1/location/create", {"locations": [location("b", 0)]})
        time.sleep(0.5)  # B's first attempt, refused
        receiver = events_bench.Receiver(port)
        t = time.time()
        while receiver.stats()["deliveries"] < 1 and time.time() - t < 60:
            time.sleep(0.05)
        return time.time() - t if receiver.stats()["deliveries"] else None
    finally:
        events_bench.stop(proc)
        silent.stop()
        if receiver:
            receiver.stop()


IDLE = ["INSERT INTO merchants (pk, id, name, created_at) SELECT 1000 + g, 'idle' || g, 'idle', 0 FROM {series}",
        "INSERT INTO event_logs (merchant_pk, last_sequence) SELECT 1000 + g, 5 FROM {series}",
        "INSERT INTO webhooks (webhook_id, merchant_pk, url, status, secret, created_at, delivered_through, "
        "claimed_through) SELECT 'idle' || g, 1000 + g, 'https://example.com/hook', 'ENABLED', 'secret', 0, 5, 5 "
        "FROM {series}"]


# A retry of each idle endpoint's last event, due in an hour.
WAITING = ("INSERT INTO deliveries (webhook_id, sequence, merchant_pk, next_attempt_at, appended_at) "
           "SELECT 'idle' || g, 5, 1000 + g, {due}, 0 FROM {series}")


def idle_endpoints(db, n, waiting=False):
    """`n` merchants of one endpoint each, every event of theirs settled (or, `waiting`, its last
    one's retry due in an hour), written into `db`."""
    due = int(time.time() * 1000) + 3_600_000
    queries = IDLE + ([WAITING.replace("{due}", str(due))] if waiting else [])
    if PG:
        name = db.rsplit("/", 1)[1]
        PG.query("; ".join(q.format(series=f"generate_series(0, {n - 1}) g") for q in queries), database=name)
        # Done now rather than by autovacuum during the run, which it would share the cores with;
        # only these tables: the others, empty now, would be planned for as empty as they fill.
        PG.query("VACUUM ANALYZE merchants, event_logs, webhooks, deliveries", database=name)
        return
    import sqlite3
    with sqlite3.connect(db) as c:
        for q in queries:
            c.execute(q.format(series=f"(WITH RECURSIVE s(g) AS (SELECT 0 UNION ALL SELECT g + 1 FROM s "
                                      f"WHERE g < {n - 1}) SELECT g FROM s)"))
    c.close()


def throughput_run(binary, workdir, hanging, rows=10_000, idle=0, waiting=False):
    receiver = events_bench.Receiver()
    silent = Silent(hanging) if hanging else None
    db, key, proc, base = fresh(binary, workdir, f"throughput-{hanging}", idle, waiting)
    try:
        if silent:
            hanging_merchants(binary, db, base, silent)
        for e in range(4):
            post(base, key, "/v1/webhook/create", {"url": f"{receiver.base}/c{e}"})
        receiver.reset()
        t = time.time()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda c: post(base, key, "/v1/location/create",
                                         {"locations": [location("c", c * 200 + i) for i in range(200)]}),
                          range(rows // 200)))
        deadline = time.time() + 120
        while receiver.stats()["deliveries"] < rows * 4 and time.time() < deadline:
            time.sleep(0.1)
        s = receiver.stats()
        elapsed = s["last_ms"] / 1000 - t
    finally:
        events_bench.stop(proc)
        receiver.stop()
        if silent:
            silent.stop()
    return {"delivered": s["deliveries"], "per_s": s["deliveries"] / elapsed if s["deliveries"] else 0.0}


def main():
    p = bench.side_by_side(__doc__)
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--only", default="hanging,recovering,building,crawling,retrying,throughput,idle,waiting")
    p.add_argument("--shops", type=int, default=20_000, help="`crawling`: the shops crawled")
    p.add_argument("--engine", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--out", default=str(ROOT / "target/bench/fairness.md"))
    cfg = p.parse_args()
    only = cfg.only.split(",")
    builds = (("ours", Path(cfg.ours)), ("base", Path(cfg.base)))
    global PG
    with tempfile.TemporaryDirectory() as workdir:
        if cfg.engine == "postgres":
            os.chmod(workdir, 0o755)  # the cluster runs as the postgres user
            PG = bench.Postgres(workdir)
        try:
            lines = run_all(cfg, only, builds, workdir)
        finally:
            if PG:
                PG.stop()
    machine = bench.machine()
    head = [f"Command: `scripts/bench --fairness {cfg.base} --seconds {cfg.seconds} --engine {cfg.engine}`, "
            f"{time.strftime('%Y-%m-%d')}, {machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']} GiB.",
            ""]
    Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
    Path(cfg.out).write_text("\n".join(head + lines) + "\n")
    print("\n".join(head + lines))


def creates_table(name, builds, run, beside, columns, cells):
    """The report's lines of B's creates beside another merchant's load, each build in turn:
    `run(binary)` measures one, `cells(result)` gives its `columns`."""
    lines = [f"| B's one-location creates while {beside} | build | creates | p50 | p99 | {' | '.join(columns)} |",
             "|---|---|---:|---:|---:|" + "---:|" * len(columns)]
    for kind, binary in builds:
        r = run(binary)
        bench.log(f"   {name} {kind}: {r}")
        lines.append(f"| | {kind} | {r['creates']} | {r['p50_ms']:.1f} ms | {r['p99_ms']:.1f} ms | {cells(r)} |")
    return lines + [""]


def run_all(cfg, only, builds, workdir):
    """Every workload of `only`, each build in turn; the report's lines."""
    lines = []
    if "hanging" in only:
        lines += ["| B's deliveries beside hanging endpoints | build | arrived | lag p50 | lag p99 | lag max |",
                  "|---|---|---:|---:|---:|---:|"]
        for n in (0, 10, 100):
            for kind, binary in builds:
                r = hanging_run(binary, workdir, n, cfg.seconds)
                bench.log(f"   hanging {n} {kind}: {r}")
                lines.append(f"| {n} hanging | {kind} | {r['arrived']}/{r['sent']} | {lag(r['p50_s'])} | "
                             f"{lag(r['p99_s'])} | {lag(r['max_s'])} |")
        lines.append("")
    if "recovering" in only:
        lines += creates_table("recovering", builds, lambda binary: recovering_run(binary, workdir, cfg.seconds),
                               "A keeps 8 recoveries of 20,000 events in flight", ["recoveries answered"],
                               lambda r: f"{r['recoveries']} (of {r['recovered']:,})")
    if "building" in only:
        lines += creates_table("building", builds, lambda binary: building_run(binary, workdir, cfg.seconds),
                               "six merchants are searched in turn, room for two indexes",
                               ["builds", "searches answered"], lambda r: f"{r['builds']} | {r['searches']:,}")
    if "crawling" in only:
        template = crawl_template(builds[0][1], workdir, cfg.shops)
        lines += [f"| B's searches while a crawler searches {cfg.shops:,} shops in turn | build | B's searches/s | p50 | p99 "
                  "| the crawler's searches/s | builds | held |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for kind, binary in builds:
            r = crawling_run(binary, workdir, cfg.seconds, template)
            bench.log(f"   crawling {kind}: {r}")
            lines.append(f"| | {kind} | {r['b_per_s']:,.0f} | {r['b_p50_ms']:.2f} ms | {r['b_p99_ms']:.2f} ms | "
                         f"{r['crawl_per_s']:,.0f} | {r['builds']} | {r['held']:,} |")
        lines.append("")
    if "retrying" in only:
        lines += ["| B's retry beside 10 hanging endpoints with 300 events each, retried every second | build | arrived after |",
                  "|---|---|---:|"]
        for kind, binary in builds:
            r = retrying_run(binary, workdir)
            bench.log(f"   retrying {kind}: {r}")
            lines.append(f"| | {kind} | {'not in 60 s' if r is None else f'{r:.1f} s'} |")
        lines.append("")
    if "throughput" in only:
        lines += ["| deliveries/s to 4 healthy endpoints | build | alone | beside 100 hanging | ratio |",
                  "|---|---|---:|---:|---:|"]
        for kind, binary in builds:
            alone = throughput_run(binary, workdir, 0)
            beside = throughput_run(binary, workdir, 100)
            bench.log(f"   throughput {kind}: alone {alone}, beside {beside}")
            lines.append(f"| | {kind} | {alone['per_s']:,.0f} | {beside['per_s']:,.0f} | "
                         f"{beside['per_s'] / alone['per_s']:.2f} |")
        lines.append("")
    if "idle" in only:
        lines += ["| deliveries/s to 4 healthy endpoints | build | alone | beside 20,000 idle | beside 100,000 idle "
                  "| ratios |", "|---|---|---:|---:|---:|---:|"]
        for kind, binary in builds:
            r = [throughput_run(binary, workdir, 0, idle=n)["per_s"] for n in (0, 20_000, 100_000)]
            bench.log(f"   idle {kind}: {r}")
            lines.append(f"| | {kind} | {r[0]:,.0f} | {r[1]:,.0f} | {r[2]:,.0f} | {r[1] / r[0]:.2f}, {r[2] / r[0]:.2f} |")
        lines.append("")
    if "waiting" in only:
        lines += ["| deliveries/s to 4 healthy endpoints | build | alone | beside 2,000 with a retry waiting "
                  "| beside 10,000 | ratios |", "|---|---|---:|---:|---:|---:|"]
        for kind, binary in builds:
            r = [throughput_run(binary, workdir, 0, idle=n, waiting=True)["per_s"] for n in (0, 2_000, 10_000)]
            bench.log(f"   waiting {kind}: {r}")
            lines.append(f"| | {kind} | {r[0]:,.0f} | {r[1]:,.0f} | {r[2]:,.0f} | {r[1] / r[0]:.2f}, {r[2] / r[0]:.2f} |")
    return lines


if __name__ == "__main__":
    main()
