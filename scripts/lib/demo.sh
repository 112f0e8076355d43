# A throwaway `serve --demo` for the scripts that test the live service (the browser tests,
# schemathesis, the typed clients). Source it, then:
#   demo_start BIN DIR [SERVE FLAGS...]  starts it on a free port over a new database in DIR, with no
#                                        rate limit, waits until it listens, and sets demo_pid,
#                                        demo_base, demo_key (the full key) and demo_storefront_key
#   demo_stop                            stops it (for an EXIT trap: safe before demo_start too)

demo_start() {
    local bin=$1 dir=$2
    shift 2
    "$bin" --log-format json --database "sqlite://$dir/demo.db" serve --demo --rate-limit 0 --addr 127.0.0.1:0 \
        "$@" >"$dir/out" 2>"$dir/err" &
    demo_pid=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$dir/err" && grep -q "/widget/#key=" "$dir/out" && break
        sleep 0.1
    done
    demo_base=$(sed -n 's/^storefront is listening on //p' "$dir/err")
    demo_key=$(grep -o 'sf_[A-Za-z0-9_-]*' "$dir/out" | head -n 1)
    demo_storefront_key=$(sed -n 's|.*/widget/#key=||p' "$dir/out")
    if [ -z "$demo_base" ] || [ -z "$demo_key" ]; then
        cat "$dir/err" >&2
        echo "the demo service did not start" >&2
        return 1
    fi
}

demo_stop() {
    [ -n "${demo_pid:-}" ] || return 0
    kill "$demo_pid" 2>/dev/null
    wait "$demo_pid" 2>/dev/null || true
}
