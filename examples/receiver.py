"""A webhook receiver for the Storefront Catalog Service, complete and small.

Every delivery is verified with the Standard Webhooks library (signature and timestamp) before it
is trusted; a forged, altered or stale one is answered 400 and never acted on. Deliveries are at
least once, so an event seen before (the same `webhook-id`, which is its `event_id`) is answered
204 again and not acted on twice. Each new event is printed as one line:

    location.created #302 msk-wh-1 ACTIVE v1

Run it (Python 3.9+):

    python3 -m venv .venv && .venv/bin/pip install standardwebhooks
    STOREFRONT_WEBHOOK_SECRET=whsec_… .venv/bin/python examples/receiver.py 9000

and register `http://127.0.0.1:9000/hooks/storefront` with POST /v1/webhook/create (the service
must be started with --webhook-allow-private --webhook-allow-http to call an address of this
machine). A real receiver would act where this one prints: read the location again with
POST /v1/location/list and filter.location_ids, and keep the highest `version` it has seen.
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Lock

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

MAX_BODY = 64 * 1024  # an event is well under 1 KiB
secret = os.environ.get("STOREFRONT_WEBHOOK_SECRET", "")
if not secret.startswith("whsec_"):
    sys.exit("set STOREFRONT_WEBHOOK_SECRET to the secret POST /v1/webhook/create answered (whsec_…)")
webhook = Webhook(secret)
seen, seen_lock = set(), Lock()  # a real receiver keeps these in its database


def act(event):
    """Where a real receiver reads the location again; this one prints the event."""
    if event["type"] == "webhook.test":  # POST /v1/webhook/test: no location
        print("webhook.test", flush=True)
    else:
        who = event["merchant_location_id"] or event["location_id"]
        print(f'{event["type"]} #{event["sequence"]} {who} {event["status"]} v{event["version"]}', flush=True)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if self.path != "/hooks/storefront" or not 0 < length <= MAX_BODY:
            return self.answer(404 if self.path != "/hooks/storefront" else 400)
        body = self.rfile.read(length)
        try:
            event = webhook.verify(body, dict(self.headers))  # raises when forged, altered or stale
        except WebhookVerificationError:
            return self.answer(400)
        with seen_lock:  # one event at a time: deliveries come in parallel
            if event["event_id"] not in seen:
                seen.add(event["event_id"])
                act(event)
        self.answer(204)

    def answer(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):  # one line per event above, not one per request
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    server = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
    print(f"receiving on http://127.0.0.1:{port}/hooks/storefront", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
