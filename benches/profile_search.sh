#!/usr/bin/env bash
# Where a search's CPU goes: perf record of the release server serving search-1m (the benchmark's
# million-location merchant and its filter mix, benches/search_bench.py), the server pinned to the
# last cpu and wrk (16 connections) to the first, 12 s; prints the top symbols by self time.
# Needs perf and wrk, and the benchmark's cached database (run `scripts/bench --workloads search-1m`
# once to make it). Usage: benches/profile_search.sh [BINARY [SCOPE]]   (default
# target/release/storefront; SCOPE `full`, the default, or `storefront`: the key searched with)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/storefront}
CACHE=target/bench-cache
[ -f "$CACHE/search-1000000.db" ] || { echo "no $CACHE/search-1000000.db: run scripts/bench --workloads search-1m first" >&2; exit 1; }
last=$(($(nproc) - 1))
[ "$last" -ge 1 ] || { echo "needs 2 cpus: one for the server, one for wrk" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
cp "$CACHE/search-1000000.db" "$work/search.db"
key=$(python3 -c "import json;print(json.load(open('$CACHE/search-1000000.json'))['api_key'])")
if [ "${2:-full}" = storefront ]; then
    db=(--database "sqlite://$work/search.db")
    merchant=$("$BIN" "${db[@]}" merchant list --json | head -n 1 | python3 -c "import json,sys;print(json.load(sys.stdin)['merchant_id'])")
    key=$("$BIN" "${db[@]}" key issue --merchant "$merchant" --scope storefront --json | python3 -c "import json,sys;print(json.load(sys.stdin)['api_key'])")
fi
bodies=$(python3 -c "import sys; sys.path.insert(0, 'benches'); import search_bench; print(search_bench.bodies('$work', 'profile'))")
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
taskset -c "$last" "$BIN" --database "sqlite://$work/search.db" serve --addr "127.0.0.1:$port" --rate-limit 0 --storefront-rate-limit 0 \
    >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
run() { taskset -c 0 wrk -t1 -c16 -d"$1" -s benches/wrk/list.lua "http://127.0.0.1:$port" -- "$key" "$bodies" /v1/location/search | grep RESULT; }
run 15s   # warm-up: the pages of the file faulted in, the merchant's index built
perf record -F 999 -g -p "$pid" -o "$work/perf.data" -- sleep 12 >/dev/null 2>&1 &
perf_pid=$!
run 12s
wait "$perf_pid" || true
perf report -i "$work/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -6
perf report -i "$work/perf.data" --no-children --sort symbol --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | head -30
