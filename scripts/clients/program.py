"""A merchant's integration written against the Python client generated from openapi.json by
openapi-python-client, run by scripts/clients/run against a live `serve --demo`: a create with
one valid and one invalid item, a list walked by cursor, a search, the feed waiting with wait_s,
and a webhook delivery verified with the Standard Webhooks library.

Usage: python program.py BASE_URL API_KEY   (the generated package `storefront_client` importable)
"""

import http.server
import queue
import sys
import threading
import time

from standardwebhooks import Webhook
from storefront_client import AuthenticatedClient
from storefront_client.api.events import list_events
from storefront_client.api.locations import (
    archive_locations,
    create_locations,
    list_locations,
    restore_locations,
    search_locations,
)
from storefront_client.api.webhooks import create_webhook, delete_webhook
from storefront_client.models import (
    CreateRequest,
    CreateResponse,
    DayScheduleInput,
    Event,
    EventFeedRequest,
    EventFeedResponse,
    EventType,
    FeedStart,
    LimitsInput,
    LocationItem,
    LocationListFilter,
    LocationListFilterStatusType0,
    LocationListRequest,
    LocationListResponse,
    LocationType,
    NamingItem,
    NamingRequest,
    NearInput,
    PaginationRequest,
    PaymentMethod,
    PickupPointType,
    SearchFilter,
    SearchPagination,
    SearchRequest,
    SearchResponse,
    Status,
    Weekday,
    WebhookCreateRequest,
    WebhookIdRequest,
    WebhookWithSecret,
    WorkingDayInput,
)


def check(ok, what):
    if not ok:
        raise SystemExit(f"not as documented: {what}")
    print(f"ok: {what}")


def answer(parsed, kind, what):
    if not isinstance(parsed, kind):
        raise SystemExit(f"{what}: {parsed!r}")
    return parsed


base, api_key = sys.argv[1:3]
client = AuthenticatedClient(base_url=base, token=api_key, timeout=30.0)
mine = f"py-{int(time.time() * 1000):x}"


def item(merchant_location_id, latitude):
    return LocationItem(
        merchant_location_id=merchant_location_id,
        location_types=[LocationType.PICKUP_POINT],
        name="Python client's pickup point",
        address_tail="109012, Russia, Moscow, Ilyinka street, 9",
        latitude=latitude,
        longitude=37.6225,
        pickup_point_type=PickupPointType.PICKUP_POINT,
        payment_methods=[PaymentMethod.CARD],
        storage_period_days=7,
        limits=LimitsInput(length=60, width=40, height=40, weight=15),
        working_schedule=[
            WorkingDayInput(day=Weekday.MONDAY, schedule=DayScheduleInput(time_start="09:00", time_end="21:00"))
        ],
        is_accepts_returns=True,
    )


# 1. A create of one valid and one invalid item: one result each, the error as typed fields.
created = answer(
    create_locations.sync(client=client, body=CreateRequest(locations=[item(mine, 55.7555), item(mine + "-bad", 91)])),
    CreateResponse,
    "create",
)
stored, failed = created.locations
check(stored.status == Status.ACTIVE and stored.location_id and not stored.errors, f"the valid item is stored ACTIVE ({stored.status})")
check(
    failed.status == Status.FAILED
    and failed.location_id == ""
    and any(e.field == "locations[1].latitude" and e.code.value == "INVALID_LATITUDE" for e in failed.errors),
    "the invalid item is FAILED with INVALID_LATITUDE at locations[1].latitude",
)

# 2. Every ACTIVE pickup point, walked page by page with the cursor: as many as the total said.
cursor, seen, total = None, 0, None
while True:
    page = answer(
        list_locations.sync(
            client=client,
            body=LocationListRequest(
                filter_=LocationListFilter(
                    status=LocationListFilterStatusType0.ACTIVE, location_types=[LocationType.PICKUP_POINT]
                ),
                pagination=PaginationRequest(limit=40, cursor=cursor),
            ),
        ),
        LocationListResponse,
        "list",
    )
    seen += len(page.locations)
    total = page.pagination.total
    if not page.pagination.has_next:
        break
    cursor = page.pagination.next_cursor
check(isinstance(total, int) and total > 40 and seen == total, f"the list walked by cursor: {seen} of {total}")

# 3. A search: the nearest points that take a card, with their distances.
found = answer(
    search_locations.sync(
        client=client,
        body=SearchRequest(
            near=NearInput(latitude=55.7575, longitude=37.6134),
            radius_m=3000,
            filter_=SearchFilter(payment_method=PaymentMethod.CARD),
            pagination=SearchPagination(limit=3),
        ),
    ),
    SearchResponse,
    "search",
)
distances = [r.distance_m for r in found.results]
check(
    len(distances) == 3
    and distances == sorted(distances)
    and all(PaymentMethod.CARD in (r.location.payment_methods or []) for r in found.results),
    f"a search, nearest first: {distances} m",
)

# 4. The feed: from its end, a wait of up to 10 s answered by the next change.
start = answer(
    list_events.sync(client=client, body=EventFeedRequest(start=FeedStart.LATEST, pagination=PaginationRequest(limit=1))),
    EventFeedResponse,
    "events",
)
waited = queue.Queue()
waiter = threading.Thread(
    target=lambda: waited.put(
        list_events.sync(
            client=client,
            body=EventFeedRequest(pagination=PaginationRequest(limit=10, cursor=start.pagination.next_cursor), wait_s=10),
        )
    )
)
waiter.start()
time.sleep(0.5)
archive_locations.sync(client=client, body=NamingRequest(locations=[NamingItem(merchant_location_id=mine)]))
woke = answer(waited.get(timeout=20), EventFeedResponse, "events with wait_s")
event = woke.events[0]
check(
    event.type_ == EventType.LOCATION_ARCHIVED and event.merchant_location_id == mine,
    f"the feed woke with {event.type_} #{event.sequence}",
)

# 5. A webhook: a receiver on loopback, registered, a change delivered and verified.
deliveries = queue.Queue()
verifier = {}


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            payload = verifier["webhook"].verify(body, dict(self.headers))  # raises on a bad signature
        except Exception:
            self.send_response(400)
            self.end_headers()
            return
        self.send_response(204)
        self.end_headers()
        deliveries.put(Event.from_dict(payload))

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=server.serve_forever, daemon=True).start()
hook = answer(
    create_webhook.sync(
        client=client,
        body=WebhookCreateRequest(
            url=f"http://127.0.0.1:{server.server_address[1]}/hooks/storefront", types=[EventType.LOCATION_RESTORED]
        ),
    ),
    WebhookWithSecret,
    "webhook create",
)
verifier["webhook"] = Webhook(hook.secret)
restore_locations.sync(client=client, body=NamingRequest(locations=[NamingItem(merchant_location_id=mine)]))
while True:
    delivered = deliveries.get(timeout=20)
    if delivered.merchant_location_id == mine:
        break
check(
    delivered.type_ == EventType.LOCATION_RESTORED and delivered.status == Status.ACTIVE,
    f"a delivery verified by standardwebhooks: {delivered.type_} #{delivered.sequence}",
)
delete_webhook.sync(client=client, body=WebhookIdRequest(webhook_id=hook.webhook.webhook_id))
server.shutdown()
print("the Python client: every step as documented")
