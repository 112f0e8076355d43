#!/usr/bin/env python3
"""Imports through the API (`scripts/bench --import`), on SQLite or (`--engine postgres`) on a
throwaway PostgreSQL server with fsync on, each run on a fresh database and a freshly started
release server:

- `import`: a workbook of ROWS warehouses (written by `locations pull --format xlsx` from a scratch
  service) handed to `POST /v1/import/create`; the seconds from the request to `SUCCEEDED`, the
  server's peak RSS growth over the import (its VmHWM after, less its VmRSS before), and another
  merchant's one-location creates made one after another meanwhile (p50 / p99).
  Goals: <= 30 s on SQLite, <= 60 s on PostgreSQL; RSS growth <= 64 MiB; the creates' p99 <= 250 ms.
- `two imports`: two such workbooks (other names at the same places: the second's are stored
  quarantined) imported at once by the same merchant, the other merchant's creates meanwhile. Goal: their p99 <= 250 ms.
- beside it, `push`: the same workbook pushed by `storefront locations push` (4 chunks in flight,
  the default) into another fresh database, with the other merchant's creates beside it too, and
  the server's RSS growth measured the same way (what storing 50,000 locations costs the server,
  whichever way they come). The import should take no longer: it saves the round trips.
"""

import argparse
import base64
import datetime
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import events_bench  # noqa: E402
import fairness_bench  # noqa: E402

ROOT = bench.ROOT
PG = None


def status_kib(pid, field):
    """A `/proc/PID/status` figure, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def workbook(binary, workdir, rows, prefix="w"):
    """A workbook of `rows` warehouses, as `pull --format xlsx` writes them (without the columns
    only a pulled file has, so that every row is a create)."""
    db = Path(workdir) / f"source-{prefix}.db"
    key = events_bench.merchant(binary, db, "source")
    proc, base = bench.serve(binary, f"sqlite://{db}")
    try:
        for c in range(0, rows, 200):
            fairness_bench.post(base, key, "/v1/location/create",
                                {"locations": [fairness_bench.location(prefix, c + i) for i in range(min(200, rows - c))]})
        path = Path(workdir) / f"locations-{prefix}.xlsx"
        subprocess.run([str(binary), "locations", "pull", "--output", str(path)], check=True,
                       env=dict(os.environ, STOREFRONT_URL=base, STOREFRONT_API_KEY=key), capture_output=True)
    finally:
        events_bench.stop(proc)
    return path


def fresh(binary, workdir, tag):
    """A fresh database, the importing merchant's key and the other's, and the server on it."""
    db = PG.fresh(tag) if PG else Path(workdir) / f"{tag}-{time.time_ns()}.db"
    key = events_bench.merchant(binary, db, "importer")
    other = events_bench.merchant(binary, db, "other")
    url = db if PG else f"sqlite://{db}"
    proc, base = bench.serve(binary, url)
    return key, other, proc, base


class Creates:
    """The other merchant's one-location creates, one after another, until `stop`."""

    def __init__(self, base, key):
        self.base, self.key, self.latencies, self.done = base, key, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        i = 0
        # QUIET=1: no creates, to see an import's own costs apart from the other merchant's load.
        while not self.done.is_set() and not os.environ.get("QUIET"):
            t = time.perf_counter()
            fairness_bench.post(self.base, self.key, "/v1/location/create",
                                {"locations": [fairness_bench.location("o", i)]})
            self.latencies.append(time.perf_counter() - t)
            i += 1

    def stop(self):
        self.done.set()
        self.thread.join(60)
        lat = sorted(self.latencies) or [0.0]
        return {"creates": len(lat), "p50_ms": statistics.median(lat) * 1000,
                "p99_ms": lat[max(0, int(len(lat) * 0.99) - 1)] * 1000}


def finished(got):
    """An ended import's `finished_at` (RFC 3339 with milliseconds) as seconds since the epoch."""
    at = datetime.datetime.strptime(got["finished_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
    return at.replace(tzinfo=datetime.timezone.utc).timestamp()


def import_run(binary, workdir, *paths):
    """Imports of `paths` by one merchant, all at once; the seconds until the last ends."""
    key, other, proc, base = fresh(binary, workdir, "import")
    try:
        contents = [base64.b64encode(path.read_bytes()).decode() for path in paths]
        rss_before = status_kib(proc.pid, "VmRSS")
        creates = Creates(base, other)
        time.sleep(1)
        t = time.time()
        ids = [bench.post(base, "/v1/import/create", key,
                          {"file_name": path.name, "content_base64": content})["import"]["import_id"]
               for path, content in zip(paths, contents)]
        ended = {}
        while len(ended) < len(ids):
            for import_id in ids:
                got = bench.post(base, "/v1/import/get", key, {"import_id": import_id})["import"]
                if got["status"] in ("SUCCEEDED", "FAILED"):
                    ended[import_id] = got
            time.sleep(0.05)
        # Until the last import's `finished_at` (the server's clock, this machine's), not until the
        # poll that saw it: the polls' interval would add half of it on average.
        seconds = max(finished(got) for got in ended.values()) - t
        others = creates.stop()
        peak = status_kib(proc.pid, "VmHWM")
    finally:
        events_bench.stop(proc)
    for got in ended.values():
        # The second workbook's locations stand where the first's do: quarantined by the rule on near duplicates, stored all the same.
        stored = got["counts"]["created"] + got["counts"]["quarantined"]
        assert got["status"] == "SUCCEEDED" and stored == got["rows_total"], got
    rows = sum(got["rows_total"] for got in ended.values())
    return {"seconds": seconds, "rows": rows, "rss_growth_mib": (peak - rss_before) / 1024, **others}


def push_run(binary, workdir, path):
    key, other, proc, base = fresh(binary, workdir, "push")
    try:
        rss_before = status_kib(proc.pid, "VmRSS")
        creates = Creates(base, other)
        time.sleep(1)
        t = time.perf_counter()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        run = subprocess.run([str(binary), "locations", "push", str(path)], capture_output=True, text=True,
                             env=dict(os.environ, STOREFRONT_URL=base, STOREFRONT_API_KEY=key))
        seconds = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # The CLI's own CPU: it reads the file and makes the requests, the work an import's server does.
        cli_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
        others = creates.stop()
        peak = status_kib(proc.pid, "VmHWM")
    finally:
        events_bench.stop(proc)
    assert run.returncode == 0, run.stderr[-2000:]
    return {"seconds": seconds, "summary": run.stdout.strip(), "rss_growth_mib": (peak - rss_before) / 1024,
            "cli_cpu_s": cli_cpu, **others}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(ROOT / "target/release/storefront"))
    p.add_argument("--rows", type=int, default=50_000)
    p.add_argument("--engine", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--out", default=str(ROOT / "target/bench/import.md"))
    cfg = p.parse_args()
    binary = Path(cfg.binary)
    global PG
    with tempfile.TemporaryDirectory() as workdir:
        if cfg.engine == "postgres":
            os.chmod(workdir, 0o755)  # the cluster runs as the postgres user
            PG = bench.Postgres(workdir)
        try:
            path = workbook(binary, workdir, cfg.rows)
            size = path.stat().st_size
            bench.log(f"   workbook: {cfg.rows} rows, {size / 2**20:.1f} MiB")
            imported = import_run(binary, workdir, path)
            bench.log(f"   import: {imported}")
            other_path = workbook(binary, workdir, cfg.rows, prefix="v")
            two = import_run(binary, workdir, path, other_path)
            bench.log(f"   two imports at once: {two}")
            pushed = push_run(binary, workdir, path)
            bench.log(f"   push: {pushed}")
        finally:
            if PG:
                PG.stop()
    machine = bench.machine()
    goal = 30 if cfg.engine == "sqlite" else 60
    lines = [f"Command: `scripts/bench --import --rows {cfg.rows} --engine {cfg.engine}`, {time.strftime('%Y-%m-%d')}, "
             f"{machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']} GiB; a workbook of "
             f"{cfg.rows:,} rows, {size / 2**20:.1f} MiB.", "",
             "| way in | seconds | rows/s | server RSS growth | other merchant's creates | p50 | p99 |",
             "|---|---:|---:|---:|---:|---:|---:|",
             f"| import (`/v1/import/create` to `SUCCEEDED`) | {imported['seconds']:.1f} | "
             f"{cfg.rows / imported['seconds']:,.0f} | {imported['rss_growth_mib']:.1f} MiB | {imported['creates']} | "
             f"{imported['p50_ms']:.1f} ms | {imported['p99_ms']:.1f} ms |",
             f"| two imports of two such workbooks at once by the same merchant, to the last's end | "
             f"{two['seconds']:.1f} | {two['rows'] / two['seconds']:,.0f} | {two['rss_growth_mib']:.1f} MiB | "
             f"{two['creates']} | {two['p50_ms']:.1f} ms | {two['p99_ms']:.1f} ms |",
             f"| push (the CLI) | {pushed['seconds']:.1f} | {cfg.rows / pushed['seconds']:,.0f} | "
             f"{pushed['rss_growth_mib']:.1f} MiB | "
             f"{pushed['creates']} | {pushed['p50_ms']:.1f} ms | {pushed['p99_ms']:.1f} ms |", "",
             f"Goals: the import in <= {goal} s ({'met' if imported['seconds'] <= goal else 'NOT met'}), "
             f"RSS growth <= 64 MiB ({'met' if imported['rss_growth_mib'] <= 64 else 'NOT met'}), the other "
             f"merchant's p99 <= 250 ms ({'met' if imported['p99_ms'] <= 250 else 'NOT met'}; beside two imports "
             f"{'met' if two['p99_ms'] <= 250 else 'NOT met'}); the import "
             f"{pushed['seconds'] / imported['seconds']:.2f}x as fast as push."]
    bench.write_report(cfg.out, lines)


if __name__ == "__main__":
    main()
