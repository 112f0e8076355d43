#!/usr/bin/env bash
# What a search may cost: the release server serving search-1m (the benchmark's million-location
# merchant and its questions) beside the ceiling answering the same page after keeping its thread
# busy for W µs a search (CEILING_WORK_US), each server alone on the machine with wrk -t2 -c16 as
# benches/bench.py runs it; every server once a repetition, in turns. Prints req/s, p99 and the
# server's CPU a request, and each ÷ the plain ceiling of its repetition: the work a search may
# cost beyond the HTTP stack for a given share of the ceiling, and the tail that work alone makes.
# Needs wrk, the ceiling (cargo build --release --example ceiling) and the benchmark's cached
# database (run `scripts/bench --workloads search-1m` once to make it).
# Usage: benches/ceiling_work.sh [BINARY [WORKS [REPS]]]   (default target/release/storefront,
# WORKS 0,10,20,30,40, REPS 2)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/storefront}
WORKS=${2:-0,10,20,30,40}
REPS=${3:-2}
CEILING=target/release/examples/ceiling
CACHE=target/bench-cache
[ -f "$CACHE/search-1000000.db" ] || { echo "no $CACHE/search-1000000.db: run scripts/bench --workloads search-1m first" >&2; exit 1; }
[ -x "$CEILING" ] || { echo "no $CEILING: cargo build --release --example ceiling" >&2; exit 1; }
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
cp "$CACHE/search-1000000.db" "$work/search.db"
key=$(python3 -c "import json;print(json.load(open('$CACHE/search-1000000.json'))['api_key'])")
bodies=$(python3 -c "import sys; sys.path.insert(0, 'benches'); import search_bench; print(search_bench.bodies('$work', 'ceiling-work'))")
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
run() {
    wrk -t2 -c16 -d"$1" --timeout 10s --latency -s benches/wrk/list.lua "http://127.0.0.1:$port" \
        -- "$key" "$bodies" /v1/location/search | sed -n 's/^RESULT //p'
}
up() { for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$port/" && return; sleep 0.1; done; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ours() { "$BIN" --database "sqlite://$work/search.db" serve --addr "127.0.0.1:$port" --rate-limit 0 --storefront-rate-limit 0 >/dev/null 2>&1 & pid=$!; up; }
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
# The page the ceiling serves: ours' answer to the first question (its index built meanwhile).
ours
run 15s >/dev/null
curl -s -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    --data "$(head -n 1 "$bodies")" "http://127.0.0.1:$port/v1/location/search" >"$work/page.json"
stop
results=$work/results.txt
for rep in $(seq "$REPS"); do
    for server in ours ${WORKS//,/ }; do
        if [ "$server" = ours ]; then
            ours
            run 10s >/dev/null   # the index built, the file's pages read
        else
            CEILING_WORK_US=$server "$CEILING" "127.0.0.1:$port" "$work/page.json" >/dev/null 2>&1 &
            pid=$!
            up
            run 3s >/dev/null
        fi
        before=$(ticks "$pid")
        result=$(run 8s)
        echo "$rep $server $(($(ticks "$pid") - before)) $result" >>"$results"
        stop
    done
done
python3 - "$results" "$(getconf CLK_TCK)" <<'EOF'
import json, sys
rows = [line.split(" ", 3) for line in open(sys.argv[1])]
tick = int(sys.argv[2])
ceiling = {rep: json.loads(r) for rep, server, _, r in rows if server == "0"}
print("| server | req/s | ÷ the ceiling | p99 ms | CPU a request, µs |")
print("|---|---|---|---|---|")
for name in dict.fromkeys(server for _, server, _, _ in rows):
    cells = [[], [], [], []]
    for rep, server, cpu, r in rows:
        if server != name:
            continue
        r = json.loads(r)
        rps = r["requests"] / (r["duration_us"] / 1e6)
        cells[0].append(f"{rps:,.0f}")
        if rep in ceiling:
            c = ceiling[rep]
            cells[1].append(f"{rps / (c['requests'] / (c['duration_us'] / 1e6)):.2f}")
        cells[2].append(f"{r['p99_us'] / 1000:.2f}")
        cells[3].append(f"{int(cpu) / tick / r['requests'] * 1e6:.1f}")
    label = "ours" if name == "ours" else f"the ceiling + {name} µs"
    print(f"| {label} | " + " | ".join(", ".join(c) for c in cells) + " |")
EOF
