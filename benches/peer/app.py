"""The benchmark's peer: the two endpoints as a team would otherwise write them, in FastAPI +
pydantic v2 on uvicorn, installed as FastAPI's documentation installs it (`uvicorn[standard]`:
uvloop and httptools). Typed models of the same shapes, requests and answers (answers through
`response_model`, so pydantic serialises them), the same SQLite schema (a database created by
`storefront`), one transaction per create request. A small, honest reference, not a
full implementation: it validates with pydantic and the same per-item store steps (retry lookup,
neighbour scan, insert), but does not reproduce every rule of the contract.

Run: STOREFRONT_PEER_DB=path.db uvicorn app:app --workers 2 --host 127.0.0.1 --port 8091
"""

import base64
import hashlib
import hmac
import json
import math
import os
import sqlite3
import threading
import time
import uuid
from typing import Literal, Optional

from fastapi import FastAPI, Header, HTTPException
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

DB = os.environ.get("STOREFRONT_PEER_DB", "storefront.db")
app = FastAPI()
_local = threading.local()


def conn() -> sqlite3.Connection:
    c = getattr(_local, "conn", None)
    if c is None:
        c = sqlite3.connect(DB, isolation_level=None, check_same_thread=False, timeout=5)
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("PRAGMA synchronous=FULL")
        _local.conn = c
    return c


def authenticate(authorization: Optional[str]) -> int:
    if not authorization or not authorization.lower().startswith("bearer "):
        raise HTTPException(401, "unauthenticated")
    token = authorization[7:].strip()
    if not token.startswith("sf_") or "_" not in token[3:]:
        raise HTTPException(401, "invalid api key")
    key_id, secret = token[3:].split("_", 1)
    row = conn().execute(
        "SELECT merchant_pk, secret_hash FROM api_keys WHERE key_id = ? AND revoked_at IS NULL", (key_id,)
    ).fetchone()
    if row is None or not hmac.compare_digest(row[1], hashlib.sha256(secret.encode()).digest()):
        raise HTTPException(401, "invalid api key")
    return row[0]


# ---- models --------------------------------------------------------------------------------

class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class DaySchedule(Strict):
    time_start: str = Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")
    time_end: str = Field(pattern=r"^(([01]\d|2[0-3]):[0-5]\d|24:00)$")
    break_: Optional[str] = Field(None, alias="break")
    shipping_cutoff: Optional[str] = None


class WorkingDay(Strict):
    day: Literal["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"]
    schedule: DaySchedule


class DatedDay(Strict):
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    schedule: DaySchedule
    is_works: bool


class Limits(Strict):
    length: float = Field(gt=0, le=1000)
    width: float = Field(gt=0, le=1000)
    height: float = Field(gt=0, le=1000)
    weight: float = Field(gt=0, le=10000)


class Location(Strict):
    merchant_location_id: Optional[str] = Field(None, max_length=64)
    location_types: list[Literal["WAREHOUSE", "PICKUP_POINT", "CLICK_AND_COLLECT"]] = Field(min_length=1)
    name: str = Field(min_length=1, max_length=255)
    address_tail: Optional[str] = Field(None, max_length=500)
    comment: Optional[str] = Field(None, max_length=1000)
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    provider_id: Optional[str] = None
    provider_location_id: Optional[str] = Field(None, max_length=64)
    pickup_point_type: Optional[Literal["PICKUP_POINT", "POSTAMAT"]] = None
    payment_methods: Optional[list[Literal["ALREADY_PAID", "CARD", "CASH"]]] = None
    storage_period_days: Optional[int] = Field(None, ge=1, le=90)
    limits: Limits
    instruction: Optional[str] = Field(None, max_length=2000)
    pickup_services: Optional[list[Literal["FITTING"]]] = None
    working_schedule: list[WorkingDay] = Field(min_length=1, max_length=7)
    individual_schedule: Optional[list[DatedDay]] = Field(None, max_length=100)
    is_accepts_returns: bool


class CreateRequest(Strict):
    locations: list[Location] = Field(max_length=200)


class Filter(Strict):
    status: Optional[Literal["active", "disabled"]] = None
    leaf_only: Optional[bool] = None
    parent_id: Optional[str] = None
    ids: Optional[list[str]] = Field(None, max_length=1000)


class Pagination(Strict):
    cursor: Optional[str] = None
    limit: int = Field(ge=1)


class ListRequest(Strict):
    filter: Optional[Filter] = None
    pagination: Optional[Pagination] = None


# ---- create ----------------------------------------------------------------------------------

TYPE_BITS = {"WAREHOUSE": 1, "PICKUP_POINT": 2, "CLICK_AND_COLLECT": 4}


def haversine(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371008.8 * math.asin(min(1.0, math.sqrt(a)))


class ItemResult(BaseModel):
    location_id: str
    merchant_location_id: Optional[str]
    name: str
    status: str
    errors: list[dict]


class CreateResponse(BaseModel):
    locations: list[ItemResult]


@app.post("/v1/location/create", response_model=CreateResponse)
def create(request: CreateRequest, authorization: Optional[str] = Header(None)):
    merchant = authenticate(authorization)
    c = conn()
    results = []
    c.execute("BEGIN IMMEDIATE")
    try:
        for item in request.locations:
            body = item.model_dump_json(by_alias=True, exclude_none=True)
            if item.merchant_location_id:
                row = c.execute(
                    "SELECT location_id, status, body FROM locations WHERE merchant_pk = ? AND merchant_location_id = ?",
                    (merchant, item.merchant_location_id),
                ).fetchone()
                if row is not None:
                    ok = row[2] == body
                    results.append({"location_id": row[0] if ok else "", "merchant_location_id": item.merchant_location_id,
                                    "name": item.name, "status": row[1] if ok else "FAILED", "errors": []})
                    continue
            band = math.floor(item.latitude * 1000)
            types = sum(TYPE_BITS[t] for t in set(item.location_types))
            near = c.execute(
                "SELECT location_id, latitude, longitude FROM locations WHERE merchant_pk = ? AND band BETWEEN ? AND ? "
                "AND longitude BETWEEN ? AND ? AND status IN ('ACTIVE','QUARANTINE') AND (types & ?) != 0",
                (merchant, band - 1, band + 1, item.longitude - 0.01, item.longitude + 0.01, types),
            ).fetchall()
            status = "QUARANTINE" if any(haversine(item.latitude, item.longitude, r[1], r[2]) <= 50 for r in near) else "ACTIVE"
            location_id = str(uuid.uuid4())
            c.execute(
                "INSERT INTO locations (location_id, merchant_pk, merchant_location_id, status, types, latitude, longitude, "
                "band, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (location_id, merchant, item.merchant_location_id, status, types, item.latitude, item.longitude, band, body,
                 int(time.time() * 1000)),
            )
            results.append({"location_id": location_id, "merchant_location_id": item.merchant_location_id,
                            "name": item.name, "status": status, "errors": []})
        c.execute("COMMIT")
    except Exception:
        c.execute("ROLLBACK")
        raise
    return {"locations": results}


# ---- list ------------------------------------------------------------------------------------

COLUMNS = "id, name, slug, parent_id, leaf, sort_order, icon_url, description, is_service, is_digital, status"


def row_to_category(r):
    return {"id": r[0], "name": r[1], "slug": r[2], "parent_id": r[3], "leaf": bool(r[4]), "sort_order": r[5],
            "icon_url": r[6], "description": r[7], "is_service": None if r[8] is None else bool(r[8]),
            "is_digital": None if r[9] is None else bool(r[9]), "status": r[10]}


class CategoryOut(BaseModel):
    id: str
    name: str
    slug: str
    parent_id: Optional[str]
    leaf: bool
    sort_order: Optional[int]
    icon_url: Optional[str]
    description: Optional[str]
    is_service: Optional[bool]
    is_digital: Optional[bool]
    status: str


class PageInfo(BaseModel):
    next_cursor: Optional[str]
    has_next: bool
    total: int


class ListResponse(BaseModel):
    categories: list[CategoryOut]
    pagination: PageInfo


@app.post("/v1/categories/list", response_model=ListResponse)
def list_categories(request: Optional[ListRequest] = None, authorization: Optional[str] = Header(None)):
    authenticate(authorization)
    request = request or ListRequest()
    f = request.filter or Filter()
    limit = min(request.pagination.limit, 1000) if request.pagination else 100
    where, args = [], []
    if f.status:
        where.append("status = ?"); args.append(f.status)
    if f.leaf_only:
        where.append("leaf = 1")
    if f.ids is not None:
        where.append(f"id IN ({','.join('?' * len(f.ids))})" if f.ids else "0"); args.extend(f.ids)
    elif f.parent_id is not None:
        if f.parent_id == "":
            where.append("parent_id IS NULL")
        else:
            where.append("parent_id = ?"); args.append(f.parent_id)
    c = conn()
    total = c.execute(f"SELECT count(*) FROM categories {'WHERE ' + ' AND '.join(where) if where else ''}", args).fetchone()[0]
    page_where, page_args = list(where), list(args)
    cursor = request.pagination.cursor if request.pagination else None
    if cursor:
        try:
            sort_order, last_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        except Exception:
            raise HTTPException(400, "invalid cursor")
        if sort_order is None:
            page_where.append("(sort_order IS NULL AND id > ?)"); page_args.append(last_id)
        else:
            page_where.append("(sort_order > ? OR sort_order IS NULL OR (sort_order = ? AND id > ?))")
            page_args.extend([sort_order, sort_order, last_id])
    rows = c.execute(
        f"SELECT {COLUMNS} FROM categories {'WHERE ' + ' AND '.join(page_where) if page_where else ''} "
        "ORDER BY sort_order IS NULL, sort_order, id LIMIT ?",
        page_args + [limit + 1],
    ).fetchall()
    has_next = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if has_next:
        last = rows[-1]
        next_cursor = base64.urlsafe_b64encode(json.dumps([last[5], last[0]]).encode()).decode().rstrip("=")
    return {"categories": [row_to_category(r) for r in rows],
            "pagination": {"next_cursor": next_cursor, "has_next": has_next, "total": total}}


# ---- search (issue 27) -----------------------------------------------------------------------
# As a Python team would write it on SQLite's R*Tree module: the bounding box of the radius from
# the R*Tree (`peer_rtree`, built by the benchmark beside the locations), the rows joined, the
# distance and the filters computed in Python over the parsed records, sorted, and a page cut out
# by offset.

class Near(Strict):
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)


class Parcel(Strict):
    length: float = Field(gt=0)
    width: float = Field(gt=0)
    height: float = Field(gt=0)
    weight: float = Field(gt=0)


class SearchFilter(Strict):
    location_types: Optional[list[Literal["WAREHOUSE", "PICKUP_POINT", "CLICK_AND_COLLECT"]]] = Field(None, min_length=1)
    pickup_point_type: Optional[Literal["PICKUP_POINT", "POSTAMAT"]] = None
    payment_method: Optional[Literal["ALREADY_PAID", "CARD", "CASH"]] = None
    pickup_services: Optional[list[Literal["FITTING"]]] = Field(None, min_length=1)
    accepts_returns: Optional[bool] = None
    parcel: Optional[Parcel] = None
    open_at: Optional[str] = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d$")


class SearchRequest(Strict):
    near: Near
    radius_m: Optional[int] = Field(None, ge=1, le=50000)
    filter: Optional[SearchFilter] = None
    pagination: Optional[Pagination] = None


WEEKDAYS = ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"]


def is_open(loc, at):
    import datetime
    date, hhmm = at.split("T")
    weekday = WEEKDAYS[datetime.date.fromisoformat(date).weekday()]
    day = next((d for d in loc.get("individual_schedule") or [] if d["date"] == date), None)
    if day is not None and not day["is_works"]:
        return False
    schedule = day["schedule"] if day else next((d["schedule"] for d in loc["working_schedule"] if d["day"] == weekday), None)
    if schedule is None:
        return False
    brk = schedule.get("break")
    in_break = brk is not None and brk.split("-")[0] <= hhmm < brk.split("-")[1]
    return schedule["time_start"] <= hhmm < schedule["time_end"] and not in_break


def search_matches(loc, f):
    if f is None:
        return True
    if f.location_types and not set(f.location_types) & set(loc["location_types"]):
        return False
    if f.pickup_point_type and loc.get("pickup_point_type") != f.pickup_point_type:
        return False
    if f.payment_method and f.payment_method not in (loc.get("payment_methods") or []):
        return False
    if f.pickup_services and not set(f.pickup_services) <= set(loc.get("pickup_services") or []):
        return False
    if f.accepts_returns is not None and loc["is_accepts_returns"] != f.accepts_returns:
        return False
    if f.parcel:
        lim = loc["limits"]
        have = sorted([lim["length"], lim["width"], lim["height"]], reverse=True)
        want = sorted([f.parcel.length, f.parcel.width, f.parcel.height], reverse=True)
        if f.parcel.weight > lim["weight"] or any(w > h for w, h in zip(want, have)):
            return False
    if f.open_at and not is_open(loc, f.open_at):
        return False
    return True


@app.post("/v1/location/search")
def search(request: SearchRequest, authorization: Optional[str] = Header(None)):
    merchant = authenticate(authorization)
    radius = request.radius_m or 5000
    limit = min(request.pagination.limit, 100) if request.pagination else 20
    offset = 0
    if request.pagination and request.pagination.cursor:
        try:
            offset = int(base64.urlsafe_b64decode(request.pagination.cursor + "=" * (-len(request.pagination.cursor) % 4)))
        except Exception:
            raise HTTPException(400, "invalid cursor")
    lat, lon = request.near.latitude, request.near.longitude
    dlat = radius / 111195.0 * 1.01
    dlon = dlat / max(math.cos(math.radians(min(89.9, abs(lat) + dlat))), 1e-6)
    rows = conn().execute(
        "SELECT l.seq, l.location_id, l.merchant_location_id, l.status, l.version, l.created_at, l.updated_at, l.body "
        "FROM peer_rtree r JOIN locations l ON l.seq = r.id "
        "WHERE r.min_lat <= ? AND r.max_lat >= ? AND r.min_lon <= ? AND r.max_lon >= ? "
        "AND l.merchant_pk = ? AND l.status = 'ACTIVE'",
        (lat + dlat, lat - dlat, lon + dlon, lon - dlon, merchant),
    ).fetchall()
    found = []
    for seq, location_id, mlid, status, version, created, updated, body in rows:
        loc = json.loads(body)
        d = round(haversine(lat, lon, loc["latitude"], loc["longitude"]))
        if d <= radius and search_matches(loc, request.filter):
            found.append((d, seq, {"location_id": location_id, "merchant_location_id": mlid, "status": status,
                                   "issue": None, "version": version, "created_at": created, "updated_at": updated, **loc}))
    found.sort(key=lambda t: (t[0], t[1]))
    page = found[offset:offset + limit]
    has_next = len(found) > offset + limit
    cursor = base64.urlsafe_b64encode(str(offset + limit).encode()).decode().rstrip("=") if has_next else None
    return {"results": [{"distance_m": d, "location": record} for d, _, record in page],
            "pagination": {"next_cursor": cursor, "has_next": has_next}}
