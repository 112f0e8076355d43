"""What the benchmarks send: generated locations and taxonomies, the file a push reads, copies of
the databases, and list bodies at real cursors."""

import json
import random
import shutil
import time
from pathlib import Path

from bench_procs import post

def generated_taxonomy(path, n_leaves):
    """10 roots > 100 departments each > leaves: about n_leaves categories, some sort_order null."""
    rnd = random.Random(42)
    per_dept = max(1, n_leaves // 1000)
    with open(path, "w") as f:
        f.write("[\n")
        first = True
        def emit(c):
            nonlocal first
            f.write(("" if first else ",\n") + json.dumps(c, separators=(",", ":")))
            first = False
        for r in range(10):
            emit({"id": f"r{r}", "name": f"Root {r}", "slug": f"root-{r}", "parent_id": None, "leaf": False,
                  "sort_order": r, "status": "active"})
            for d in range(100):
                dept = f"r{r}d{d}"
                emit({"id": dept, "name": f"Department {r}.{d}", "slug": f"department-{r}-{d}", "parent_id": f"r{r}",
                      "leaf": False, "sort_order": d, "status": "active" if d % 17 else "disabled"})
                for l in range(per_dept):
                    emit({"id": f"{dept}l{l}", "name": f"Category {r}.{d}.{l}", "slug": f"category-{r}-{d}-{l}",
                          "parent_id": dept, "leaf": True, "sort_order": None if rnd.random() < 0.05 else rnd.randrange(1000),
                          "description": "A generated category for the benchmark" if l % 10 == 0 else None,
                          "is_service": l % 50 == 0 or None, "is_digital": l % 70 == 0 or None,
                          "status": "disabled" if l % 23 == 0 else "active"})
        f.write("\n]\n")


def location(i):
    """The i-th generated location: a warehouse on a grid 200 m apart (no quarantine)."""
    return {"merchant_location_id": f"gen-{i}", "location_types": ["WAREHOUSE"], "name": f"Warehouse {i}",
            "address_tail": "101000, Russia, Moscow, Tverskaya street, 1",
            "latitude": round(-60 + (i // 1000) * 0.002, 6), "longitude": round(-170 + (i % 1000) * 0.003, 6),
            "limits": {"length": 200, "width": 120, "height": 150, "weight": 500},
            "working_schedule": [{"day": d, "schedule": {"time_start": "09:00", "time_end": "21:00", "break": "13:00-14:00"}}
                                 for d in ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY")],
            "is_accepts_returns": True}


PUSH_ROWS = 20_000
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def push_file(workdir):
    """PUSH_ROWS generated locations (those of `location`) as the CSV that `locations push` reads."""
    import csv
    path = workdir / "push.csv"
    header = ["merchant_location_id", "location_types", "name", "address_tail", "latitude", "longitude",
              "limits.length", "limits.width", "limits.height", "limits.weight",
              *[f"working_schedule.{d}" for d in DAYS], "is_accepts_returns"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for i in range(PUSH_ROWS):
            loc = location(i)
            days = {d["day"].lower(): f"{d['schedule']['time_start']}-{d['schedule']['time_end']} break {d['schedule']['break']}"
                    for d in loc["working_schedule"]}
            w.writerow([f"push-{i}", "; ".join(loc["location_types"]), loc["name"], loc["address_tail"],
                        loc["latitude"], loc["longitude"], *[loc["limits"][k] for k in ("length", "width", "height", "weight")],
                        *[days.get(d, "") for d in DAYS], "true"])
    return path


def fresh_copy(template, workdir, tag):
    db = workdir / f"{tag}-{time.time_ns()}.db"
    shutil.copy(template, db)
    wal = Path(str(template) + "-wal")
    if wal.exists():
        shutil.copy(wal, str(db) + "-wal")
    return db


def collect_list_bodies(base, key, workdir, name, positions=200, path="/v1/categories/list"):
    """First page plus pages at random positions, reached by walking real cursors."""
    cursors, body = [None], {"pagination": {"limit": 1000}}
    while True:
        page = post(base, path, key, body)
        nxt = page["pagination"]["next_cursor"]
        if not nxt:
            break
        cursors.append(nxt)
        body = {"pagination": {"limit": 1000, "cursor": nxt}}
    # Positions inside the pages too: step in with limit 100 from a few of those cursors.
    more = []
    for c in random.Random(7).sample(cursors, min(len(cursors), positions // 4)):
        body = {"pagination": {"limit": 100, **({"cursor": c} if c else {})}}
        for _ in range(3):
            page = post(base, path, key, body)
            nxt = page["pagination"]["next_cursor"]
            if not nxt:
                break
            more.append(nxt)
            body = {"pagination": {"limit": 100, "cursor": nxt}}
    pool = cursors + more
    chosen = random.Random(11).sample(pool, min(len(pool), positions))
    path = workdir / f"bodies-{name}.txt"
    with open(path, "w") as f:
        for c in chosen:
            f.write(json.dumps({"pagination": {"limit": 100, **({"cursor": c} if c else {})}}) + "\n")
    return path
