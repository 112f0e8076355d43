"""The search workloads of the benchmark (issue 27): `search-1k`, `search-1m` (SQLite) and
`search-1m-pg` (PostgreSQL, fsync on, its CPU counted).

A merchant's locations are clustered around the same 20 city centres (a normal spread of 3 km
around each), so the million is a thousand times denser near each buyer than the thousand (about
900 a square kilometre at a centre, some 7 neighbours within 50 m: within CONTRACT §17's 100).
At that density most new locations would be quarantined by a neighbour of a shared type, so after
the load the benchmark approves every one, as an operator would, in one statement. Searches are
made at random points near the centres (a spread of 2 km), radius 5 km, limit 20, with a mix of
filters: none; types; a parcel; open at a time; the rare service (FITTING, 1 location in 20).
"""

import csv
import json
import math
import random
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

CENTRES = [(55.7558, 37.6173), (59.9343, 30.3351), (52.5200, 13.4050), (48.8566, 2.3522), (51.5074, -0.1278),
           (40.4168, -3.7038), (41.9028, 12.4964), (52.2297, 21.0122), (50.0755, 14.4378), (47.4979, 19.0402),
           (48.2082, 16.3738), (59.3293, 18.0686), (60.1699, 24.9384), (55.6761, 12.5683), (53.3498, -6.2603),
           (38.7223, -9.1393), (50.4501, 30.5234), (44.4268, 26.1025), (42.6977, 23.3219), (37.9838, 23.7275)]
SPREAD_M = 3000
DAYS = ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"]


def offset(rng, centre, spread):
    """A point around `centre`, each coordinate's offset normal with deviation `spread` metres."""
    north, east = rng.gauss(0, spread), rng.gauss(0, spread)
    lat = centre[0] + north / 111195.0
    lon = centre[1] + east / (111195.0 * math.cos(math.radians(centre[0])))
    return round(lat, 6), round(lon, 6)


def location(i, rng):
    """The i-th location: a pickup point, a locker, a store or a warehouse, with varied limits,
    payments, schedules (breaks, weekends, dated exceptions)."""
    lat, lon = offset(rng, CENTRES[i % len(CENTRES)], SPREAD_M)
    kind = rng.random()
    opens = rng.choice(["08:00", "09:00", "10:00"])
    week = [{"day": d, "schedule": {"time_start": opens, "time_end": rng.choice(["20:00", "21:00", "24:00"]),
                                    **({"break": "13:00-14:00"} if rng.random() < 0.3 else {})}}
            for d in DAYS if d not in ("SATURDAY", "SUNDAY") or rng.random() < 0.6]
    item = {"merchant_location_id": f"s-{i}", "name": f"Point {i}", "latitude": lat, "longitude": lon,
            "address_tail": "101000, Russia, Moscow, Tverskaya street, 1", "working_schedule": week,
            "is_accepts_returns": rng.random() < 0.6}
    if kind < 0.5:
        item.update(location_types=["PICKUP_POINT"], pickup_point_type="PICKUP_POINT", storage_period_days=7,
                    payment_methods=rng.choice([["ALREADY_PAID", "CARD", "CASH"], ["ALREADY_PAID", "CARD"]]),
                    limits={"length": rng.choice([60, 100, 120]), "width": 60, "height": rng.choice([40, 60]), "weight": 30},
                    individual_schedule=[{"date": "2026-12-31", "schedule": {"time_start": "10:00", "time_end": "16:00"}, "is_works": True},
                                         {"date": "2027-01-01", "schedule": {"time_start": "10:00", "time_end": "16:00"}, "is_works": False}])
        if rng.random() < 0.1:
            item["pickup_services"] = ["FITTING"]
    elif kind < 0.85:
        item.update(location_types=["PICKUP_POINT"], pickup_point_type="POSTAMAT", storage_period_days=3,
                    payment_methods=["ALREADY_PAID"], limits={"length": 60, "width": 40, "height": 40, "weight": 15},
                    working_schedule=[{"day": d, "schedule": {"time_start": "00:00", "time_end": "24:00"}} for d in DAYS])
    elif kind < 0.95:
        item.update(location_types=["WAREHOUSE", "CLICK_AND_COLLECT"], storage_period_days=5, payment_methods=["CARD"],
                    limits={"length": 200, "width": 120, "height": 150, "weight": 500})
    else:
        item.update(location_types=["WAREHOUSE"], limits={"length": 600, "width": 240, "height": 260, "weight": 5000})
    return item


def approve_all_sqlite(db):
    """Every quarantined location approved, and the list's counts made to agree."""
    c = sqlite3.connect(db)
    c.execute("UPDATE locations SET status = 'ACTIVE', approved = 1, quarantined_by = NULL WHERE status = 'QUARANTINE'")
    c.execute("DELETE FROM location_counts")
    c.execute("INSERT INTO location_counts (merchant_pk, status, types, n) "
              "SELECT merchant_pk, status, types, count(*) FROM locations GROUP BY merchant_pk, status, types")
    c.commit()
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()


def load(bench, db, n, workdir):
    """Creates `n` locations through the service into `db` (a SQLite file or a PostgreSQL URL);
    returns the merchant's key."""
    key = json.loads(bench.storefront(db, "merchant", "create", "--name", "search", "--json"))["api_key"]
    server = bench.Server("ours", db, workdir)
    t = time.time()
    try:
        from concurrent.futures import ThreadPoolExecutor

        def batch(start):
            rng = random.Random(start)
            items = [location(i, rng) for i in range(start, min(start + 200, n))]
            answer = bench.post(server.base, "/v1/location/create", key, {"locations": items})
            failed = [r for r in answer["locations"] if r["status"] == "FAILED"]
            assert not failed, failed[:2]
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(batch, range(0, n, 200)))
    finally:
        server.stop()
    bench.log(f"   created {n:,} in {time.time() - t:.0f} s")
    return key


def database(bench, n, workdir):
    """The SQLite database of a merchant with `n` search locations, and a copy for the peer with the
    R*Tree it searches; generated once and kept under target/bench-cache."""
    cache = bench.TOOLS.parent / "bench-cache"
    cache.mkdir(parents=True, exist_ok=True)
    db, peer, meta = cache / f"search-{n}.db", cache / f"search-{n}.peer.db", cache / f"search-{n}.json"
    if not (meta.exists() and db.exists() and peer.exists()):
        for path in (db, peer):
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
        bench.log(f"== generating a merchant with {n:,} search locations into {db}")
        key = load(bench, db, n, workdir)
        approve_all_sqlite(db)
        shutil.copy(db, peer)
        c = sqlite3.connect(peer)
        c.execute("CREATE VIRTUAL TABLE peer_rtree USING rtree(id, min_lat, max_lat, min_lon, max_lon)")
        c.execute("INSERT INTO peer_rtree SELECT seq, latitude, latitude, longitude, longitude FROM locations")
        c.commit()
        c.close()
        meta.write_text(json.dumps({"api_key": key}))
    return bench.migrated(db), peer, json.loads(meta.read_text())["api_key"]


def storefront_key(bench, db):
    """A storefront key of the search merchant of `db` (SQLite file or PostgreSQL URL), issued by
    the operator's command: the key a checkout page's searches are made with."""
    merchant = json.loads(bench.storefront(db, "merchant", "list", "--json").splitlines()[0])["merchant_id"]
    issued = bench.storefront(db, "key", "issue", "--merchant", merchant, "--scope", "storefront", "--json")
    return json.loads(issued)["api_key"]


COLUMNS = ("seq, location_id, merchant_location_id, status, types, latitude, longitude, body, created_at, "
           "version, updated_at, quarantined_by, approved, cell, flags, fit_a, fit_b, fit_c, fit_w, hours")


def postgres_database(bench, pg, sqlite_db, workdir):
    """A PostgreSQL database holding the same merchant and locations as the SQLite one, copied row
    by row (COPY) rather than created again through the service: loading a million through create
    took 400 s on SQLite and longer on PostgreSQL, and the rows are the ones the service wrote."""
    db = pg.fresh("search")
    bench.log("== copying the search locations into PostgreSQL")
    t = time.time()
    key = json.loads(bench.storefront(db, "merchant", "create", "--name", "search", "--json"))["api_key"]
    name = db.rsplit("/", 1)[1]
    psql = [f"{pg.bin}/psql", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", "-d", name]
    c = sqlite3.connect(sqlite_db)
    rows = c.execute(f"SELECT {COLUMNS} FROM locations")
    copy = subprocess.Popen([*psql, "-c", f"COPY locations (merchant_pk, {COLUMNS}) FROM STDIN WITH (FORMAT csv)"],
                            stdin=subprocess.PIPE, text=True)
    out = csv.writer(copy.stdin)
    names = [n.strip() for n in COLUMNS.split(",")]
    approved, hours = names.index("approved"), names.index("hours")
    for row in rows:
        row = list(row)
        row[approved] = "t" if row[approved] else "f"
        row[hours] = "\\x" + bytes(row[hours]).hex()
        out.writerow([1, *row])
    copy.stdin.close()
    assert copy.wait() == 0
    c.close()
    subprocess.run([*psql, "-c", "SELECT setval(pg_get_serial_sequence('locations', 'seq'), max(seq)) FROM locations; "
                    "DELETE FROM location_counts; INSERT INTO location_counts (merchant_pk, status, types, n) "
                    "SELECT merchant_pk, status, types, count(*) FROM locations GROUP BY merchant_pk, status, types;"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*psql, "-c", "VACUUM ANALYZE locations"], check=True)
    # The copy and the vacuum leave dirty pages that the next timed checkpoint (within five
    # minutes, spread over most of them) would write while the runs go on; a deployment serving
    # searches has no such load behind it, so they are written now, before any run.
    subprocess.run([*psql, "-c", "CHECKPOINT"], check=True)
    bench.log(f"   copied in {time.time() - t:.0f} s")
    return db, key


def bodies(workdir, name, count=400):
    """`count` search bodies, one a line: a point near a centre and one of the filter mix."""
    rng = random.Random(27)
    mix = [None, {"location_types": ["PICKUP_POINT"]},
           {"parcel": {"length": 50, "width": 30, "height": 20, "weight": 3}},
           {"open_at": "2026-11-28T10:30"}, {"pickup_services": ["FITTING"]}]
    path = Path(workdir) / f"search-bodies-{name}.txt"
    with open(path, "w") as f:
        for i in range(count):
            lat, lon = offset(rng, rng.choice(CENTRES), 2000)
            body = {"near": {"latitude": lat, "longitude": lon}, "radius_m": 5000, "pagination": {"limit": 20}}
            if mix[i % len(mix)]:
                body["filter"] = mix[i % len(mix)]
            f.write(json.dumps(body) + "\n")
    return path


def answer_page(bench, db, key, body_file, workdir, name):
    """An answer of ours to the first body, for the ceiling to serve (a page of the same size)."""
    server = bench.Server("ours", db, workdir)
    try:
        first = json.loads(Path(body_file).read_text().splitlines()[0])
        page = bench.post(server.base, "/v1/location/search", key, first)
        bench.log(f"   {name}: the ceiling serves an answer of {len(page['results'])} results")
    finally:
        server.stop()
    path = Path(workdir) / f"page-{name}.json"
    path.write_text(json.dumps(page, separators=(",", ":")))
    return path
