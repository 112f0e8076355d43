#!/usr/bin/env python3
"""Retries after a wide outage (`python3 benches/outage_bench.py BASE_BINARY [--ours BINARY] [--engine postgres]`).

`--merchants` merchants of 10 endpoints each, every endpoint with a retry due for each of its
merchant's `--events` events (all of them failed once while the merchants' receivers were down,
and all due again now), the endpoints failing since. Their receiver (one, answering at once) is
back: each build starts on a copy of that database and delivers every retry. A claim of retries
reads what the endpoints with retries offer; before the claim read only the chosen endpoints' rows,
it read (and on PostgreSQL locked) up to 32 rows of every endpoint with retries, at every turn, to
claim 64 at most.

The state is made once: the merchants' locations created through the API before their endpoints
(so nothing is sent), then, with the server stopped, one retry row for each endpoint and event
written straight into `deliveries`. SQLite is a file copied for each run; PostgreSQL a throwaway
cluster with fsync on, the database copied for each run. Reported, each build in turn, `--reps`
times: seconds from the server's start until every retry arrived (retries a second), and the CPU
seconds the server (and, on PostgreSQL, the cluster) spent meanwhile.
"""

import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import events_bench  # noqa: E402
import fairness_bench  # noqa: E402

ROOT = bench.ROOT
RETRIES = """INSERT INTO deliveries (webhook_id, sequence, merchant_pk, attempts, next_attempt_at, appended_at)
             SELECT w.webhook_id, e.sequence, e.merchant_pk, 1, 0, e.appended_at
             FROM webhooks w JOIN events e ON e.merchant_pk = w.merchant_pk"""


def make_state(pg, workdir, binary, merchants, events, port):
    """The database of the endpoints with their retries (a URL or a file); how many retries."""
    db = pg.fresh("outage") if pg else Path(workdir) / "outage.db"
    keys = [events_bench.merchant(binary, db, f"m{m}") for m in range(merchants)]
    proc, base = bench.serve(binary, db if pg else f"sqlite://{db}", fairness_bench.FLAGS)
    try:
        for m, key in enumerate(keys):
            for c in range(0, events, 100):
                fairness_bench.post(base, key, "/v1/location/create", {"locations": [
                    fairness_bench.location(f"m{m}", c + i) for i in range(min(100, events - c))]})
            for e in range(10):
                fairness_bench.post(base, key, "/v1/webhook/create", {"url": f"http://127.0.0.1:{port}/m{m}e{e}"})
    finally:
        bench.stop_process(proc)
    failing = f"UPDATE webhooks SET failing_since = {int(time.time() * 1000)}"
    if pg:
        pg.query(f"{RETRIES}; {failing}", database=db.rsplit("/", 1)[1])
        total = int(pg.query("SELECT count(*) FROM deliveries", database=db.rsplit("/", 1)[1]))
    else:
        with sqlite3.connect(db) as c:
            c.execute(RETRIES)
            c.execute(failing)
            total = c.execute("SELECT count(*) FROM deliveries").fetchone()[0]
        c.close()
    bench.log(f"state: {merchants * 10} endpoints, {total:,} retries due")
    return db, total


def drain(pg, workdir, template, total, binary, port, tag):
    """Seconds from the start of `binary` on a copy of `template` until every retry arrived, and
    the CPU seconds spent meanwhile."""
    if pg:
        db = pg.copy(template, tag)
    else:
        db = Path(workdir) / f"{tag}.db"
        shutil.copyfile(template, db)
    receiver = events_bench.Receiver(port)
    t = time.time()
    proc, _ = bench.serve(binary, db if pg else f"sqlite://{db}", fairness_bench.FLAGS)
    cpu0 = bench.cpu_seconds(bench.tree(proc.pid) + (pg.pids() if pg else []))
    try:
        # An event's id is its merchant's, the same at each of its endpoints: deliveries are counted.
        while receiver.stats()["deliveries"] < total:
            if time.time() - t > 900:
                raise RuntimeError(f"{tag}: {receiver.stats()['deliveries']} of {total} retries in 15 minutes")
            time.sleep(0.1)
        seconds = receiver.stats()["last_ms"] / 1000 - t
        cpu = bench.cpu_seconds(bench.tree(proc.pid) + (pg.pids() if pg else [])) - cpu0
    finally:
        bench.stop_process(proc)
        receiver.stop()
        if not pg:
            for f in Path(workdir).glob(f"{tag}.db*"):
                f.unlink()
    return seconds, cpu


def main():
    p = bench.side_by_side(__doc__)
    p.add_argument("--merchants", type=int, default=50, help="merchants of 10 endpoints each")
    p.add_argument("--events", type=int, default=100, help="each merchant's events, a retry each per endpoint")
    p.add_argument("--engine", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=str(ROOT / "target/bench/outage.md"))
    cfg = p.parse_args()
    builds = (("ours", Path(cfg.ours)), ("base", Path(cfg.base)))
    results = {kind: [] for kind, _ in builds}
    port = bench.free_port()
    with tempfile.TemporaryDirectory() as workdir:
        pg = None
        if cfg.engine == "postgres":
            Path(workdir).chmod(0o755)  # the cluster runs as the postgres user
            pg = bench.Postgres(workdir)
        try:
            template, total = make_state(pg, workdir, Path(cfg.ours), cfg.merchants, cfg.events, port)
            for rep in range(cfg.reps):
                for kind, binary in builds:
                    r = drain(pg, workdir, template, total, binary, port, f"{kind}_{rep}")
                    bench.log(f"   {kind} {rep + 1}: {r[0]:.2f} s ({total / r[0]:,.0f} retries/s), {r[1]:.2f} s CPU")
                    results[kind].append(r)
        finally:
            if pg:
                pg.stop()
    machine = bench.machine()
    lines = [f"Command: `python3 benches/outage_bench.py {cfg.base} --ours {cfg.ours} --merchants {cfg.merchants} "
             f"--events {cfg.events} --engine {cfg.engine} --reps {cfg.reps}`, {time.strftime('%Y-%m-%d')}, "
             f"{machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']} GiB"
             f"{', PostgreSQL with fsync on' if pg else ''}: {cfg.merchants * 10} endpoints, {total:,} retries.", "",
             "| build | seconds to deliver every retry, each repetition | mean | retries/s | CPU s, mean |",
             "|---|---|---:|---:|---:|"]
    mean = {}
    for kind, _ in builds:
        runs = results[kind]
        mean[kind] = (sum(s for s, _ in runs) / len(runs), sum(c for _, c in runs) / len(runs))
        lines.append(f"| {kind} | {', '.join(f'{s:.2f}' for s, _ in runs)} | {mean[kind][0]:.2f} | "
                     f"{total / mean[kind][0]:,.0f} | {mean[kind][1]:.2f} |")
    lines += ["", f"ours ÷ base: time {mean['ours'][0] / mean['base'][0]:.2f}, CPU {mean['ours'][1] / mean['base'][1]:.2f}"]
    bench.write_report(cfg.out, lines)


if __name__ == "__main__":
    main()
