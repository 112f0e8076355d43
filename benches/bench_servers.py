"""The servers the benchmarks measure (ours, an earlier build, the ceiling, the FastAPI peer),
started and stopped; the service's command line; wrk's closed-loop load; the server's metrics.
`search_bench` is handed this module for what it starts and asks."""

import json
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path

import bench_settings as settings
from bench_data import fresh_copy
from bench_procs import ROOT, free_port, log, post, run, tree, wait_http
from bench_settings import CEILING, PEER_VENV, TOOLS

# What `search_bench` reaches through this module, beside what is defined here.
__all__ = ["TOOLS", "log", "post"]


class Server:
    def __init__(self, kind, db, workdir, page_file=None):
        self.kind = kind
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, STOREFRONT_LOG_FORMAT="json")
        if kind in ("ours", "base"):
            binary = settings.BIN if kind == "ours" else settings.BASE_BIN
            url = db if str(db).startswith("postgres://") else f"sqlite://{db}"
            cmd = [str(binary), "--database", url, "serve", "--addr", f"127.0.0.1:{self.port}", *settings.LIMITS]
            ready = self.base + "/readyz"
        elif kind == "ceiling":
            cmd = [str(CEILING), f"127.0.0.1:{self.port}", str(page_file)]
            ready = None
        else:
            env["STOREFRONT_PEER_DB"] = str(db)
            cmd = [str(PEER_VENV / "bin/uvicorn"), "app:app", "--workers", "2", "--host", "127.0.0.1",
                   "--port", str(self.port), "--log-level", "warning", "--no-access-log"]
            ready = None
        if settings.PIN and kind != "peer":
            cmd = ["taskset", "-c", settings.PIN[0], *cmd]
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




def storefront(db, *args, stdin=None, binary=None):
    url = db if str(db).startswith("postgres://") else f"sqlite://{db}"
    return run([str(binary or settings.BIN), "--log-format", "json", "--database", url, *args],
               capture_output=True, text=True, input=stdin).stdout



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



def wrk(base, conns, seconds, script, args):
    threads = min(settings.WRK_THREADS or 2, max(1, conns))
    cmd = ["taskset", "-c", settings.PIN[1]] if settings.PIN else []
    cmd += ["wrk", "-t", str(threads), "-c", str(conns), "-d", f"{seconds}s", "--timeout", "10s", "--latency",
           "-s", str(script), base, "--", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(out)



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

