"""Schemathesis hooks for the Storefront Catalog Service.

A list cursor is a token the server issues and signs; no schema can describe which strings are
valid ones, so a made-up string cursor is rightly refused (400 INVALID_CURSOR) even though it is
schema-valid. This hook keeps schemathesis from sending *made-up string* cursors, in every phase;
cursors of the wrong type still go through (and must get 400), and every check stays on.

Likewise a search's `filter.open_at` must be a real calendar date (CONTRACT §12.1): its pattern
says `YYYY-MM-DDTHH:MM`, which no pattern can narrow to real dates short of spelling out the
calendar, so a pattern-valid string that is not a real date (2026-02-30) is replaced by a real one.

The event feed's cursors, an endpoint's delivery cursors and the imports' are handled as the lists' are; a feed's
`wait_s` is cut to 1 s (a valid wait that no event ends would take up to 25 s of the run). A
webhook's id, like a cursor, is one the server issues: a string id is replaced by a real one's, the
create's URL string by one the create accepts, and the merchant kept under its 10 endpoints. A
resend's event id is one the server issued too: a string is replaced by an event appended after the
endpoint was created (a demo location archived and restored); a recovery's `until` that is not after
its `since` (a rule no schema states) is sent as null. An import's id is one the server issued too:
a string is replaced by a real import's; an import is created only once fewer than 2 of the
merchant's are queued or running (the third is refused, a rule of the merchant's state no schema
states), and `archive_missing` is sent with `update`, which it needs. A key's id is one the server
issued too: a revoke's string id is replaced by a live storefront key's, and the merchant is kept
under its 20 storefront keys not revoked (the 21st is refused, a rule of its state).
"""

import datetime
import json
import re
import threading
import time
import urllib.request

import schemathesis

WEBHOOK_NAMED = ("/v1/webhook/delete", "/v1/webhook/enable", "/v1/webhook/rotate_secret", "/v1/webhook/deliveries",
                 "/v1/webhook/resend", "/v1/webhook/recover", "/v1/webhook/test")
# A name the hosts file answers, never a DNS server, and whose address the service refuses (loopback):
# each attempt a test, a resend or the worker makes to it fails at once, and nothing is sent off the
# machine. A name only a DNS server knows made every attempt ask one: at eight at a time, some waited
# out the resolver's 5 s timeout, holding the endpoint's places, and the run's resends waited with them.
SAFE_URL = "https://localhost/schemathesis"
# Schemathesis' workers are threads: one at a time makes room and creates endpoints, so that two
# never delete the same endpoint, and an endpoint just created for a case is among the 8 newest
# that the next ones keep.
WEBHOOKS_LOCK = threading.Lock()


def _api(base, auth, path, body):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": auth, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def _room(base, auth):
    """Deletes the oldest endpoints until one more fits under the 10 a merchant may have."""
    webhooks = _api(base, auth, "/v1/webhook/list", {})["webhooks"]
    for webhook in webhooks[:max(0, len(webhooks) - 8)]:
        _api(base, auth, "/v1/webhook/delete", {"webhook_id": webhook["webhook_id"]})


def _webhooks(case, kwargs):
    """An endpoint's id is one the server issued, as a cursor is: a made-up string id is rightly
    answered 400 NOT_FOUND, so a string id is replaced by a real endpoint's; and the merchant is
    kept under its 10 endpoints, with a URL that the create accepts."""
    base, auth = _target(case, kwargs)
    if not base or not auth or not isinstance(case.body, dict):
        return
    _room(base, auth)
    if case.operation.path == "/v1/webhook/create" and isinstance(case.body.get("url"), str):
        case.body = dict(case.body, url=SAFE_URL)
    if case.operation.path in WEBHOOK_NAMED and isinstance(case.body.get("webhook_id"), str):
        created = _api(base, auth, "/v1/webhook/create", {"url": SAFE_URL})
        case.body = dict(case.body, webhook_id=created["webhook"]["webhook_id"])
    if case.operation.path == "/v1/webhook/resend" and isinstance(case.body.get("event_id"), str):
        case.body = dict(case.body, event_id=_new_event(base, auth))
    if case.operation.path == "/v1/webhook/recover":
        since, until = case.body.get("since"), case.body.get("until")
        if isinstance(since, str) and isinstance(until, str) and not _after(until, since):
            case.body = dict(case.body, until=None)


def _new_event(base, auth):
    """The id of an event appended now: a demo location archived, then restored."""
    cursor = _api(base, auth, "/v1/location/events", {"start": "latest"})["pagination"]["next_cursor"]
    location = _api(base, auth, "/v1/location/list", {"filter": {"status": "ACTIVE"}, "pagination": {"limit": 1}})
    named = {"location_id": location["locations"][0]["location_id"]}
    _api(base, auth, "/v1/location/archive", {"locations": [named]})
    _api(base, auth, "/v1/location/restore", {"locations": [named]})
    events = _api(base, auth, "/v1/location/events", {"pagination": {"limit": 10, "cursor": cursor}})["events"]
    return events[-1]["event_id"]


def _after(until, since):
    """Whether `until` is after `since` (both RFC 3339; either unreadable: leave it be)."""
    try:
        return datetime.datetime.fromisoformat(until) > datetime.datetime.fromisoformat(since)
    except (TypeError, ValueError):
        return True


IMPORTS_LOCK = threading.Lock()
TINY_CSV = {"file_name": "tiny.csv", "content_base64": "bmFtZQpB", "dry_run": True}


KEYS_LOCK = threading.Lock()


def _live_storefront_keys(base, auth):
    """The merchant's storefront keys not revoked, oldest first."""
    keys, cursor = [], None
    while True:
        page = _api(base, auth, "/v1/key/list", {"pagination": {"limit": 1000, "cursor": cursor}})
        keys += [k for k in page["keys"] if k["scope"] == "storefront" and k["revoked_at"] is None]
        cursor = page["pagination"]["next_cursor"]
        if cursor is None:
            return keys


def _keys(case, kwargs):
    """Key cases with the server's own ids, and within the 20 storefront keys a merchant may have."""
    base, auth = _target(case, kwargs)
    if not base or not auth or not isinstance(case.body, dict):
        return
    live = _live_storefront_keys(base, auth)
    for key in live[:max(0, len(live) - 18)]:
        _api(base, auth, "/v1/key/revoke", {"key_id": key["key_id"]})
    if case.operation.path == "/v1/key/revoke" and isinstance(case.body.get("key_id"), str):
        made = _api(base, auth, "/v1/key/create", {"label": "schemathesis"})
        case.body = dict(case.body, key_id=made["key"]["key_id"])


def _target(case, kwargs):
    """The service's base URL and the case's Authorization header."""
    base = (getattr(case.operation, "base_url", None) or case.operation.schema.get_base_url() or "").rstrip("/")
    auth = (kwargs.get("headers") or {}).get("Authorization") or (case.headers or {}).get("Authorization")
    return base, auth


def _imports(case, kwargs):
    """Import cases with the server's own ids, and within the 2 imports a merchant may have running."""
    base, auth = _target(case, kwargs)
    if not base or not auth or not isinstance(case.body, dict):
        return
    if case.operation.path == "/v1/import/create":
        if case.body.get("archive_missing") is True and case.body.get("update") is not True:
            case.body = dict(case.body, update=True)
        _fewer_than_two_running(base, auth)
    elif isinstance(case.body.get("import_id"), str):
        imports = _api(base, auth, "/v1/import/list", {"pagination": {"limit": 1}})["imports"]
        if not imports:
            _fewer_than_two_running(base, auth)
            imports = [_api(base, auth, "/v1/import/create", TINY_CSV)["import"]]
        case.body = dict(case.body, import_id=imports[0]["import_id"])


def _fewer_than_two_running(base, auth, seconds=20):
    """Waits until fewer than 2 of the merchant's imports are queued or running (they end in moments)."""
    for _ in range(seconds * 10):
        imports = _api(base, auth, "/v1/import/list", {"pagination": {"limit": 10}})["imports"]
        if sum(i["status"] in ("QUEUED", "RUNNING") for i in imports) < 2:
            return
        time.sleep(0.1)


@schemathesis.hook
def before_call(ctx, case, kwargs):
    if case.operation.path.startswith("/v1/import/"):
        with IMPORTS_LOCK:
            _imports(case, kwargs)
    if case.operation.path.startswith("/v1/webhook/"):
        with WEBHOOKS_LOCK:
            _webhooks(case, kwargs)
    if case.operation.path in ("/v1/key/create", "/v1/key/revoke"):
        with KEYS_LOCK:
            _keys(case, kwargs)
    if case.operation.path not in ("/v1/categories/list", "/v1/location/list", "/v1/location/search",
                                   "/v1/location/events", "/v1/webhook/deliveries", "/v1/import/list",
                                   "/v1/import/rows", "/v1/key/list") \
            or not isinstance(case.body, dict):
        return
    # A feed may wait up to 25 s for an event that never comes: one second is enough to check it.
    # A whole number written as a float (`24.0`) is that integer to the server, and waits as long.
    wait = case.body.get("wait_s")
    if case.operation.path == "/v1/location/events" and isinstance(wait, (int, float)) \
            and not isinstance(wait, bool) and float(wait).is_integer() and 1 < wait <= 25:
        case.body = dict(case.body, wait_s=1)
    search_filter = case.body.get("filter")
    if case.operation.path == "/v1/location/search" and isinstance(search_filter, dict):
        at = search_filter.get("open_at")
        if isinstance(at, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d", at):
            try:
                datetime.date.fromisoformat(at[:10])
            except ValueError:
                case.body = dict(case.body, filter=dict(search_filter, open_at="2026-11-28" + at[10:]))
    pagination = case.body.get("pagination")
    if isinstance(pagination, dict) and isinstance(pagination.get("cursor"), str) and pagination["cursor"]:
        pagination = dict(pagination)
        del pagination["cursor"]
        case.body = dict(case.body, pagination=pagination)
