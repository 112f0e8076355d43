"""Webhooks end to end (see run): the real binary, a receiver here, the library's verify()."""

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

BIN = os.path.abspath(sys.argv[1])
PG_ADMIN = sys.argv[2] if len(sys.argv) > 2 else ""
FAST = ["--webhook-allow-private", "--webhook-allow-http", "--webhook-retry-schedule", ",".join(["1s"] * 20)]
# The servers' logs and the SQLite database, removed when the check ends, however it ends (after
# any server still running is stopped).
WORK = tempfile.TemporaryDirectory(prefix="storefront-webhooks-")
SERVERS = []


@atexit.register
def clean_up():
    for server in SERVERS:
        if server.proc.poll() is None:
            server.kill()
    WORK.cleanup()


class Receiver:
    """Records every delivery verified with the secrets given; answers 503 while `down`, 410
    while `gone`."""

    def __init__(self):
        self.secrets = []
        self.verified = []  # (webhook-id, event)
        self.unverified = 0
        self.down = False
        self.gone = False
        self.delay = 0.0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if receiver.delay:
                    time.sleep(receiver.delay)
                if receiver.down or receiver.gone:
                    self.send_response(410 if receiver.gone else 503)
                    self.end_headers()
                    return
                event = None
                for secret in receiver.secrets:
                    try:
                        event = Webhook(secret).verify(body, headers)
                        break
                    except Exception:
                        continue
                with receiver.lock:
                    if event is None:
                        receiver.unverified += 1
                    else:
                        receiver.verified.append((headers["webhook-id"], event))
                self.send_response(204 if event is not None else 400)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def ids(self):
        with self.lock:
            return [i for i, _ in self.verified]

    def times(self, event_id):
        with self.lock:
            return sum(1 for i, _ in self.verified if i == event_id)


class Server:
    def __init__(self, database, *extra):
        n = len(SERVERS)
        self.log = open(os.path.join(WORK.name, f"server-{n}.log"), "w")
        self.out = open(os.path.join(WORK.name, f"server-{n}.out"), "w")
        self.database = database
        self.proc = subprocess.Popen(
            [BIN, "--database", database, "serve", "--rate-limit", "0", "--addr", "127.0.0.1:0", *FAST, *extra],
            stdout=self.out, stderr=self.log)
        SERVERS.append(self)
        for _ in range(300):
            text = open(self.log.name).read()
            if "listening on " in text:
                self.base = text.split("listening on ", 1)[1].split()[0]
                return
            if self.proc.poll() is not None:
                sys.exit(f"the server stopped: {text}")
            time.sleep(0.1)
        sys.exit("the server did not start")

    def key(self):
        out = open(self.out.name).read()
        return next(w for w in out.split() if w.startswith("sf_"))

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def post(base, key, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def events_after(base, key, cursor):
    """Every event after the cursor: their ids."""
    ids = []
    while True:
        page = post(base, key, "/v1/location/events", {"pagination": {"limit": 1000, "cursor": cursor}})
        ids += [e["event_id"] for e in page["events"]]
        cursor = page["pagination"]["next_cursor"]
        if not page["pagination"]["has_next"]:
            return ids, cursor


def wait(what, check, seconds=120):
    end = time.time() + seconds
    while time.time() < end:
        if check():
            return
        time.sleep(0.2)
    sys.exit(f"FAILED: {what} within {seconds} s")


def warehouse(mlid, lat, lon):
    return {"merchant_location_id": mlid, "location_types": ["WAREHOUSE"], "name": f"Warehouse {mlid}",
            "address_tail": "101000, Russia, Moscow, Tverskaya street, 1", "latitude": lat, "longitude": lon,
            "limits": {"length": 100, "width": 100, "height": 100, "weight": 100},
            "working_schedule": [{"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "18:00"}}],
            "is_accepts_returns": True}


def sqlite_run():
    database = f"sqlite://{WORK.name}/webhooks.db"
    receiver = Receiver()
    server = Server(database, "--demo")
    key = server.key()
    hook = post(server.base, key, "/v1/webhook/create", {"url": receiver.url})
    receiver.secrets.append(hook["secret"])
    cursor = post(server.base, key, "/v1/location/events", {"start": "latest"})["pagination"]["next_cursor"]

    # The sample file, as the README pushes it: one verified delivery per row.
    env = dict(os.environ, STOREFRONT_URL=server.base, STOREFRONT_API_KEY=key)
    subprocess.run([BIN, "locations", "push", "examples/locations.csv"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    ids, cursor = events_after(server.base, key, cursor)
    wait("one verified delivery per row of the sample file", lambda: set(ids) <= set(receiver.ids()))
    created = [e for i, e in receiver.verified if e["type"] == "location.created"]
    print(f"   sample file: {len(ids)} events, {len(created)} verified deliveries of location.created")
    assert len(ids) == 4 and len(created) == 4, (ids, created)

    # A quarantined location approved from the CLI arrives as location.approved.
    near = post(server.base, key, "/v1/location/create",
                {"locations": [warehouse("annex", 55.75585, 37.6173)]})["locations"][0]
    assert near["status"] == "QUARANTINE", near
    subprocess.run([BIN, "--database", database, "locations", "approve", near["location_id"]], check=True,
                   stdout=subprocess.DEVNULL)
    wait("location.approved delivered", lambda: any(
        e["type"] == "location.approved" and e["location_id"] == near["location_id"] for _, e in receiver.verified))
    print("   an approval from the CLI: location.approved delivered and verified")

    # SIGKILL with deliveries pending: every event is delivered once the server runs again.
    ids, cursor = events_after(server.base, key, cursor)
    receiver.down = True
    post(server.base, key, "/v1/location/create",
         {"locations": [warehouse(f"k{n}", 50 + n * 0.01, 30) for n in range(20)]})
    pending, cursor = events_after(server.base, key, cursor)
    time.sleep(1.5)
    server.kill()
    receiver.down = False
    server = Server(database)
    wait("every event pending at the kill delivered after the restart", lambda: set(pending) <= set(receiver.ids()))
    assert receiver.unverified == 0, receiver.unverified
    print(f"   killed with {len(pending)} events pending: all delivered after the restart, every one verified")

    # CONTRACT §20: a test event and a resend, verified; a recovery, then SIGKILL right after its answer.
    webhook_id = hook["webhook"]["webhook_id"]
    test = post(server.base, key, "/v1/webhook/test", {"webhook_id": webhook_id})["delivery"]
    event = next(e for i, e in receiver.verified if i == test["event_id"])
    assert test["trigger"] == "test" and test["outcome"] == "delivered", test
    assert event["type"] == "webhook.test" and event["sequence"] is None and event["location_id"] is None, event
    resent = post(server.base, key, "/v1/webhook/resend", {"webhook_id": webhook_id, "event_id": pending[0]})
    assert resent["delivery"]["trigger"] == "resend" and resent["delivery"]["outcome"] == "delivered", resent
    assert receiver.times(pending[0]) >= 2
    print("   a test event and a resend: delivered and verified")
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    receiver.gone = True
    post(server.base, key, "/v1/location/create", {"locations": [warehouse("g0", 40, 30)]})
    wait("the 410 disables the endpoint", lambda: post(server.base, key, "/v1/webhook/list", {})["webhooks"][0]
         ["status"] == "DISABLED")
    post(server.base, key, "/v1/location/create",
         {"locations": [warehouse(f"g{n}", 40 + n * 0.01, 30) for n in range(1, 20)]})
    missed, cursor = events_after(server.base, key, cursor)
    missed = [i for i in missed if i not in pending]
    receiver.gone = False
    post(server.base, key, "/v1/webhook/enable", {"webhook_id": webhook_id})
    recovered = post(server.base, key, "/v1/webhook/recover", {"webhook_id": webhook_id, "since": since})
    server.kill()
    assert recovered == {"recovered": len(missed)}, (recovered, len(missed))
    server = Server(database)
    wait("every recovered event delivered after a SIGKILL right after the recovery's answer",
         lambda: set(missed) <= set(receiver.ids()))
    assert receiver.unverified == 0, receiver.unverified
    print(f"   {len(missed)} events recovered, killed right after the answer: all delivered after the restart")
    server.kill()


def postgres_run():
    name = "w_" + uuid.uuid4().hex
    psql = os.path.join(os.environ["PGBIN"], "psql") if os.environ.get("PGBIN") else "psql"
    subprocess.run([psql, PG_ADMIN, "-qc", f"CREATE DATABASE {name}"], check=True, stdout=subprocess.DEVNULL)
    database = PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    receiver = Receiver()
    receiver.delay = 0.3
    a = Server(database, "--demo")
    key = a.key()
    b = Server(database)
    hook = post(a.base, key, "/v1/webhook/create", {"url": receiver.url})
    receiver.secrets.append(hook["secret"])
    cursor = post(a.base, key, "/v1/location/events", {"start": "latest"})["pagination"]["next_cursor"]
    for n in range(4):
        post((a, b)[n % 2].base, key, "/v1/location/create",
             {"locations": [warehouse(f"p{n}-{m}", 45 + n * 0.1 + m * 0.001, 30) for m in range(10)]})
    ids, cursor = events_after(b.base, key, cursor)
    wait("the first deliveries", lambda: len(receiver.ids()) >= 3)
    a.kill()
    wait("every event delivered after one instance was killed mid-delivery",
         lambda: set(ids) <= set(receiver.ids()), seconds=180)
    got = receiver.ids()
    print(f"   two instances, one killed: {len(ids)} events, all delivered ({len(got) - len(set(got))} twice)")

    # CONTRACT §20: a recovery made through one instance is delivered once, by either.
    a = Server(database)
    webhook_id = hook["webhook"]["webhook_id"]
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    receiver.delay = 0
    receiver.gone = True
    post(a.base, key, "/v1/location/create", {"locations": [warehouse("g0", 40, 30)]})
    wait("the 410 disables the endpoint", lambda: post(b.base, key, "/v1/webhook/list", {})["webhooks"][0]
         ["status"] == "DISABLED")
    post(b.base, key, "/v1/location/create",
         {"locations": [warehouse(f"g{n}", 40 + n * 0.01, 30) for n in range(1, 40)]})
    missed, cursor = events_after(a.base, key, cursor)
    receiver.gone = False
    post(a.base, key, "/v1/webhook/enable", {"webhook_id": webhook_id})
    recovered = post(a.base, key, "/v1/webhook/recover", {"webhook_id": webhook_id, "since": since})
    assert recovered == {"recovered": len(missed)}, (recovered, len(missed))
    wait("every recovered event delivered", lambda: set(missed) <= set(receiver.ids()))
    time.sleep(2)
    twice = [i for i in missed if receiver.times(i) != 1]
    assert not twice, twice
    print(f"   two instances: {len(missed)} events recovered through one, each delivered once")
    a.kill()
    b.kill()


if PG_ADMIN:
    postgres_run()
else:
    sqlite_run()
print("   webhooks: ok")
