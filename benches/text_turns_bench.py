#!/usr/bin/env python3
"""Another merchant's lists while one merchant sends lists filtered by a text that costs a walk of
its index: merchant A (the benchmark's million locations, `target/bench-cache/locations-1000000.db`,
made by `scripts/bench --workloads locations-1m`) sends, from ATTACKERS connections at once and
within its rate budget (the server's default limits), lists filtered by a one-character text that
none of its locations contains; merchant B, with 20 locations, lists its locations (with and
without a text) one request after another. B's latencies with A quiet, then beside A.

    python3 benches/text_turns_bench.py BINARY [BINARY ...]   (ATTACKERS=8, SECONDS=10)

For each binary, on its own copy of the database: B's requests, p50 and p99 (ms), alone and beside
A; A's answers by status.
"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_procs import free_port, scratch_dir, stop_process, wait_http  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "target/bench-cache"
ATTACKERS = int(os.environ.get("ATTACKERS", "8"))
SECONDS = float(os.environ.get("SECONDS", "10"))


def post(conn, key, body):
    conn.request("POST", "/v1/location/list", json.dumps(body),
                 {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    answer = conn.getresponse()
    answer.read()
    return answer.status


def b_requests(port, key, seconds):
    """B's lists one after another for `seconds`: their latencies in ms."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    bodies = [{"pagination": {"limit": 20}}, {"filter": {"text": "склад"}, "pagination": {"limit": 20}}]
    latencies, end, n = [], time.time() + seconds, 0
    while time.time() < end:
        start = time.perf_counter()
        status = post(conn, key, bodies[n % 2])
        latencies.append((time.perf_counter() - start) * 1000)
        if status != 200:
            raise SystemExit(f"B's list answered {status}")
        n += 1
        time.sleep(0.05)  # within B's own budget (50 a second)
    return sorted(latencies)


def percentile(sorted_ms, p):
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * p / 100))]


def attack(port, key, stopping, statuses):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while not stopping.is_set():
        try:
            statuses[post(conn, key, {"filter": {"text": "ж"}, "pagination": {"limit": 100}})] += 1
        except OSError:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)


def measure(binary, work):
    db = work / "locations.db"
    shutil.copy(CACHE / "locations-1000000.db", db)
    url = f"sqlite://{db}"
    a_key = json.loads((CACHE / "locations-1000000.json").read_text())["api_key"]
    made = subprocess.run([binary, "--database", url, "merchant", "create", "--name", "b", "--json"],
                          capture_output=True, text=True, check=True)
    b_key = json.loads(made.stdout)["api_key"]
    port = free_port()
    proc = subprocess.Popen([binary, "--database", url, "serve", "--addr", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        items = [{"merchant_location_id": f"b-{n}", "name": f"Склад {n}", "location_types": ["WAREHOUSE"],
                  "latitude": 55.7 + n * 0.01, "longitude": 37.6, "address_tail": "1"} for n in range(20)]
        conn.request("POST", "/v1/location/create", json.dumps({"locations": items}),
                     {"Authorization": f"Bearer {b_key}", "Content-Type": "application/json"})
        conn.getresponse().read()
        b_requests(port, b_key, 2)  # warm-up
        alone = b_requests(port, b_key, SECONDS)
        stopping, statuses = threading.Event(), Counter()
        threads = [threading.Thread(target=attack, args=(port, a_key, stopping, statuses), daemon=True)
                   for _ in range(ATTACKERS)]
        for t in threads:
            t.start()
        time.sleep(2)
        beside = b_requests(port, b_key, SECONDS)
        stopping.set()
        for t in threads:
            t.join(timeout=120)
    finally:
        stop_process(proc)
        db.unlink(missing_ok=True)
    return alone, beside, statuses


def main():
    work = Path(scratch_dir("text-turns"))
    try:
        for binary in sys.argv[1:]:
            alone, beside, statuses = measure(binary, work)
            print(f"{binary}: B alone {len(alone)} requests, p50 {percentile(alone, 50):.1f} ms, "
                  f"p99 {percentile(alone, 99):.1f} ms; beside A {len(beside)} requests, "
                  f"p50 {percentile(beside, 50):.1f} ms, p99 {percentile(beside, 99):.1f} ms; "
                  f"A's answers {dict(statuses)}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
