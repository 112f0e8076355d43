#!/usr/bin/env python3
"""What one read of where a merchant's log stands costs PostgreSQL's CPU, at full speed and at
the rates a full key's searches ask for it (one read shared by the searches asking at once: some
2,800 reads a second at 20,000 searches). The statement is the service's own (`SELECT
last_sequence, pruned_through FROM event_logs WHERE merchant_pk = $1`, prepared), sent by
`pgbench` to a throwaway server started as the benchmark starts its own (fsync on); the CPU is the
server's processes', sampled in the middle of each run.

Usage: python3 benches/pg_read_cost.py [--rates 0,1000,2800,10000] [--seconds 6]
(rate 0: as fast as 4 clients go)."""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "scripts/lib/postgres.sh"
TICK = os.sysconf("SC_CLK_TCK")


def shell(cmd: str) -> str:
    return subprocess.run(["bash", "-c", f". {LIB}; {cmd}"], check=True, capture_output=True, text=True).stdout.strip()


def cluster_cpu_s(postmaster: int) -> float:
    """The CPU seconds of the postmaster and every process it started, living now."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(pid) == postmaster or int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / TICK


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rates", default="0,1000,2800,10000")
    p.add_argument("--seconds", type=int, default=6)
    args = p.parse_args()
    pg_bin = shell("pg_bin")
    work = Path(tempfile.mkdtemp(prefix="pg-read-cost-"))
    port = shell("pg_free_port")
    try:
        shell(f"PG_FSYNC=on pg_start {work} {port}")
        postmaster = int((work / "data/postmaster.pid").read_text().split()[0])
        psql = [f"{pg_bin}/psql", "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-qX"]
        subprocess.run(psql + ["-c", "CREATE TABLE event_logs (merchant_pk bigint PRIMARY KEY, "
                               "last_sequence bigint NOT NULL, pruned_through bigint NOT NULL); "
                               "INSERT INTO event_logs SELECT g, g * 10, 0 FROM generate_series(1, 1000) g",
                               "-c", "VACUUM ANALYZE event_logs"], check=True)
        script = work / "read.sql"
        script.write_text("SELECT last_sequence, pruned_through FROM event_logs WHERE merchant_pk = 7;\n")
        print("| asked | reads a second | PostgreSQL CPU a read |")
        print("|---|---:|---:|")
        for rate in (int(r) for r in args.rates.split(",")):
            cmd = [f"{pg_bin}/pgbench", "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-n", "-M", "prepared",
                   "-f", str(script), "-c", "4", "-j", "1", "-T", str(args.seconds)]
            if rate:
                cmd += ["-R", str(rate)]
            run = subprocess.Popen(cmd + ["postgres"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            # The middle of the run: the clients connected, none yet gone (a backend's CPU goes
            # with it when it exits).
            time.sleep(1.5)
            cpu0, t0 = cluster_cpu_s(postmaster), time.monotonic()
            time.sleep(args.seconds - 3)
            cpu1, t1 = cluster_cpu_s(postmaster), time.monotonic()
            out, _ = run.communicate()
            tps = next(float(line.split("=")[1].split()[0]) for line in out.splitlines() if line.startswith("tps"))
            asked = f"{rate:,}/s" if rate else "as fast as 4 clients go"
            print(f"| {asked} | {tps:,.0f} | {(cpu1 - cpu0) / (t1 - t0) / tps * 1e6:.1f} µs |")
    finally:
        shell(f"pg_stop {work}")
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
