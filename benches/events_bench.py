#!/usr/bin/env python3
"""Issue 38's workloads (`scripts/bench --events BASE_BINARY`), on SQLite, the default engine:

- `create-webhook`: the create workload (wrk, 16 connections, 200 locations a request) with one
  webhook endpoint registered and a fast local receiver (benches/receiver.rs), beside `create` on
  BASE (the build before events): req/s and the server's CPU per request, deliveries included.
  Goal: CPU per request <= 1.1x, req/s >= 0.9x.
- `events-feed`: a log of a million events read from the oldest by pages of 1000, 4 readers at once,
  each following its cursors to the end. Goal: >= 50,000 events/s.
- `webhooks`: 100,000 locations pushed (500 creates of 200, 4 at once) with 4 endpoints registered:
  400,000 deliveries; deliveries/s from the push's start to the last delivery, the lag from each
  event's commit to its delivery (p50, p99, max, as the receiver saw them), and how long after the
  push ended the last delivery came. Goal: >= 2,000 deliveries/s, p99 lag <= 2 s.
- `recover` (issue 47), on SQLite and on PostgreSQL: an endpoint whose receiver is down (nothing
  listens on its port) while 100,000 events are appended for it and given up, then the receiver
  started and one `POST /v1/webhook/recover` of all of them, while another merchant creates
  (wrk, 2 connections, 200 locations a request): the recovery request's time (goal: < 2 s), that
  merchant's create p99 during the recovery and the deliveries after it, beside the same creates
  just before (goal: < 100 ms), and deliveries/s after the recovery (goal: >= 2,000/s).

Each run on a fresh database and a freshly started server; the median of REPS runs is reported.
"""

import argparse
import http.client
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the shared helpers: wrk, CPU, processes, the generated locations)

ROOT = bench.ROOT
BIN = ROOT / "target/release/storefront"
RECEIVER = ROOT / "target/release/examples/receiver"
WEBHOOK_FLAGS = ["--webhook-allow-private", "--webhook-allow-http"]


def start(binary, db, extra=()):
    return bench.serve(binary, f"sqlite://{db}", extra)


stop = bench.stop_process


def merchant(binary, db, name="bench"):
    url = db if str(db).startswith("postgres://") else f"sqlite://{db}"
    out = subprocess.run([str(binary), "--log-format", "json", "--database", url, "merchant", "create",
                          "--name", name, "--json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["api_key"]


class Receiver:
    def __init__(self, port=None):
        self.port = port or bench.free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([str(RECEIVER), f"127.0.0.1:{self.port}"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(100):
            try:
                self.stats()
                return
            except OSError:
                time.sleep(0.05)

    def stats(self):
        with urllib.request.urlopen(self.base + "/stats", timeout=5) as r:
            return json.loads(r.read())

    def reset(self):
        urllib.request.urlopen(urllib.request.Request(self.base + "/reset", method="POST"), timeout=5).read()

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def create_run(kind, binary, workdir, receiver, seconds, warmup):
    db = Path(workdir) / f"create-{kind}-{uuid.uuid4().hex[:6]}.db"
    key = merchant(binary, db)
    proc, base = start(binary, db, WEBHOOK_FLAGS if kind == "ours" else ())
    try:
        if kind == "ours":
            bench.post(base, "/v1/webhook/create", key, {"url": receiver.base + "/create"})
        receiver.reset()
        script = ROOT / "benches/wrk/create.lua"
        bench.wrk(base, 16, warmup, script, [key, f"w{time.time_ns()}"])
        pids = bench.tree(proc.pid)
        cpu0 = bench.cpu_seconds(pids)
        result = bench.wrk(base, 16, seconds, script, [key, f"m{time.time_ns()}"])
        cpu = bench.cpu_seconds(bench.tree(proc.pid)) - cpu0
    finally:
        stop(proc)
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    n = max(result["requests"], 1)
    return {"rps": result["requests"] / (result["duration_us"] / 1e6), "cpu_ms": cpu * 1000 / n,
            "p99_ms": result["p99_us"] / 1000, "delivered": receiver.stats()["deliveries"],
            "errors": result["errors"]}


def feed_database(workdir, n):
    """A merchant whose log holds `n` events (written straight into the file; kept under
    target/bench-cache)."""
    cache = ROOT / "target/bench-cache"
    cache.mkdir(parents=True, exist_ok=True)
    # Named by the layout of its rows: a file of an earlier layout is not read as this one.
    db, meta = cache / f"events-compact-{n}.db", cache / f"events-compact-{n}.json"
    if db.exists() and meta.exists():
        return db, json.loads(meta.read_text())["api_key"]
    db.unlink(missing_ok=True)
    key = merchant(BIN, db)
    c = sqlite3.connect(db)
    pk = c.execute("SELECT pk FROM merchants").fetchone()[0]
    now = int(time.time() * 1000)
    for start_at in range(1, n + 1, 50_000):
        rows = [(pk, i, 0, now, f"evt_{uuid.uuid4().hex}", str(uuid.uuid4()), f"gen-{i}", 1, "ACTIVE", None)
                for i in range(start_at, min(start_at + 50_000, n + 1))]
        c.executemany("INSERT INTO events (merchant_pk, sequence, type, appended_at, event_id, location_id, "
                      "merchant_location_id, version, status, previous_status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      rows)
    c.execute("INSERT INTO event_logs (merchant_pk, last_sequence) VALUES (?, ?)", (pk, n))
    c.commit()
    c.close()
    meta.write_text(json.dumps({"api_key": key}))
    return db, key


def follow(base, key, expected):
    """Reads the whole feed from the oldest by pages of 1000; how many events."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    cursor, seen = None, 0
    while True:
        body = json.dumps({"pagination": {"limit": 1000, "cursor": cursor}})
        conn.request("POST", "/v1/location/events", body,
                     {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        page = conn.getresponse().read()
        seen += page.count(b'"event_id"')
        tail = page[page.rfind(b'"next_cursor":"') + 15:]
        cursor = tail[:tail.find(b'"')].decode()
        if b'"has_next":false' in page[-40:]:
            break
    conn.close()
    assert seen == expected, (seen, expected)
    return seen


def feed_run(workdir, n, readers=4):
    db, key = feed_database(workdir, n)
    proc, base = start(BIN, db)
    try:
        follow(base, key, n)  # warm
        cpu0 = bench.cpu_seconds(bench.tree(proc.pid))
        t = time.time()
        with ThreadPoolExecutor(readers) as pool:
            total = sum(pool.map(lambda _: follow(base, key, n), range(readers)))
        elapsed = time.time() - t
        cpu = bench.cpu_seconds(bench.tree(proc.pid)) - cpu0
    finally:
        stop(proc)
    return {"events_per_s": total / elapsed, "cpu_us_per_event": cpu * 1e6 / total}


def webhooks_side_by_side(cfg, workdir):
    """The webhooks workload on ours and on BASE, alternating, `reps` runs each: deliveries/s and
    the lag, as ratios."""
    global BIN
    ours = BIN
    receiver = Receiver()
    runs = {"ours": [], "base": []}
    try:
        for rep in range(cfg.reps):
            for kind, binary in (("base", Path(cfg.base)), ("ours", ours)):
                BIN = binary
                r = webhooks_run(workdir, receiver, cfg.rows)
                bench.log(f"   webhooks {kind} #{rep + 1}: {r['per_s']:,.0f}/s, lag p99 {r['lag_p99_s']:.1f} s, "
                          f"{r['cpu_ms_per_delivery']:.3f} ms CPU/delivery")
                runs[kind].append(r)
    finally:
        BIN = ours
        receiver.stop()
    machine = bench.machine()
    ratio = median(runs["ours"], "per_s") / median(runs["base"], "per_s")
    return [f"Command: `python3 benches/events_bench.py {cfg.base} --only webhooks --reps {cfg.reps} --rows {cfg.rows}`, "
            f"{time.strftime('%Y-%m-%d')}, {machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']} GiB.", "",
            "| webhooks (4 endpoints) | ours | base | ratio |", "|---|---:|---:|---:|",
            f"| deliveries/s | {median(runs['ours'], 'per_s'):,.0f} | {median(runs['base'], 'per_s'):,.0f} | {ratio:.2f} |",
            f"| CPU ms/delivery | {median(runs['ours'], 'cpu_ms_per_delivery'):.3f} | "
            f"{median(runs['base'], 'cpu_ms_per_delivery'):.3f} | |",
            f"| lag p99, s | {median(runs['ours'], 'lag_p99_s'):.1f} | {median(runs['base'], 'lag_p99_s'):.1f} | |"]


def webhooks_run(workdir, receiver, rows=100_000, endpoints=4, pace=None):
    """`rows` pushed in creates of 200 with `endpoints` registered: 4 at once as fast as answered,
    or one every 200 / `pace` seconds (`pace` rows a second); then until all are delivered."""
    db = Path(workdir) / f"webhooks-{uuid.uuid4().hex[:6]}.db"
    key = merchant(BIN, db)
    proc, base = start(BIN, db, WEBHOOK_FLAGS)
    try:
        for e in range(endpoints):
            bench.post(base, "/v1/webhook/create", key, {"url": f"{receiver.base}/e{e}"})
        receiver.reset()
        bodies = [json.dumps({"locations": [bench.location(i) for i in range(s, min(s + 200, rows))]}).encode()
                  for s in range(0, rows, 200)]
        cpu0 = bench.cpu_seconds(bench.tree(proc.pid))
        pushed_from = time.time()

        def send(body):
            req = urllib.request.Request(base + "/v1/location/create", data=body, method="POST",
                                         headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()

        if pace:
            for i, body in enumerate(bodies):
                time.sleep(max(0.0, pushed_from + i * 200 / pace - time.time()))
                send(body)
        else:
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(send, bodies))
        pushed_to = time.time()
        want = rows * endpoints
        deadline = time.time() + 1800
        while time.time() < deadline:
            stats = receiver.stats()
            if stats["unique"] >= rows and stats["deliveries"] >= want:
                break
            time.sleep(0.5)
        cpu = bench.cpu_seconds(bench.tree(proc.pid)) - cpu0
    finally:
        stop(proc)
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    last = stats["last_ms"] / 1000
    return {"deliveries": stats["deliveries"], "per_s": stats["deliveries"] / (last - pushed_from),
            "push_s": pushed_to - pushed_from, "drained_after_s": last - pushed_to,
            "lag_p50_s": stats["lag_p50_ms"] / 1000, "lag_p99_s": stats["lag_p99_ms"] / 1000,
            "lag_max_s": stats["lag_max_ms"] / 1000, "cpu_ms_per_delivery": cpu * 1000 / max(stats["deliveries"], 1)}


def metric(base, name):
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


def push(base, key, rows, tag):
    """`rows` locations of one merchant, in creates of 200, 4 at once."""
    bodies = [json.dumps({"locations": [dict(bench.location(i), merchant_location_id=f"{tag}-{i}")
                                        for i in range(s, min(s + 200, rows))]}).encode()
              for s in range(0, rows, 200)]

    def send(body):
        req = urllib.request.Request(base + "/v1/location/create", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            r.read()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(send, bodies))


def recover_run(engine, workdir, rows, pg=None):
    """One recovery of `rows` given-up events (see the module's notes)."""
    db = pg.fresh("recover") if engine == "postgres" else Path(workdir) / f"recover-{uuid.uuid4().hex[:6]}.db"
    url = db if engine == "postgres" else f"sqlite://{db}"
    key, other = merchant(BIN, db, "missed"), merchant(BIN, db, "other")
    port = bench.free_port()
    proc, base = bench.serve(BIN, url, WEBHOOK_FLAGS + ["--webhook-retry-schedule", "1ms"])
    receiver = None
    try:
        webhook = bench.post(base, "/v1/webhook/create", key, {"url": f"http://127.0.0.1:{port}/missed"})
        webhook_id = webhook["webhook"]["webhook_id"]
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
        push(base, key, rows, "r")
        # Given up: nothing pending for two readings of the gauge in a row (it is read every 5 s).
        zero = 0
        while zero < 2:
            time.sleep(5)
            zero = zero + 1 if metric(base, "webhook_pending") == 0 else 0
        receiver = Receiver(port)
        script = ROOT / "benches/wrk/create.lua"
        before = bench.wrk(base, 2, 10, script, [other, f"b{time.time_ns()}"])
        during, took = {}, {}

        def creates():
            during.update(bench.wrk(base, 2, 15, script, [other, f"d{time.time_ns()}"]))

        load = threading.Thread(target=creates)
        load.start()
        time.sleep(2)
        t = time.time()
        recovered = bench.post(base, "/v1/webhook/recover", key, {"webhook_id": webhook_id, "since": since})
        took["s"] = time.time() - t
        deadline = time.time() + 1800
        while time.time() < deadline and receiver.stats()["unique"] < rows:
            time.sleep(0.2)
        stats = receiver.stats()
        load.join()
    finally:
        stop(proc)
        if receiver:
            receiver.stop()
        if engine != "postgres":
            for suffix in ("", "-wal", "-shm"):
                Path(str(db) + suffix).unlink(missing_ok=True)
    assert recovered["recovered"] == rows, recovered
    return {"recover_s": took["s"], "recovered": recovered["recovered"], "unique": stats["unique"],
            "deliveries": stats["deliveries"], "per_s": stats["deliveries"] / max(stats["last_ms"] / 1000 - t, 1e-3),
            "p99_before_ms": before["p99_us"] / 1000, "p99_during_ms": during["p99_us"] / 1000,
            "creates_during": during["requests"]}


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", help="the build before events (its release binary)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--duration", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--paced-rows", type=int, default=20_000, dest="paced_rows",
                   help="rows of the paced push (its lag when delivery keeps up)")
    p.add_argument("--pace", type=int, default=400, help="rows a second of the paced push")
    p.add_argument("--recover-rows", type=int, default=100_000, dest="recover_rows",
                   help="events given up, then recovered at once (the recover workload)")
    p.add_argument("--engines", default="sqlite,postgres", help="the recover workload's engines")
    p.add_argument("--only", choices=["recover", "webhooks"],
                   help="only this workload (its own report); webhooks: ours beside BASE, one run each a rep")
    p.add_argument("--out", default=str(ROOT / "target/bench/events.md"))
    cfg = p.parse_args()
    workdir = bench.scratch_dir("events-bench-")
    if cfg.only == "webhooks":
        bench.write_report(cfg.out, webhooks_side_by_side(cfg, workdir))
        return
    recover_lines = recover_report(cfg, workdir)
    if cfg.only == "recover":
        bench.write_report(cfg.out, recover_header(cfg) + recover_lines)
        return
    receiver = Receiver()
    try:
        create = {"base": [], "ours": []}
        for rep in range(cfg.reps):
            for kind, binary in (("base", cfg.base), ("ours", BIN)):
                r = create_run(kind, binary, workdir, receiver, cfg.duration, cfg.warmup)
                bench.log(f"   create {kind} #{rep + 1}: {r['rps']:.0f} req/s, {r['cpu_ms']:.2f} ms CPU/req, "
                          f"p99 {r['p99_ms']:.0f} ms, {r['delivered']:,} delivered meanwhile")
                create[kind].append(r)
        feed = [feed_run(workdir, cfg.events) for _ in range(cfg.reps)]
        for r in feed:
            bench.log(f"   events-feed: {r['events_per_s']:,.0f} events/s, {r['cpu_us_per_event']:.2f} µs CPU/event")
        hooks = [webhooks_run(workdir, receiver, cfg.rows) for _ in range(max(1, cfg.reps - 1))]
        for r in hooks:
            bench.log(f"   webhooks: {r['deliveries']:,} in {r['push_s']:.1f} s push + {r['drained_after_s']:.1f} s: "
                      f"{r['per_s']:,.0f}/s, lag p50 {r['lag_p50_s']:.1f} s p99 {r['lag_p99_s']:.1f} s")
        paced = webhooks_run(workdir, receiver, cfg.paced_rows, pace=cfg.pace)
        bench.log(f"   webhooks paced at {cfg.pace} rows/s: {paced['deliveries']:,} in {paced['push_s']:.1f} s push + "
                  f"{paced['drained_after_s']:.1f} s, lag p50 {paced['lag_p50_s']:.2f} s p99 {paced['lag_p99_s']:.2f} s")
    finally:
        receiver.stop()
    rps = median(create["ours"], "rps") / median(create["base"], "rps")
    cpu = median(create["ours"], "cpu_ms") / median(create["base"], "cpu_ms")
    per_s, lag99 = median(hooks, "per_s"), median(hooks, "lag_p99_s")
    events_per_s = median(feed, "events_per_s")
    verdict = lambda ok: "met" if ok else "**not met**"
    machine = bench.machine()
    lines = [
        f"Command: `scripts/bench --events {cfg.base}` (reps {cfg.reps}, {cfg.duration} s runs), "
        f"{time.strftime('%Y-%m-%d')}, {machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']} GiB, "
        f"{machine['rustc']}.",
        "",
        "| workload | ours | base | figure | goal | verdict |",
        "|---|---:|---:|---:|---|---|",
        f"| create-webhook vs create, req/s | {median(create['ours'], 'rps'):.0f} | {median(create['base'], 'rps'):.0f} "
        f"| {rps:.2f}x | >= 0.9x | {verdict(rps >= 0.9)} |",
        f"| create-webhook vs create, CPU ms/req | {median(create['ours'], 'cpu_ms'):.2f} "
        f"| {median(create['base'], 'cpu_ms'):.2f} | {cpu:.2f}x | <= 1.1x | {verdict(cpu <= 1.1)} |",
        f"| events-feed, events/s (4 readers, pages of 1000, {cfg.events:,} events) | {events_per_s:,.0f} | | "
        f"{median(feed, 'cpu_us_per_event'):.2f} µs CPU/event | >= 50,000/s | {verdict(events_per_s >= 50_000)} |",
        f"| webhooks, deliveries/s ({cfg.rows:,} rows, 4 endpoints) | {per_s:,.0f} | | "
        f"{median(hooks, 'cpu_ms_per_delivery'):.3f} ms CPU/delivery | >= 2,000/s | {verdict(per_s >= 2000)} |",
        f"| webhooks, lag commit → delivery p50 / p99 / max | {median(hooks, 'lag_p50_s'):.1f} / {lag99:.1f} / "
        f"{median(hooks, 'lag_max_s'):.1f} s | | push {median(hooks, 'push_s'):.1f} s, last delivery "
        f"{median(hooks, 'drained_after_s'):.1f} s after it | p99 <= 2 s | {verdict(lag99 <= 2)} |",
        f"| webhooks paced: {cfg.paced_rows:,} rows at {cfg.pace} rows/s ({cfg.pace * 4:,} deliveries/s wanted), "
        f"lag p50 / p99 / max | {paced['lag_p50_s']:.2f} / {paced['lag_p99_s']:.2f} / {paced['lag_max_s']:.2f} s | | "
        f"last delivery {paced['drained_after_s']:.1f} s after the push | (report) | |",
        "",
        "Deliveries made during the create runs (ours): "
        + ", ".join(f"{r['delivered']:,}" for r in create["ours"]) + ".",
        "",
        *recover_lines,
    ]
    bench.write_report(cfg.out, lines)


def recover_header(cfg):
    machine = bench.machine()
    return [f"Command: `python3 benches/events_bench.py {cfg.base} --only recover --reps {cfg.reps}`, "
            f"{time.strftime('%Y-%m-%d')}, {machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']} GiB, "
            f"{machine['rustc']}.", ""]


def recover_report(cfg, workdir):
    """The recover workload on both engines: its table's lines."""
    os.chmod(workdir, 0o755)  # the PostgreSQL cluster runs as the postgres user
    pg = bench.Postgres(workdir)
    try:
        runs = {engine: [recover_run(engine, workdir, cfg.recover_rows, pg) for _ in range(max(1, cfg.reps - 1))]
                for engine in cfg.engines.split(",")}
    finally:
        pg.stop()
    verdict = lambda ok: "met" if ok else "**not met**"
    lines = [f"Recover ({cfg.recover_rows:,} given-up events recovered at once; another merchant creating, "
             "wrk 2 connections):", "",
             "| engine | recovery request | creates p99 before / during | deliveries/s after | goals | verdict |",
             "|---|---:|---:|---:|---|---|"]
    for engine, rs in runs.items():
        for r in rs:
            bench.log(f"   recover {engine}: {r['recover_s']:.2f} s, p99 {r['p99_before_ms']:.0f} / "
                      f"{r['p99_during_ms']:.0f} ms, {r['per_s']:,.0f} deliveries/s ({r['unique']:,} unique)")
        took, p99, per_s = median(rs, "recover_s"), median(rs, "p99_during_ms"), median(rs, "per_s")
        lines.append(f"| {engine} | {took:.2f} s | {median(rs, 'p99_before_ms'):.0f} / {p99:.0f} ms | {per_s:,.0f} "
                     f"| < 2 s, p99 < 100 ms, >= 2,000/s | {verdict(took < 2 and p99 < 100 and per_s >= 2000)} |")
    return lines


if __name__ == "__main__":
    main()
