#!/usr/bin/env python3
"""Where a PostgreSQL import's time goes, beside push of the same file: `import_bench`'s import and
push runs on a throwaway cluster (fsync on) with `pg_stat_statements`, and `auto_explain` logging
the plan of every statement over 4 ms (to `target/bench/import-slow-plans.log`).

    python3 benches/import_statements.py ROWS BINARY[:LABEL] [BINARY[:LABEL] ...]

For each binary: the seconds of the import and of push, the server's CPU seconds (and push's
CLI's), the other merchant's create p99 meanwhile, and the statements by their total time (calls,
total ms, ms a call, the slowest call's ms, the statement). `MODES=import` measures the import
alone; `QUIET=1` leaves out the other merchant's creates.
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_procs  # noqa: E402
import import_bench  # noqa: E402

TOP = ("SELECT calls, round(total_exec_time::numeric, 0), round((total_exec_time / calls)::numeric, 2), "
       "round(max_exec_time::numeric, 1), left(regexp_replace(query, '\\s+', ' ', 'g'), 110) "
       "FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 14")


def psql(pg, sql):
    return pg.query(sql, separator=" | ", check=False) + "\n"


def main():
    rows, specs = int(sys.argv[1]), sys.argv[2:]
    with tempfile.TemporaryDirectory() as work:
        os.chmod(work, 0o755)  # the cluster runs as the postgres user
        pg = bench_procs.Postgres(work)
        import_bench.PG = pg
        with (pg.dir / "data/postgresql.auto.conf").open("a") as conf:
            conf.write("shared_preload_libraries = 'pg_stat_statements,auto_explain'\n"
                       "auto_explain.log_min_duration = '4ms'\nauto_explain.log_nested_statements = on\n"
                       "pg_stat_statements.track = all\n")
        pg.shell(f"pg_stop {pg.dir}")
        pg.shell(f"PG_FSYNC=on PG_SHARED_BUFFERS={pg.SHARED_BUFFERS} pg_serve {pg.dir} {pg.port}")
        psql(pg, "CREATE EXTENSION pg_stat_statements")
        try:
            path = import_bench.workbook(Path(specs[0].split(":")[0]), work, rows)
            for spec in specs:
                binary, _, label = spec.partition(":")
                for mode in os.environ.get("MODES", "import,push").split(","):
                    psql(pg, "SELECT pg_stat_statements_reset()")
                    cpu = {}
                    stop = import_bench.events_bench.stop

                    def measured_stop(proc, stop=stop):
                        cpu["server"] = bench_procs.cpu_seconds([proc.pid])
                        stop(proc)

                    import_bench.events_bench.stop = measured_stop
                    try:
                        run = import_bench.import_run if mode == "import" else import_bench.push_run
                        r = run(Path(binary), work, path)
                    finally:
                        import_bench.events_bench.stop = stop
                    cli = f", the CLI's CPU {r['cli_cpu_s']:.1f} s" if "cli_cpu_s" in r else ""
                    print(f"== {label or binary} {mode}: {r['seconds']:.2f} s, server CPU {cpu.get('server', 0):.1f} s{cli}, "
                          f"the other merchant's create p99 {r['p99_ms']:.0f} ms", flush=True)
                    print(psql(pg, TOP), flush=True)
        finally:
            out = import_bench.ROOT / "target/bench"
            out.mkdir(parents=True, exist_ok=True)
            shutil.copy(pg.dir / "server.log", out / "import-slow-plans.log")
            pg.stop()


if __name__ == "__main__":
    main()
