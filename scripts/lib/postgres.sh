# Throwaway PostgreSQL servers on loopback, from Debian's `postgresql` package.
# Sourced by scripts/test and scripts/postgres. As root, the server runs as the `postgres` user
# (initdb refuses root).

# The newest installed server's bin directory, or nothing.
pg_bin() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

# A free TCP port on 127.0.0.1.
pg_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pg_as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pg_start DIR PORT: creates a cluster in DIR and starts it on 127.0.0.1:PORT. Without fsync (tests
# need no durability) unless PG_FSYNC=on (the benchmark compares it with SQLite's FULL sync); with
# PostgreSQL's default 128 MB of shared buffers unless PG_SHARED_BUFFERS says otherwise (the
# benchmark sizes them as a deployment would, to hold its million-location database).
pg_start() {
    local dir=$1 port=$2 bin
    bin=$(pg_bin) || return 1
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
    pg_as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        return 1
    }
    pg_serve "$dir" "$port"
}

# pg_serve DIR PORT: starts the cluster made in DIR (by pg_start or pg_start_standby), again after
# a pg_stop, with the settings pg_start describes.
pg_serve() {
    local dir=$1 port=$2 bin
    bin=$(pg_bin) || return 1
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=${PG_FSYNC:-off} -c shared_buffers=${PG_SHARED_BUFFERS:-128MB} -c max_connections=300" start >/dev/null
}

# pg_start_standby PRIMARY_PORT DIR PORT: a streaming hot standby of the server on 127.0.0.1:PRIMARY_PORT
# (pg_basebackup -R: a copy that follows the primary's WAL, and serves reads: hot_standby is on by
# default), started in DIR on 127.0.0.1:PORT with the primary's settings.
pg_start_standby() {
    local primary=$1 dir=$2 port=$3 bin
    bin=$(pg_bin) || return 1
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
    pg_as_owner "$bin/pg_basebackup" -h 127.0.0.1 -p "$primary" -U postgres -D "$dir/data" -R -X stream -c fast \
        >"$dir/basebackup.log" 2>&1 || {
        cat "$dir/basebackup.log" >&2
        return 1
    }
    pg_serve "$dir" "$port"
}

# pg_stop DIR
pg_stop() {
    local dir=$1 bin
    bin=$(pg_bin) || return 0
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

# pg_report DIR: what the server in DIR said went wrong (a backend killed or crashed, a PANIC, a
# full disk), the end of its log, and the kernel's word on processes it killed for memory, so that
# a failed run shows why the server stopped answering before the directory is removed.
pg_report() {
    local dir=$1
    echo "!! PostgreSQL's log ($dir/server.log): its errors, then its last 40 lines"
    grep -E 'PANIC|FATAL|terminated by signal|was terminated|No space left|out of memory' "$dir/server.log" | head -n 40 || true
    echo "   ..."
    tail -n 40 "$dir/server.log" || true
    echo "!! the kernel's out-of-memory kills, if it lets us read them"
    dmesg 2>/dev/null | grep -iE 'out of memory|killed process|oom' | tail -n 20 || true
    df -h "$dir" || true
    free -m || true
}
