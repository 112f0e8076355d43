"""README's "When your receiver was down" walkthrough, step by step as it is written there, against
the real binary and the repository's test receiver (examples' `receiver`): a service allowed to
call a receiver on this machine, an endpoint, the receiver stopped, the sample file pushed (its 4
events missed), the failed attempts in the deliveries log, the receiver started again, a test event,
a recovery since it broke (4), a resend; then every missed event received once by the mended
receiver, and once more the resent one. Usage: recover.py STOREFRONT_BIN RECEIVER_BIN."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BIN, RECEIVER = (os.path.abspath(p) for p in sys.argv[1:3])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, key, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def receiver(port):
    proc = subprocess.Popen([RECEIVER, f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            return proc, stats(port)
        except OSError:
            time.sleep(0.05)
    sys.exit("the receiver did not start")


def stats(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as r:
        return json.load(r)


def check(what, ok):
    if not ok:
        sys.exit(f"FAILED: {what}")
    print(f"   {what}")


def main():
    work = tempfile.mkdtemp(prefix="readme-recover-")
    port, hook_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    out = open(os.path.join(work, "serve.out"), "w+")
    # cargo run --example receiver 127.0.0.1:9000 &
    rx, _ = receiver(hook_port)
    # cargo run -- serve --demo --webhook-allow-private --webhook-allow-http
    server = subprocess.Popen([BIN, "--database", f"sqlite://{work}/storefront.db", "serve", "--demo", "--addr",
                               f"127.0.0.1:{port}", "--webhook-allow-private", "--webhook-allow-http"],
                              stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        for _ in range(600):
            out.seek(0)
            words = out.read().split()
            key = next((w for w in words if w.startswith("sf_")), None)
            if key:
                try:
                    urllib.request.urlopen(base + "/readyz", timeout=2).read()
                    break
                except OSError:
                    pass
            time.sleep(0.1)
        else:
            sys.exit("the service did not start")
        hook = call(base, key, "/v1/webhook/create", {"url": f"http://127.0.0.1:{hook_port}/hooks"})
        hook_id = hook["webhook"]["webhook_id"]
        # kill %1; BROKE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
        rx.kill()
        rx.wait()
        broke = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        time.sleep(1)
        env = dict(os.environ, STOREFRONT_API_KEY=key, STOREFRONT_URL=base)
        subprocess.run([BIN, "locations", "push", "examples/locations.csv"], env=env, cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        events = call(base, key, "/v1/location/events", {"start": "oldest", "pagination": {"limit": 1000}})["events"]
        missed = [e["event_id"] for e in events if e["occurred_at"] >= broke]
        check(f"the sample file pushed: {len(missed)} events", len(missed) == 4)
        for _ in range(100):
            failed = call(base, key, "/v1/webhook/deliveries",
                          {"webhook_id": hook_id, "filter": {"outcome": "failed"}})["deliveries"]
            if len({d["event_id"] for d in failed}) == 4:
                break
            time.sleep(0.1)
        check("1. the deliveries log, filtered: each missed event failed (could not connect)",
              {d["event_id"] for d in failed} == set(missed)
              and all(d["error"].startswith("could not connect") and d["trigger"] == "automatic" for d in failed))
        rx, _ = receiver(hook_port)
        test = call(base, key, "/v1/webhook/test", {"webhook_id": hook_id})["delivery"]
        check("2. a test event to the mended receiver: delivered, 204",
              test["outcome"] == "delivered" and test["http_status"] == 204 and test["trigger"] == "test")
        recovered = call(base, key, "/v1/webhook/recover", {"webhook_id": hook_id, "since": broke})
        # A retry of the schedule (the first after 5 s) may have delivered one since it was mended.
        retried = stats(hook_port)["unique"] - 1
        check(f'3. recovered since it broke: {recovered} ({retried} delivered by a retry first)',
              recovered == {"recovered": 4 - retried})
        for _ in range(300):
            if stats(hook_port)["unique"] >= 5:
                break
            time.sleep(0.1)
        got = stats(hook_port)
        check("   every missed event received once (and the test event)", got == {**got, "unique": 5, "deliveries": 5})
        resent = call(base, key, "/v1/webhook/resend", {"webhook_id": hook_id, "event_id": missed[0]})["delivery"]
        check("4. one event resent: delivered, its attempt one more than before",
              resent["outcome"] == "delivered" and resent["trigger"] == "resend" and resent["attempt"] >= 2)
        check("   the receiver got it once more", stats(hook_port)["deliveries"] == 6)
    finally:
        server.terminate()
        server.wait()
        rx.kill()
        rx.wait()
    print("   README walkthrough 'When your receiver was down': ok")


main()
