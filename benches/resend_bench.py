#!/usr/bin/env python3
"""Windows behind a resend, on PostgreSQL (`python3 benches/resend_bench.py BASE_BINARY [--ours BINARY]`).

An endpoint has been delivered `--history` events. It is then `--behind` events behind its
merchant's log with a resend of the log's last event already made: its `resent_through` stands
ahead of its windows. Each window therefore checks, event by event, whether a resend delivered
it already. Here every event behind was delivered before, so every window finds its events
delivered and settles them without sending any.

The state is made once, on a throwaway PostgreSQL cluster (fsync on): `--history` locations
created through the API with the endpoint's receiver answering at once, then, with the server
stopped, the endpoint's `delivered_through` set back by `--behind` and its `resent_through` set to
the last event (what a resend of the last event does). Each build then starts on a copy of that
database, in turns, `--reps` times. Reported: the time from the server's start until the
endpoint's windows reach the log's end, and PostgreSQL's rows read from `delivery_attempts`
meanwhile (its cumulative statistics, read a second after).
"""

import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import events_bench  # noqa: E402
import fairness_bench  # noqa: E402

ROOT = bench.ROOT


def psql(pg, url, sql):
    return pg.query(sql, database=url.rsplit("/", 1)[1])


def make_state(pg, binary, history, behind):
    """The database of the endpoint behind its resend; its URL."""
    url = pg.fresh("resend")
    receiver = events_bench.Receiver()
    key = events_bench.merchant(binary, url, "resend")
    proc, base = bench.serve(binary, url, fairness_bench.FLAGS)
    try:
        fairness_bench.post(base, key, "/v1/webhook/create", {"url": f"{receiver.base}/r"})
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda c: fairness_bench.post(
                base, key, "/v1/location/create",
                {"locations": [fairness_bench.location("r", c * 200 + i) for i in range(200)]}),
                range(history // 200)))
        deadline = time.time() + 600
        while receiver.stats()["deliveries"] < history and time.time() < deadline:
            time.sleep(0.2)
    finally:
        bench.stop_process(proc)
        receiver.stop()
    last = int(psql(pg, url, "SELECT last_sequence FROM event_logs"))
    psql(pg, url, f"UPDATE webhooks SET delivered_through = {last - behind}, resent_through = {last}")
    bench.log(f"state: {history} events delivered, {behind} behind, log at {last}")
    return url, last


def attempts_read(pg, url):
    return int(psql(pg, url, "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
                             "FROM pg_stat_user_tables WHERE relname = 'delivery_attempts'"))


def catch_up(pg, template, last, binary, tag):
    """Seconds from the start of `binary` on a copy of `template` until its endpoint's windows
    reach `last`; the attempts' rows PostgreSQL read meanwhile."""
    url = pg.copy(template, tag)
    before = attempts_read(pg, url)
    t = time.time()
    proc, _ = bench.serve(binary, url, fairness_bench.FLAGS)
    try:
        while int(psql(pg, url, "SELECT delivered_through FROM webhooks")) < last:
            if time.time() - t > 600:
                raise RuntimeError(f"{tag}: the windows did not reach the log's end in 10 minutes")
            time.sleep(0.05)
        seconds = time.time() - t
    finally:
        bench.stop_process(proc)
    time.sleep(1.5)
    return seconds, attempts_read(pg, url) - before


def main():
    p = bench.side_by_side(__doc__)
    p.add_argument("--history", type=int, default=100_000, help="events delivered before")
    p.add_argument("--behind", type=int, default=20_000, help="events behind the resend")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=str(ROOT / "target/bench/resend.md"))
    cfg = p.parse_args()
    builds = (("ours", Path(cfg.ours)), ("base", Path(cfg.base)))
    results = {kind: [] for kind, _ in builds}
    with tempfile.TemporaryDirectory() as workdir:
        Path(workdir).chmod(0o755)  # the cluster runs as the postgres user
        pg = bench.Postgres(workdir)
        try:
            template, last = make_state(pg, Path(cfg.ours), cfg.history, cfg.behind)
            for rep in range(cfg.reps):
                for kind, binary in builds:
                    r = catch_up(pg, template, last, binary, f"{kind}_{rep}")
                    bench.log(f"   {kind} {rep + 1}: {r[0]:.2f} s, {r[1]:,} attempt rows read")
                    results[kind].append(r)
        finally:
            pg.stop()
    machine = bench.machine()
    lines = [f"Command: `python3 benches/resend_bench.py {cfg.base} --ours {cfg.ours} --history {cfg.history} "
             f"--behind {cfg.behind} --reps {cfg.reps}`, {time.strftime('%Y-%m-%d')}, {machine['cores']} cores "
             f"({machine['cpu']}), {machine['memory_gib']} GiB, PostgreSQL with fsync on.", "",
             "| build | seconds to the log's end, each repetition | mean | attempt rows read, mean |",
             "|---|---|---:|---:|"]
    for kind, _ in builds:
        runs = results[kind]
        lines.append(f"| {kind} | {', '.join(f'{s:.2f}' for s, _ in runs)} | "
                     f"{sum(s for s, _ in runs) / len(runs):.2f} | {sum(n for _, n in runs) // len(runs):,} |")
    ours = sum(s for s, _ in results["ours"]) / cfg.reps
    base = sum(s for s, _ in results["base"]) / cfg.reps
    lines += ["", f"ours ÷ base, time: {ours / base:.2f}"]
    bench.write_report(cfg.out, lines)


if __name__ == "__main__":
    main()
