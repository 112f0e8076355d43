"""What a run of the benchmarks measures with: the builds, the cores and the load generator's
threads, set once from a script's command line and read by the pieces that start servers and load
(`bench_settings.BIN = …` from a script; every reader looks it up at its call)."""

import os

from bench_procs import ROOT

# The build measured as ours (`--ours-bin`).
BIN = ROOT / "target/release/storefront"
# `--cores N`: the cpus the measured server is pinned to, and the load generator's (taskset); a
# run of `--cores` passes them to each count's run in the environment.
PIN = tuple(os.environ["STOREFRONT_BENCH_PIN"].split("/", 1)) if os.environ.get("STOREFRONT_BENCH_PIN") else None
# wrk's threads (`--wrk-threads`); by default two, one for a single connection.
WRK_THREADS = None
CEILING = ROOT / "target/release/examples/ceiling"
TOOLS = ROOT / "target/tools"
PEER_VENV = TOOLS / "peer-venv"
GOOGLE = ROOT / "data/google-product-taxonomy.en-US.txt"
# Locations seeded for the update and archive workloads (benches/wrk/change.lua walks them).
CHANGE_LOCATIONS = 20_000
# `--base-bin`: an earlier build of this service, measured beside ours on the create workload.
BASE_BIN = None
# The rate limits ours and the base serve with: off, or (`--limits`) on at budgets no workload
# spends, so that every request pays for its check as it does in production.
LIMITS_OFF = ["--rate-limit", "0", "--storefront-rate-limit", "0"]
LIMITS_UNREACHED = ["--rate-limit", "1000000/s", "--rate-burst", "1000000",
                    "--storefront-rate-limit", "1000000/s", "--storefront-rate-burst", "1000000"]
LIMITS = LIMITS_OFF
