"""The benchmarks' processes: starting and stopping them, their CPU time and memory from /proc,
HTTP calls, the throwaway PostgreSQL server. Shared by every script under benches/ (through
bench.py, which imports them by name)."""

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def scratch_dir(prefix):
    """A new temporary directory, removed when the script ends, however it ends but a SIGKILL: the
    benchmarks' databases take gigabytes, and a disk they fill fails every later run's writes."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def side_by_side(description):
    """The arguments of a benchmark of our build beside an earlier one: BASE, and `--ours`."""
    import argparse
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", help="an earlier release build of storefront, measured beside ours")
    p.add_argument("--ours", default=str(ROOT / "target/release/storefront"))
    return p


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(base, path, key, body, timeout=120):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_http(url, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.02)
    raise RuntimeError(f"{url} not ready")


# ---- processes ------------------------------------------------------------------------------

def tree(pid):
    """pid and all its descendants."""
    pids, frontier = [pid], [pid]
    while frontier:
        parent = frontier.pop()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == parent:
                    pids.append(int(entry))
                    frontier.append(int(entry))
    return pids


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / TICK


def peak_rss_mib(pids, field="VmHWM:"):
    """The servers' peak resident memory (`VmHWM`), or with `field="RssAnon:"` their own memory now:
    resident memory less the pages of mapped files (SQLite's memory-mapped database)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(field):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def serve(binary, database, flags=()):
    """`binary serve` on `database` (a URL) and a free port, without the merchant rate limit,
    ready; its process (a session of its own) and base URL. Stop it with `stop_process`."""
    port = free_port()
    proc = subprocess.Popen([str(binary), "--log-format", "json", "--database", str(database), "serve", "--addr",
                             f"127.0.0.1:{port}", "--rate-limit", "0", *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    wait_http(base + "/readyz")
    return proc, base


def write_report(path, lines):
    """Writes a report's lines to `path` (its folder made) and prints them."""
    text = "\n".join(lines) + "\n"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
    print(text)


def stop_process(proc):
    """SIGTERM, then SIGKILL after a minute."""
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def pg_shell(command, capture=False):
    """`command` in bash with scripts/lib/postgres.sh loaded; its output when `capture`."""
    return subprocess.run(["bash", "-c", f". {ROOT}/scripts/lib/postgres.sh && {command}"], check=True,
                          capture_output=capture, text=True).stdout


class Postgres:
    """A throwaway PostgreSQL cluster in the workdir (scripts/lib/postgres.sh), with fsync on: the
    create workloads on PostgreSQL are compared with SQLite's synchronous=FULL. Its shared buffers
    are sized as a deployment's would be for the million-location search (2 GB, a twelfth of this
    machine's memory, about the size of the database): with PostgreSQL's default of 128 MB, every record a
    search reads is copied in from the kernel's cache, where SQLite maps its file."""

    SHARED_BUFFERS = "2GB"

    def __init__(self, workdir):
        self.dir, self.port, self.n = Path(workdir) / "pg", free_port(), 0
        self.shell(f"PG_FSYNC=on PG_SHARED_BUFFERS={self.SHARED_BUFFERS} pg_start {self.dir} {self.port}")
        self.bin = self.shell("pg_bin", capture=True).strip()
        self.postmaster = int((self.dir / "data/postmaster.pid").read_text().split()[0])

    def shell(self, command, capture=False):
        return pg_shell(command, capture)

    def fresh(self, tag):
        """An empty database's URL."""
        self.n += 1
        name = f"bench_{tag}_{self.n}".replace("-", "_")
        run([f"{self.bin}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name])
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def copy(self, url, tag):
        """A new database's URL, a copy of the database at `url` (no one connected to it)."""
        self.n += 1
        name = f"bench_{tag}_{self.n}".replace("-", "_")
        run([f"{self.bin}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-T",
             url.rsplit("/", 1)[1], name])
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def pids(self):
        return tree(self.postmaster)

    def transactions(self):
        """Transactions ended so far, every database's (a statement outside one is its own). The
        cumulative statistics are flushed by each backend about once a second: read it a second
        and more after the load stops."""
        return int(self.query("SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database") or 0)

    def query(self, sql, database="postgres", separator="|", check=True):
        """`sql`'s rows through psql, unaligned (columns joined by `separator`), without the
        trailing newline; with `check` off, a failed statement gives what psql printed."""
        out = subprocess.run([f"{self.bin}/psql", "-Atq", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                              "-d", database, "-F", separator, "-c", sql], check=check, capture_output=True, text=True)
        return out.stdout.strip()

    def stop(self):
        self.shell(f"pg_stop {self.dir}")
