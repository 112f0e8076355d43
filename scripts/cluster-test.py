#!/usr/bin/env python3
"""The cluster under load and faults (CONTRACT §8, §15, §17), run by `scripts/cluster -- ...`.

Through HAProxy, for about 16 s: four writers create locations (each with a merchant_location_id,
so a lost answer is retried safely) and rename them; a reader walks the list in pages of 7 (each
page to the next instance, so a cursor issued by one is used on another); a searcher pages through
the search; `storefront locations push` sends the sample CSV; a flooder sends a second merchant's
requests as fast as it can. Meanwhile instance s1 is killed with SIGKILL and started again, and s2
is stopped with SIGTERM and started again. With replicas (scripts/cluster --replicas N), a buyer
searches with the storefront key throughout, and replica r1 is stopped and started again. Then:
- every write that was answered 200 is there, with the name of its last acknowledged rename;
- no request was answered 500, and none got 502/503 while s2 was stopping gracefully;
- every cursor was accepted by whichever instance got it;
- with replicas: the buyer's searches were answered 200 while r1 was stopped, and once it is back
  every instance reads searches on a replica again (db_reads_total{target="replica"});
- the flooder's admitted requests are within burst + rate × T + m (§15; m = n × ⌈burst ÷ 10⌉),
  and not fewer than that bound less m and what the killed instance held.
Uses only the standard library. Exit 0 on success, 1 with the reasons otherwise."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

URL = os.environ["CLUSTER_URL"]
DIR = os.environ["CLUSTER_DIR"]
BIN = os.environ["CLUSTER_BIN"]
DATABASE = os.environ["CLUSTER_DATABASE"]
INSTANCES = int(os.environ["CLUSTER_INSTANCES"])
REPLICAS = int(os.environ.get("CLUSTER_REPLICAS", "0"))
RATE, BURST = 50, 100  # the merchant budget's defaults
RUN_FOR = 16.0

failures = []
lock = threading.Lock()
stop = threading.Event()
counts = {"500": 0, "502/503 while s2 stopped": 0, "502/503": 0, "cursor pages": 0, "writes": 0}
window = {"term": None, "term_end": None}
buyer = {"searches": 0, "while r1 stopped": 0, "slowest": 0.0, "r1 stopped": False}


def fail(message):
    with lock:
        failures.append(message)


def post(path, key, body, timeout=40):
    """POSTs; answers (status, parsed body or None). A cut connection is status 0."""
    request = urllib.request.Request(
        URL + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return 0, None
    now = time.monotonic()
    with lock:
        if status == 500:
            counts["500"] += 1
            failures.append(f"{path} answered 500: {text[:200]!r}")
        if status in (502, 503):
            counts["502/503"] += 1
            if window["term"] is not None and window["term"] <= now <= (window["term_end"] or now):
                counts["502/503 while s2 stopped"] += 1
                failures.append(f"{path} answered {status} while s2 was stopping gracefully")
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, None


def merchant(name):
    out = subprocess.run([BIN, "merchant", "create", "--name", name, "--json"], check=True,
                         capture_output=True, env={**os.environ, "STOREFRONT_DATABASE": DATABASE})
    return json.loads(out.stdout)["api_key"]


def location(writer, n, name):
    return {
        "merchant_location_id": f"w{writer}-{n}", "location_types": ["WAREHOUSE"], "name": name,
        "latitude": 40.0 + writer * 0.5 + (n % 400) * 0.001, "longitude": 20.0 + (n // 400) * 0.01,
        "limits": {"length": 100, "width": 100, "height": 100, "weight": 100},
        "working_schedule": [{"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "18:00"}}],
        "is_accepts_returns": False,
    }


def until_answered(path, key, body):
    """Sends until a definite answer (200, or a 400 that is the request's own); retries 429, cut
    connections and 502/503 (a create is safe to retry by merchant_location_id)."""
    for _ in range(200):
        status, answer = post(path, key, body)
        if status == 200:
            return answer
        if status == 429:
            time.sleep(0.05)
            continue
        if status in (0, 502, 503):
            time.sleep(0.1)
            continue
        fail(f"{path}: answered {status}: {answer}")
        return None
    fail(f"{path}: no answer after 200 tries")
    return None


acknowledged = {}  # merchant_location_id -> (location_id, the last acknowledged name)


def writer(key, w):
    n = 0
    while not stop.is_set():
        batch = [location(w, n + i, f"Writer {w} location {n + i}") for i in range(5)]
        answer = until_answered("/v1/location/create", key, {"locations": batch})
        if answer:
            for item, result in zip(batch, answer["locations"]):
                if result.get("location_id") and result.get("status") in ("ACTIVE", "QUARANTINE"):
                    with lock:
                        acknowledged[item["merchant_location_id"]] = (result["location_id"], item["name"])
                        counts["writes"] += 1
                else:
                    fail(f"create failed: {result}")
        # Rename the first of the batch: the rename is acknowledged, or retried.
        if answer and not stop.is_set():
            mlid = batch[0]["merchant_location_id"]
            renamed = f"Writer {w} location {n} renamed"
            update = until_answered("/v1/location/update", key, {"locations": [location(w, n, renamed)]})
            if update and update["locations"][0].get("errors") == []:
                with lock:
                    acknowledged[mlid] = (acknowledged[mlid][0], renamed)
                    counts["writes"] += 1
        n += 5


def walker(key, path, body_of, results_key):
    """Pages through `path` with small pages: each page's cursor goes to whichever instance HAProxy
    picks next. An INVALID_CURSOR is a failure."""
    while not stop.is_set():
        cursor = None
        for _ in range(1000):
            status, answer = post(path, key, body_of(cursor))
            if status == 200:
                with lock:
                    counts["cursor pages"] += 1 if cursor else 0
                pagination = answer["pagination"]
                if not pagination["has_next"]:
                    break
                cursor = pagination["next_cursor"]
            elif status == 400:
                fail(f"{path}: a cursor was refused: {answer}")
                break
            else:
                time.sleep(0.1)
            if stop.is_set():
                break


flood = {"admitted": 0, "first": None, "last": None}


def flooder(key):
    while not stop.is_set():
        sent = time.monotonic()
        status, _ = post("/v1/categories/list", key, {"pagination": {"limit": 1}})
        with lock:
            if flood["first"] is None and status in (200, 429):
                flood["first"] = time.monotonic()
            flood["last"] = sent
            if status == 200:
                flood["admitted"] += 1


def instance_ready(k):
    with open(f"{DIR}/s{k}.port") as f:
        port = int(f.read())
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                if r.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.1)
    return False


def pid_of(k):
    with open(f"{DIR}/s{k}.pid") as f:
        return int(f.read())


def chaos():
    time.sleep(3)
    os.kill(pid_of(1), signal.SIGKILL)
    print("== cluster test: s1 killed with SIGKILL", flush=True)
    time.sleep(2)
    subprocess.run([f"{DIR}/s1.start"], check=True)
    if not instance_ready(1):
        fail("s1 did not come back")
    time.sleep(3)  # HAProxy's checks put it back (two successes a second apart)
    pid = pid_of(2)
    with lock:
        window["term"] = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    print("== cluster test: s2 stopped with SIGTERM", flush=True)
    for _ in range(300):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        fail("s2 did not exit within 15 s of SIGTERM")
    time.sleep(1)
    with lock:
        window["term_end"] = time.monotonic()
    subprocess.run([f"{DIR}/s2.start"], check=True)
    if not instance_ready(2):
        fail("s2 did not come back")


def buyer_searches(key):
    """A buyer's searches with the storefront key (read on the replicas), as fast as answered."""
    while not stop.is_set():
        sent = time.monotonic()
        status, _ = post("/v1/location/search", key,
                         {"near": {"latitude": 55.7575, "longitude": 37.6134}, "pagination": {"limit": 5}})
        took = time.monotonic() - sent
        with lock:
            if status == 200:
                buyer["searches"] += 1
                buyer["slowest"] = max(buyer["slowest"], took)
                if buyer["r1 stopped"]:
                    buyer["while r1 stopped"] += 1
            elif status not in (0, 429, 502, 503):
                failures.append(f"a buyer's search answered {status}")


def replica_chaos():
    time.sleep(4)
    subprocess.run([f"{DIR}/r1.stop"], check=True)
    with lock:
        buyer["r1 stopped"] = True
    print("== cluster test: replica r1 stopped", flush=True)
    time.sleep(4)
    with lock:
        buyer["r1 stopped"] = False
    subprocess.run([f"{DIR}/r1.start"], check=True)
    print("== cluster test: replica r1 started again", flush=True)


def replica_reads(k):
    """db_reads_total{target="replica"} of instance k."""
    with open(f"{DIR}/s{k}.port") as f:
        port = int(f.read())
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith('db_reads_total{target="replica"} '):
                return float(line.split()[1])
    return 0.0


def every_instance_reads_a_replica(key):
    """Each instance, asked directly, reads a storefront search on a replica within 30 s."""
    for k in range(1, INSTANCES + 1):
        with open(f"{DIR}/s{k}.port") as f:
            port = int(f.read())
        before = replica_reads(k)
        deadline = time.monotonic() + 30
        while replica_reads(k) <= before:
            if time.monotonic() > deadline:
                fail(f"instance s{k} read no search on a replica within 30 s of r1 coming back")
                break
            body = json.dumps({"near": {"latitude": 55.7575, "longitude": 37.6134}}).encode()
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/location/search", data=body, method="POST",
                headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=5) as response:
                response.read()
            time.sleep(0.2)


def main():
    key = os.environ["CLUSTER_KEY"]
    writers_key = merchant("cluster-writers")
    flood_key = merchant("cluster-flood")
    threads = [threading.Thread(target=writer, args=(writers_key, w)) for w in range(4)]
    threads.append(threading.Thread(target=walker, args=(
        writers_key, "/v1/location/list", lambda c: {"pagination": {"limit": 7, "cursor": c}}, "locations")))
    threads.append(threading.Thread(target=walker, args=(
        key, "/v1/location/search",
        lambda c: {"near": {"latitude": 55.7575, "longitude": 37.6134}, "radius_m": 50000,
                   "pagination": {"limit": 9, "cursor": c}}, "results")))
    threads += [threading.Thread(target=flooder, args=(flood_key,)) for _ in range(4)]
    threads.append(threading.Thread(target=chaos))
    storefront_key = os.environ.get("CLUSTER_STOREFRONT_KEY", "")
    if REPLICAS:
        threads.append(threading.Thread(target=buyer_searches, args=(storefront_key,)))
        threads.append(threading.Thread(target=replica_chaos))
    for t in threads:
        t.start()
    push = subprocess.run(
        [BIN, "locations", "push", "examples/locations.csv", "--url", URL, "--api-key", writers_key],
        capture_output=True, text=True)
    if push.returncode != 0:
        fail(f"push exited {push.returncode}: {push.stderr[-500:]}")
    time.sleep(RUN_FOR)
    stop.set()
    for t in threads:
        t.join(timeout=60)

    # Every acknowledged write is there, as last acknowledged.
    stored, cursor = {}, None
    while True:
        answer = until_answered("/v1/location/list", writers_key, {"pagination": {"limit": 100, "cursor": cursor}})
        if answer is None:
            break
        for record in answer["locations"]:
            stored[record["merchant_location_id"]] = (record["location_id"], record["name"])
        if not answer["pagination"]["has_next"]:
            break
        cursor = answer["pagination"]["next_cursor"]
    lost = [mlid for mlid, ack in acknowledged.items() if stored.get(mlid) != ack]
    if lost:
        fail(f"{len(lost)} acknowledged writes lost or changed, e.g. {lost[:3]}: "
             f"{[(acknowledged[m], stored.get(m)) for m in lost[:3]]}")
    for mlid in ("wh-moscow-1", "pp-spb-28"):
        if mlid not in stored:
            fail(f"the pushed row {mlid} is not stored")

    # The flooder's admitted requests against §15's bound.
    t = flood["last"] - flood["first"]
    bound = BURST + RATE * t
    hold = -(-BURST // 10)
    margin = INSTANCES * hold
    if not (bound - margin - hold - 1 <= flood["admitted"] <= bound + margin + 1):
        fail(f"{flood['admitted']} admitted in {t:.1f} s through {INSTANCES} instances: the bound is "
             f"{bound:.0f} ± {margin} (less {hold} the killed instance may have held)")
    if counts["cursor pages"] == 0:
        fail("no page was read with a cursor")
    if REPLICAS:
        if buyer["while r1 stopped"] == 0:
            fail("no buyer's search was answered while replica r1 was stopped")
        every_instance_reads_a_replica(storefront_key)
        print(f"== cluster test: {buyer['searches']} buyer's searches, {buyer['while r1 stopped']} of them "
              f"while r1 was stopped, the slowest {buyer['slowest']:.2f} s; every instance reads "
              f"a replica again", flush=True)
    print(f"== cluster test: {counts['writes']} acknowledged writes, all stored; "
          f"{counts['cursor pages']} pages read with another instance's cursor; "
          f"{flood['admitted']} of the flooder's requests admitted in {t:.1f} s (bound {bound:.0f} ± {margin}); "
          f"500s: {counts['500']}; 502/503 (s1 killed): {counts['502/503']}; "
          f"502/503 while s2 stopped gracefully: {counts['502/503 while s2 stopped']}", flush=True)
    if failures:
        for f in failures[:20]:
            print("cluster test FAILED:", f, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
