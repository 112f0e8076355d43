#!/usr/bin/env python3
"""Searches from memory checked against the database, under concurrent writes on two instances.

Three instances of the binary on one PostgreSQL database: A holds indexes within the default
bound, B within a small one (`--bound`, so that it drops one merchant's index for another's and
builds it again), C holds none and answers every search on the database. Two merchants. For each,
a writer on A and one on B create, move, archive and restore locations, and an importer runs
imports of up to 250 rows (new ones and moves of earlier ones). Then:
- after each write answered 200, a search with the full key on the other instance and on its own,
  at each written location's point, finds it exactly when the answer said `ACTIVE`, and no longer
  at a moved location's old point;
- every few seconds the writers and importers pause, one more location of each merchant is
  created through A, and a second later A and B answer random questions (radii, filters, page
  sizes, the next page by its cursor) byte for byte as C does, with a storefront key (its first
  question at that new location, which no full key's search has brought into the index) and with
  the full key.
With `--kill listen`, the connections that follow the other instances' writes (`LISTEN`) are
ended every second or two; with `--kill all`, every connection of the service to the database
(a write or a search then answered 500 or 503 is allowed, and not checked).

Usage: scripts/search-stress.py --database postgres://…/postgres [--bin target/release/storefront]
[--seconds 60] [--bound 6MiB] [--kill none|listen|all]   (scripts/postgres starts a throwaway
server; scripts/test runs it for 30 s with --kill listen). Needs `psql`. Uses only the standard
library. Exit 0 when every check held, 1 with the first failures otherwise.
"""

import argparse
import base64
import http.client
import json
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ARGS = None
CENTRES = [(59.93, 30.31), (55.75, 37.62)]
failures, lock = [], threading.Lock()
counts = {"writes": 0, "imports": 0, "checks": 0, "allowed": 0, "kills": 0}
pause, stop = threading.Event(), threading.Event()
paused = set()  # the workers waiting out a pause, or gone


def guarded(name, work, *args):
    """Runs a worker; one that fails is a failure, and no longer awaited by a pause."""
    try:
        work(name, *args)
    except Exception as e:  # noqa: BLE001 (any failure of a worker is reported)
        fail(f"{name} stopped: {e!r}")
    finally:
        with lock:
            paused.add(name)


def fail(text):
    with lock:
        failures.append(text)


def count(name, n=1):
    with lock:
        counts[name] += n


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def psql(url, sql):
    return subprocess.run(["psql", url, "-qAtc", sql], check=True, capture_output=True, text=True).stdout.strip()


class Client:
    """One keep-alive connection to an instance."""

    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def post(self, path, key, body):
        data = json.dumps(body)
        headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        for attempt in range(3):
            try:
                self.conn.request("POST", path, data, headers)
                answer = self.conn.getresponse()
                return answer.status, answer.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def allowed(status):
    """A failure the faults asked for: a broken connection's 500, or 503 for a write's outcome."""
    return ARGS.kill == "all" and status in (500, 503)


def location(rng, mli, centre):
    return {
        "merchant_location_id": mli,
        "location_types": ["PICKUP_POINT"],
        "name": f"Point {mli}",
        "address_tail": "190000, Russia, Saint Petersburg, Nevsky prospekt, 28",
        "latitude": centre[0] + rng.uniform(-0.3, 0.3),
        "longitude": centre[1] + rng.uniform(-0.5, 0.5),
        "provider_id": "PROVIDER_3",
        "provider_location_id": mli,
        "pickup_point_type": rng.choice(["PICKUP_POINT", "POSTAMAT"]),
        "payment_methods": ["ALREADY_PAID", "CARD"],
        "storage_period_days": 7,
        "limits": {"length": rng.choice([40, 100]), "width": 60, "height": 60, "weight": rng.choice([5, 30])},
        "working_schedule": [
            {"day": day, "schedule": {"time_start": "09:00", "time_end": "21:00"}}
            for day in rng.sample(["MONDAY", "TUESDAY", "SATURDAY", "SUNDAY"], 2)
        ],
        "is_accepts_returns": rng.random() < 0.5,
    }


def at(point, radius=1, limit=100):
    return {"near": {"latitude": point[0], "longitude": point[1]}, "radius_m": radius, "pagination": {"limit": limit}}


def found(raw):
    return [r["location"]["merchant_location_id"] for r in json.loads(raw)["results"]]


def held_back(name):
    """Waits out a pause, once the caller's work under way is done; whether it paused."""
    if not pause.is_set():
        return False
    with lock:
        paused.add(name)
    while pause.is_set() and not stop.is_set():
        time.sleep(0.01)
    return True


def writer(name, mine, other, key, centre):
    rng = random.Random(f"{ARGS.seed}-{name}")
    state = {}  # merchant_location_id -> (point, status)
    made = 0
    while not stop.is_set():
        if held_back(name):
            continue
        live = [m for m, (_, s) in state.items() if s != "ARCHIVED"]
        archived = [m for m, (_, s) in state.items() if s == "ARCHIVED"]
        roll = rng.random()
        if roll < 0.4 or len(live) < 5:
            items = []
            for _ in range(rng.randint(1, 5)):
                made += 1
                items.append(location(rng, f"{name}-{made}", centre))
            path, body = "/v1/location/create", {"locations": items}
        elif roll < 0.7:
            items = [location(rng, m, centre) for m in rng.sample(live, min(len(live), rng.randint(1, 4)))]
            path, body = "/v1/location/update", {"locations": items}
        elif roll < 0.85 or not archived:
            named = rng.sample(live, min(len(live), rng.randint(1, 3)))
            path = "/v1/location/archive"
        else:
            named = rng.sample(archived, min(len(archived), rng.randint(1, 3)))
            path = "/v1/location/restore"
        if path in ("/v1/location/archive", "/v1/location/restore"):
            body = {"locations": [{"merchant_location_id": m} for m in named]}
            items = [{"merchant_location_id": m, "latitude": state[m][0][0], "longitude": state[m][0][1]} for m in named]
        status, raw = mine.post(path, key, body)
        if allowed(status):
            count("allowed")
            for item in items:  # its outcome unknown: not checked again
                state.pop(item["merchant_location_id"], None)
            continue
        if status != 200:
            fail(f"{name}: {path} answered {status}: {raw[:300]!r}")
            continue
        count("writes")
        for item, result in zip(items, json.loads(raw)["locations"]):
            mli = item["merchant_location_id"]
            if result["status"] == "FAILED":
                fail(f"{name}: {path} {mli} failed: {result['errors']}")
                continue
            before = state.get(mli)
            point = (item["latitude"], item["longitude"])
            state[mli] = (point, result["status"])
            for who in (other, mine):
                status, raw = who.post("/v1/location/search", key, at(point))
                count("checks")
                if allowed(status):
                    count("allowed")
                elif status != 200:
                    fail(f"{name}: a search on :{who.port} answered {status}: {raw[:300]!r}")
                elif (mli in found(raw)) != (result["status"] == "ACTIVE"):
                    fail(f"{name}: {mli}, {path} answered {result['status']}; found at its point on :{who.port}: {mli in found(raw)}")
                if before and before[0] != point:
                    status, raw = who.post("/v1/location/search", key, at(before[0]))
                    if status == 200 and mli in found(raw):
                        fail(f"{name}: {mli} moved by {path}, still found at its old point on :{who.port}")


def importer(name, mine, key, centre):
    rng = random.Random(f"{ARGS.seed}-{name}")
    made, rows_made = 0, []
    while not stop.is_set():
        if held_back(name):
            continue
        new = []
        for _ in range(rng.randint(20, 200)):
            made += 1
            new.append(location(rng, f"{name}-{made}", centre))
        rows = new + [location(rng, m, centre) for m in rng.sample(rows_made, min(len(rows_made), 50))]
        rows_made += [r["merchant_location_id"] for r in new]
        content = "\n".join(json.dumps(r) for r in rows).encode()
        body = {"file_name": "batch.jsonl", "content_base64": base64.b64encode(content).decode(), "update": True}
        status, raw = mine.post("/v1/import/create", key, body)
        if allowed(status):
            count("allowed")
            continue
        if status != 200:
            fail(f"{name}: an import answered {status}: {raw[:300]!r}")
            continue
        import_id = json.loads(raw)["import"]["import_id"]
        while True:  # its end awaited before a pause: the comparisons need no write under way
            status, raw = mine.post("/v1/import/get", key, {"import_id": import_id})
            if status == 200 and json.loads(raw)["import"]["status"] in ("SUCCEEDED", "FAILED"):
                if json.loads(raw)["import"]["status"] == "FAILED" and ARGS.kill != "all":
                    fail(f"{name}: import failed: {raw[:300]!r}")
                count("imports")
                break
            time.sleep(0.05)


def question(rng, centre, limit):
    q = at((centre[0] + rng.uniform(-0.3, 0.3), centre[1] + rng.uniform(-0.5, 0.5)), rng.choice([2000, 10000, 50000]), limit)
    wanted = {
        "pickup_point_type": rng.choice(["PICKUP_POINT", "POSTAMAT"]),
        "parcel": {"length": 50, "width": 30, "height": 20, "weight": 10},
        "open_at": rng.choice(["2026-12-07T10:30", "2026-12-06T12:00", "2026-12-08T22:00"]),
        "accepts_returns": rng.random() < 0.5,
    }
    chosen = {k: v for k, v in wanted.items() if rng.random() < 0.3}
    if chosen:
        q["filter"] = chosen
    return q


def compare(held, database, keys, rng):
    """A and B answer as C, byte for byte, the first page and the next; a key's first question is
    at its probe's point, when it has one."""
    for key, centre, probe in keys:
        for n in range(30):
            limit = rng.choice([1, 5, 20, 100])
            q = at(probe, 2000, 20) if probe and n == 0 else question(rng, centre, limit)
            for page in range(2):
                want_status, want = database.post("/v1/location/search", key, q)
                for instance in held:
                    status, got = instance.post("/v1/location/search", key, q)
                    count("checks")
                    if allowed(status) or allowed(want_status):
                        count("allowed")
                    elif (status, got) != (want_status, want):
                        fail(f"on :{instance.port}, {json.dumps(q)}: {status} {got[:400]!r}\n  the database: {want_status} {want[:400]!r}")
                cursor = want_status == 200 and json.loads(want)["pagination"]["next_cursor"]
                if not cursor:
                    break
                q = dict(q, pagination={"cursor": cursor, "limit": limit})


def killer(url):
    which = "query ILIKE 'LISTEN%'" if ARGS.kill == "listen" else "backend_type = 'client backend'"
    sql = f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND {which}"
    while not stop.wait(random.uniform(0.5, 2.0)):
        psql(url, sql)
        count("kills")


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="a PostgreSQL server's URL (a new database is made on it)")
    parser.add_argument("--bin", default="target/release/storefront")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--bound", default="6MiB", help="B's --search-memory")
    parser.add_argument("--kill", choices=["none", "listen", "all"], default="none")
    parser.add_argument("--seed", default="1")
    ARGS = parser.parse_args()
    if not ARGS.database.startswith("postgres"):
        sys.exit("--database: a postgres:// URL (several instances share one database only on PostgreSQL)")
    name = f"stress_{uuid.uuid4().hex}"
    psql(ARGS.database, f"CREATE DATABASE {name}")
    url = f"{ARGS.database.rsplit('/', 1)[0]}/{name}"
    logs = Path(tempfile.mkdtemp(prefix="search-stress-"))
    servers, threads = [], []

    def start(memory):
        port = free_port()
        args = [ARGS.bin, "--log-format", "json", "--database", url, "serve", "--addr", f"127.0.0.1:{port}",
                "--rate-limit", "0", "--storefront-rate-limit", "0"] + (["--search-memory", memory] if memory else [])
        servers.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(logs / f"{port}.log", "w")))
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    return port
            except OSError:
                time.sleep(0.1)
        sys.exit(f"the server on :{port} did not start; its log: {logs}")

    try:
        a, b, c = start(None), start(ARGS.bound), start("0")
        merchants = []
        for i, centre in enumerate(CENTRES):
            cli = [ARGS.bin, "--database", url]
            made = json.loads(subprocess.run(cli + ["merchant", "create", "--name", f"stress-{i}", "--json"], check=True, capture_output=True, text=True).stdout)
            sf = json.loads(subprocess.run(cli + ["key", "issue", "--merchant", made["merchant_id"], "--scope", "storefront", "--json"], check=True, capture_output=True, text=True).stdout)
            merchants.append((made["api_key"], sf["api_key"], centre))
        workers = []
        for i, (key, _, centre) in enumerate(merchants):
            workers.append((f"w{i}a", writer, Client(a), Client(b), key, centre))
            workers.append((f"w{i}b", writer, Client(b), Client(a), key, centre))
            workers.append((f"i{i}", importer, Client(a if i == 0 else b), key, centre))
        awaited = len(workers)
        threads += [threading.Thread(target=guarded, args=w) for w in workers]
        if ARGS.kill != "none":
            threads.append(threading.Thread(target=killer, args=(url,)))
        for t in threads:
            t.daemon = True
            t.start()
        rng = random.Random(ARGS.seed)
        held, database = [Client(a), Client(b)], Client(c)
        prober = Client(a)
        rounds, ends = 0, time.time() + ARGS.seconds
        while time.time() < ends and not failures:
            time.sleep(rng.uniform(1, 4))
            with lock:
                paused.clear()
            pause.set()
            while len(paused) < awaited and not failures:
                time.sleep(0.01)
            # One more write through A, searched for by no full key before the storefront keys'
            # questions (a full key's search brings its merchant's index up to date). A storefront
            # key's search may be served up to a second behind another instance's writes (a
            # notice lost with a broken connection): the comparisons wait that out.
            keys = []
            for i, (full, sf, centre) in enumerate(merchants):
                item = location(rng, f"probe-{rounds}-{i}", centre)
                status, raw = prober.post("/v1/location/create", full, {"locations": [item]})
                if status != 200 and not allowed(status):
                    fail(f"a create answered {status}: {raw[:300]!r}")
                keys.insert(0, (sf, centre, (item["latitude"], item["longitude"])))
                keys.append((full, centre, None))
            time.sleep(1.0)
            compare(held, database, keys, rng)
            pause.clear()
            rounds += 1
            print(f"round {rounds}: {counts}", flush=True)
        stop.set()
        for port, who in ((a, "A"), (b, "B")):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/metrics")
            lines = [l for l in c.getresponse().read().decode().splitlines() if l.startswith(("search_memory_", "searches_total"))]
            print(f"{who} (:{port}): " + ", ".join(sorted(lines)))
            if not any(l.startswith('searches_total{served="memory"}') and float(l.split()[-1]) > 0 for l in lines):
                fail(f"{who} answered no search from memory: nothing was checked of it")
    finally:
        stop.set()
        pause.clear()
        # Each worker ends its request under way before the servers stop: one cut off by the stop
        # would be reported as a failure of the service.
        ends = time.time() + 90
        for t in threads:
            t.join(max(0.0, ends - time.time()))
        for s in servers:
            s.kill()
            s.wait()
    if failures:
        print(f"FAILED: {len(failures)} check(s); the servers' logs: {logs}")
        for f in failures[:10]:
            print("  " + f)
        sys.exit(1)
    print(f"search stress: every check held ({counts['checks']} checks, {counts['writes']} writes, {counts['imports']} imports, {rounds} rounds)")
    psql(ARGS.database, f"DROP DATABASE {name} WITH (FORCE)")
    shutil.rmtree(logs, ignore_errors=True)


if __name__ == "__main__":
    main()
