#!/usr/bin/env python3
"""Generates assets/demo-locations.json: the demo merchant's delivery locations, which
`storefront serve --demo` creates (through the create path, so every one is valid) on an empty
database, so that a newcomer's first search finds something.

About 300 points around two cities (Moscow and Saint Petersburg): pickup points, parcel lockers
(POSTAMAT), warehouses with click-and-collect, with varied limits, payment methods, fitting,
returns, weekly schedules (breaks, weekends off, round the clock) and dated exceptions
(holidays closed, short days). Deterministic: the same file every run.
Run: python3 scripts/gen-demo-locations.py > assets/demo-locations.json
"""
import json
import math
import random

CITIES = [
    # name, postal code, centre, how many, streets
    ("Moscow", "101000", (55.7558, 37.6173), 180,
     ["Tverskaya street", "Arbat street", "Myasnitskaya street", "Bolshaya Ordynka street",
      "Leninsky avenue", "Prospekt Mira", "Novy Arbat avenue", "Pokrovka street", "Sretenka street",
      "Lesnaya street", "Profsoyuznaya street", "Butyrskaya street"]),
    ("Saint Petersburg", "190000", (59.9343, 30.3351), 120,
     ["Nevsky avenue", "Liteyny avenue", "Sadovaya street", "Gorokhovaya street", "Moskovsky avenue",
      "Bolshoy avenue", "Kamennoostrovsky avenue", "Ligovsky avenue", "Zagorodny avenue"]),
]
WEEKDAYS = ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"]
EARTH_RADIUS_M = 6371008.8


def haversine(a, b):
    (la1, lo1), (la2, lo2) = [(math.radians(x), math.radians(y)) for x, y in (a, b)]
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def day(start, end, lunch=None):
    return {"time_start": start, "time_end": end, **({"break": lunch} if lunch else {})}


def schedule(rng, kind):
    """A weekly schedule and its dated exceptions."""
    if kind == "locker":
        week = [{"day": d, "schedule": day("00:00", "24:00")} for d in WEEKDAYS]
        dated = []
    else:
        opens, closes = rng.choice([("08:00", "20:00"), ("09:00", "21:00"), ("10:00", "22:00"), ("09:00", "18:00")])
        lunch = rng.choice([None, None, "13:00-14:00", "14:00-14:30"])
        days = WEEKDAYS if rng.random() < 0.6 else WEEKDAYS[:6] if rng.random() < 0.6 else WEEKDAYS[:5]
        week = []
        for d in days:
            if d in ("SATURDAY", "SUNDAY"):
                week.append({"day": d, "schedule": day("10:00", "18:00")})
            else:
                week.append({"day": d, "schedule": day(opens, closes, lunch)})
        dated = [
            {"date": "2026-12-31", "schedule": day("10:00", "16:00"), "is_works": True},
            {"date": "2027-01-01", "schedule": day("10:00", "18:00"), "is_works": False},
        ]
        if rng.random() < 0.3:
            dated.insert(0, {"date": "2026-11-30", "schedule": day("12:00", "20:00"), "is_works": True})
    return week, dated


def location(rng, n, city, postal, street, point):
    roll = rng.random()
    lat, lon = round(point[0], 6), round(point[1], 6)
    address = f"{postal}, Russia, {city}, {street}, {rng.randint(1, 120)}"
    if roll < 0.45:
        week, dated = schedule(rng, "shop")
        payments = rng.choice([["ALREADY_PAID", "CARD", "CASH"], ["ALREADY_PAID", "CARD"], ["CARD", "CASH"]])
        item = {
            "merchant_location_id": f"pvz-{n:04d}",
            "location_types": ["PICKUP_POINT"],
            "name": f"Pickup point, {street}",
            "address_tail": address,
            "pickup_point_type": "PICKUP_POINT",
            "payment_methods": payments,
            "storage_period_days": rng.choice([5, 7, 14]),
            "limits": {"length": 120, "width": 80, "height": 80, "weight": rng.choice([25, 30, 50])},
            "instruction": "Entrance from the courtyard; show the order code at the desk.",
            "working_schedule": week,
            "is_accepts_returns": rng.random() < 0.8,
        }
        if rng.random() < 0.35:
            item["pickup_services"] = ["FITTING"]
    elif roll < 0.8:
        week, dated = schedule(rng, "locker")
        item = {
            "merchant_location_id": f"locker-{n:04d}",
            "location_types": ["PICKUP_POINT"],
            "name": f"Parcel locker, {street}",
            "address_tail": address,
            "pickup_point_type": "POSTAMAT",
            "payment_methods": ["ALREADY_PAID", "CARD"] if rng.random() < 0.5 else ["ALREADY_PAID"],
            "storage_period_days": 3,
            "limits": {"length": 60, "width": 40, "height": rng.choice([30, 40]), "weight": 15},
            "instruction": "Open the locker with the code from the text message.",
            "working_schedule": week,
            "is_accepts_returns": False,
        }
    elif roll < 0.93:
        week, dated = schedule(rng, "shop")
        item = {
            "merchant_location_id": f"shop-{n:04d}",
            "location_types": ["WAREHOUSE", "CLICK_AND_COLLECT"],
            "name": f"Store and click & collect, {street}",
            "address_tail": address,
            "payment_methods": ["ALREADY_PAID", "CARD", "CASH"],
            "storage_period_days": 7,
            "pickup_services": ["FITTING"],
            "limits": {"length": 200, "width": 120, "height": 150, "weight": 300},
            "working_schedule": week,
            "is_accepts_returns": True,
        }
    else:
        week, _ = schedule(rng, "shop")
        dated = []
        item = {
            "merchant_location_id": f"wh-{n:04d}",
            "location_types": ["WAREHOUSE"],
            "name": f"Warehouse, {street}",
            "address_tail": address,
            "limits": {"length": 600, "width": 240, "height": 260, "weight": 5000},
            "working_schedule": week,
            "is_accepts_returns": True,
        }
    item["latitude"], item["longitude"] = lat, lon
    if dated:
        item["individual_schedule"] = dated
    return item


def main():
    rng = random.Random(20261125)
    items, placed, n = [], [], 0
    for city, postal, centre, count, streets in CITIES:
        made = 0
        while made < count:
            # Denser towards the centre, out to about 12 km.
            distance = abs(rng.gauss(0, 4000))
            if distance > 12000:
                continue
            bearing = rng.uniform(0, 2 * math.pi)
            lat = centre[0] + distance * math.cos(bearing) / 111195.0
            lon = centre[1] + distance * math.sin(bearing) / (111195.0 * math.cos(math.radians(centre[0])))
            # Far enough apart that none is quarantined (CONTRACT §4.5: 50 m).
            if any(haversine((lat, lon), p) < 80 for p in placed):
                continue
            placed.append((lat, lon))
            n += 1
            made += 1
            items.append(location(rng, n, city, postal, rng.choice(streets), (lat, lon)))
    json.dump({"locations": items}, fp=__import__("sys").stdout, ensure_ascii=False, indent=None, separators=(",", ":"))
    print()


if __name__ == "__main__":
    main()
