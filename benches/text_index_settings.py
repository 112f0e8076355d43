#!/usr/bin/env python3
"""What the text index of the location list costs a written row on SQLite, under FTS5's settings:
rows like a location's (its folded name and id, three merchants) written in transactions of
BATCH rows into a plain table alone, then beside an FTS5 trigram table as
`migrations/sqlite/0014_location_text.sql` makes it and as some of FTS5's other settings would.
Python's own SQLite (not the service's bundled one): the figures compare settings, they do not
predict the service's creates.

    python3 benches/text_index_settings.py [BATCH]   (default 200; ROWS=60000)

Prints µs a row and the database's bytes for each.
"""
import os
import random
import sqlite3
import sys
import tempfile
import time

BATCH = int(sys.argv[1]) if len(sys.argv) > 1 else 200
ROWS = int(os.environ.get("ROWS", "60000"))
WORDS = ["pickup", "point", "warehouse", "locker", "store", "market", "central", "north", "south",
         "east", "west", "plaza", "station", "mall", "depot", "hub", "express", "city", "park",
         "avenue", "street", "square"]
AS_BUILT = ("CREATE VIRTUAL TABLE location_text USING fts5(m, t, tokenize = 'trigram case_sensitive 1', "
            "detail = column, columnsize = 0{})")


def rows():
    random.seed(1)
    for seq in range(1, ROWS + 1):
        name = " ".join(random.choice(WORDS) for _ in range(3)) + f" {random.randint(1, 9999)}"
        yield seq, f"#{1 + seq % 3}#", f"{name} loc-{seq:08d}".lower()


def run(label, ddl, settings=()):
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "text.db")
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode=wal")
        db.execute("PRAGMA synchronous=normal")
        db.execute("CREATE TABLE locations(seq INTEGER PRIMARY KEY, merchant INT, name TEXT, record TEXT)")
        if ddl:
            db.execute(ddl)
        for setting in settings:
            db.execute(setting)
        all_rows = list(rows())
        start = time.perf_counter()
        for i in range(0, len(all_rows), BATCH):
            batch = all_rows[i:i + BATCH]
            db.execute("BEGIN")
            db.executemany("INSERT INTO locations VALUES (?, 1, ?, ?)", [(s, t, "x" * 300) for s, _, t in batch])
            if ddl:
                db.executemany("INSERT INTO location_text (rowid, m, t) VALUES (?, ?, ?)", batch)
            db.execute("COMMIT")
        seconds = time.perf_counter() - start
        size = sum(os.path.getsize(path + suffix) for suffix in ("", "-wal") if os.path.exists(path + suffix))
        db.close()
    print(f"{label:44s} {seconds / ROWS * 1e6:6.2f} µs a row  {size / 1e6:6.1f} MB", flush=True)


def setting(name, value):
    return f"INSERT INTO location_text (location_text, rank) VALUES ('{name}', {value})"


print(f"SQLite {sqlite3.sqlite_version}, {ROWS} rows in transactions of {BATCH}")
run("no text index", None)
run("the text index as built", AS_BUILT.format(""))
run("automerge 16, crisismerge 64", AS_BUILT.format(""), [setting("automerge", 16), setting("crisismerge", 64)])
run("detail=none (the merchant's column not told)", AS_BUILT.format("").replace("detail = column", "detail = none"))
run("contentless (content='')", AS_BUILT.format(", content = ''"))
