"""The databases and request bodies the benchmark's workloads run on: templates made through
the service's own command line, the cached location and search databases, each server's pages."""

import json
import shutil
import time
from pathlib import Path

import bench_servers
import bench_settings as settings
import search_bench
from bench_data import collect_list_bodies, fresh_copy, generated_taxonomy, location
from bench_measure import ON_PG_MILLION
from bench_procs import log, post
from bench_servers import Server, migrated, storefront
from bench_settings import CHANGE_LOCATIONS, GOOGLE, TOOLS


def prepare(workdir, big_leaves, workloads):
    log("== preparing databases")
    dbs = {}
    needed = {"create": "create", "google": "list-google", "big": "list-1m"}
    if "push" in workloads and "create" not in workloads:
        workloads = [*workloads, "create"]  # push starts from create's empty template
    # The cold start is measured on the Google taxonomy, whatever the workloads.
    for name, taxonomy in [("create", None), ("google", GOOGLE), ("big", "big")]:
        if name != "google" and needed[name] not in workloads:
            continue
        db = workdir / f"{name}.template.db"
        issued = json.loads(storefront(db, "merchant", "create", "--name", "bench", "--json"))
        if taxonomy == "big":
            path = workdir / "big-taxonomy.json"
            generated_taxonomy(path, big_leaves)
            t = time.time()
            storefront(db, "categories", "import", str(path))
            log(f"   imported the generated taxonomy in {time.time() - t:.1f} s")
        elif taxonomy:
            storefront(db, "categories", "import", str(taxonomy))
        # Serve it once, so the template carries its cursor secret: cursors collected on one copy
        # are then valid on every copy.
        Server("ours", db, workdir).stop()
        dbs[name] = (db, issued["api_key"])
    if settings.BASE_BIN and "create" in workloads:
        # The earlier build's own schema: it must not pay for (or miss) what ours migrates in.
        db = workdir / "create.base.template.db"
        issued = json.loads(storefront(db, "merchant", "create", "--name", "bench", "--json", binary=settings.BASE_BIN))
        Server("base", db, workdir).stop()
        dbs["create.base"] = (db, issued["api_key"])
    # The peer's own index for its ORDER BY (a team would add one).
    for name in [n for n in ("create", "google") if n in dbs]:
        peer_db = workdir / f"{name}.peer.template.db"
        shutil.copy(dbs[name][0], peer_db)
        import sqlite3
        c = sqlite3.connect(peer_db)
        c.execute("CREATE INDEX IF NOT EXISTS peer_categories_order ON categories (sort_order IS NULL, sort_order, id)")
        c.execute("CREATE INDEX IF NOT EXISTS peer_categories_parent ON categories (parent_id)")
        # Its own neighbour search by latitude band (ours finds neighbours on the search index).
        if "band" not in {row[1] for row in c.execute("PRAGMA table_info(locations)")}:
            c.execute("ALTER TABLE locations ADD COLUMN band INTEGER NOT NULL DEFAULT 0")
        c.execute("CREATE INDEX IF NOT EXISTS peer_locations_nearby ON locations (merchant_pk, band, longitude)")
        c.commit()
        c.close()
        dbs[name + ".peer"] = (peer_db, dbs[name][1])
    return dbs



def location_database(n):
    """A database whose merchant has `n` locations, created through the service itself; generated
    once and kept under target/bench-cache (a million takes a few minutes)."""
    cache = TOOLS.parent / "bench-cache"
    cache.mkdir(parents=True, exist_ok=True)
    db, meta = cache / f"locations-{n}.db", cache / f"locations-{n}.json"
    if meta.exists() and db.exists():
        return migrated(db), json.loads(meta.read_text())["api_key"]
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    log(f"== generating a merchant with {n:,} locations into {db}")
    key = json.loads(storefront(db, "merchant", "create", "--name", "bench", "--json"))["api_key"]
    server = Server("ours", db, cache)
    t = time.time()
    try:
        from concurrent.futures import ThreadPoolExecutor
        def batch(start):
            items = [location(i) for i in range(start, min(start + 200, n))]
            answer = post(server.base, "/v1/location/create", key, {"locations": items})
            assert all(r["status"] == "ACTIVE" for r in answer["locations"]), answer
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(batch, range(0, n, 200)))
    finally:
        server.stop()
    log(f"   created in {time.time() - t:.0f} s")
    meta.write_text(json.dumps({"api_key": key}))
    return migrated(db), key



def workload_data(cfg, workdir, servers, workloads, pg):
    """What the workloads asked for run on: `dbs` (a name to its database and key), `bodies`
    ((server, workload) to a file of request bodies, one a line) and `page_files` (a workload to
    the page the ceiling serves)."""
    dbs = prepare(workdir, cfg.big, workloads)
    bodies, page_files = {}, {}
    if ("update" in workloads or "archive" in workloads) and "ours" in servers:
        dbs["changes"] = location_database(CHANGE_LOCATIONS)
    for workload, n in [("locations-1k", 1000), ("locations-1m", cfg.locations)]:
        if workload in workloads and "ours" in servers:
            dbs[workload] = location_database(n)
            server = Server("ours", dbs[workload][0], workdir)
            try:
                # The ceiling serves the first page of ours, of the same size.
                page = post(server.base, "/v1/location/list", dbs[workload][1], {"pagination": {"limit": 100}})
                page_files[workload] = workdir / f"page-{workload}.json"
                page_files[workload].write_text(json.dumps(page, separators=(",", ":")))
                bodies[("ours", workload)] = collect_list_bodies(
                    server.base, dbs[workload][1], workdir, workload, path="/v1/location/list")
            finally:
                server.stop()
    for workload, n in [("search-1k", 1000), ("search-1m", cfg.locations)]:
        if workload in workloads or (workload == "search-1m" and any(w.startswith(("search-1m-", "locations-1m-pg"))
                                                                     for w in workloads)):
            db, peer, key = search_bench.database(bench_servers, n, workdir)
            dbs[workload], dbs[workload + ".peer"] = (db, key), (peer, key)
            bodies[("ours", workload)] = search_bench.bodies(workdir, workload)
            page_files[workload] = search_bench.answer_page(bench_servers, db, key, bodies[("ours", workload)],
                                                            workdir, workload)
    if any(w.startswith(ON_PG_MILLION) for w in workloads):
        dbs["search-1m-pg"] = search_bench.postgres_database(bench_servers, pg, dbs["search-1m"][0], workdir)
        bodies[("ours", "search-1m-pg")] = bodies[("ours", "search-1m")]
    # Location lists on PostgreSQL: the search's million, of three type sets, so that a page
    # without a filter merges three ranges of the index.
    if "locations-1m-pg" in workloads and "ours" in servers:
        dbs["locations-1m-pg"] = dbs["search-1m-pg"]
        server = Server("ours", dbs["locations-1m-pg"][0], workdir)
        try:
            bodies[("ours", "locations-1m-pg")] = collect_list_bodies(
                server.base, dbs["locations-1m-pg"][1], workdir, "locations-1m-pg", path="/v1/location/list")
        finally:
            server.stop()
    # The buyers' searches: the same questions with a storefront key (the key a checkout page has).
    for workload, on in [("search-1m-sf", "search-1m"), ("search-1m-pg-sf", "search-1m-pg")]:
        if workload in workloads:
            db = dbs[on][0]
            dbs[workload] = (db, search_bench.storefront_key(bench_servers, db))
            bodies[("ours", workload)], page_files[workload] = bodies[("ours", on)], page_files.get("search-1m")
    # The ceiling serves the very page ours serves first; bodies are collected from each server.
    for workload, name in [("list-google", "google"), ("list-1m", "big")]:
        if workload not in workloads:
            continue
        db = fresh_copy(dbs[name][0], workdir, "collect")
        server = Server("ours", db, workdir)
        try:
            key = dbs[name][1]
            page = post(server.base, "/v1/categories/list", key, {"pagination": {"limit": 100}})
            page_files[workload] = workdir / f"page-{name}.json"
            page_files[workload].write_text(json.dumps(page, separators=(",", ":")))
            bodies[("ours", workload)] = collect_list_bodies(server.base, key, workdir, name)
        finally:
            server.stop()
        if "peer" in servers and workload == "list-google":
            db = fresh_copy(dbs["google.peer"][0], workdir, "collect-peer")
            server = Server("peer", db, workdir)
            try:
                bodies[("peer", workload)] = collect_list_bodies(server.base, dbs["google"][1], workdir, "peer-google")
            finally:
                server.stop()
    return dbs, bodies, page_files
