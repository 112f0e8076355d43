#!/usr/bin/env python3
"""Merchants' files of real size (issue 29, CONTRACT §16): `storefront locations push` of the same
ROWS generated locations (Russian names, addresses and comments, five working days) written four
ways, side by side in one run:

- `utf8.csv`: `,`-separated UTF-8 (about 50 MB at 100,000 rows);
- `ru-1251.csv`: as a spreadsheet program set to Russian saves it: `;`, decimal commas, ИСТИНА,
  windows-1251 (its encoding detected: the longest way in);
- `pulled.xlsx`: the workbook `pull --format xlsx` writes of those locations (inline strings);
- `calc.xlsx`: the CSV converted by LibreOffice Calc (shared strings), when `soffice` is installed.

For each file, REPS times, medians:
- reading: the push against a port where nothing listens, so it reads and checks the whole file
  (finding a CSV's encoding and delimiter, the streaming first pass of §11) and then stops, nothing
  sent: rows/s of reading, the CLI's CPU and peak RSS (its rusage);
- pushing: the push into an empty database served by `serve --rate-limit 0` (SQLite, release
  build): rows/s over the whole push, the CLI's CPU and peak RSS.

Run it with `scripts/bench --sheets [--rows N] [--reps N]`; prints a markdown table.
"""

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from bench import BIN, free_port, log, scratch_dir, wait_http

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
HEADER = ["merchant_location_id", "location_types", "name", "address_tail", "comment", "latitude", "longitude",
          "limits.length", "limits.width", "limits.height", "limits.weight",
          *[f"working_schedule.{d}" for d in DAYS], "is_accepts_returns"]
COMMENT = ("Въезд со двора, ворота 3; звонить охране за 15 минут до приезда. Погрузка с рампы, "
           "паллеты до 1,2 т, пропуск заказывать заранее. ")


def rows(n):
    for i in range(n):
        yield {
            "merchant_location_id": f"wh-{i}",
            "location_types": "WAREHOUSE",
            "name": f"Склад № {i}",
            "address_tail": f"101000, Россия, Москва, Тверская улица, {i % 300 + 1}",
            "comment": COMMENT + f"Линия {i % 40}.",
            "latitude": round(-60 + (i // 1000) * 0.002, 6),
            "longitude": round(-170 + (i % 1000) * 0.003, 6),
            "limits": (200, 120, 150, 500.5),
            "days": {d: "09:00-21:00 break 13:00-14:00" for d in DAYS[:5]},
        }


def write_csv(path, n, delimiter, encoding, decimal_comma, true_word):
    def number(x):
        text = repr(x) if isinstance(x, float) else str(x)
        return text.replace(".", ",") if decimal_comma else text
    with open(path, "w", newline="", encoding=encoding) as f:
        w = csv.writer(f, delimiter=delimiter)
        w.writerow(HEADER)
        for r in rows(n):
            w.writerow([r["merchant_location_id"], r["location_types"], r["name"], r["address_tail"], r["comment"],
                        number(r["latitude"]), number(r["longitude"]), *[number(x) for x in r["limits"]],
                        *[r["days"].get(d, "") for d in DAYS], true_word])


class Server:
    def __init__(self, db, workdir):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [str(BIN), "--database", f"sqlite://{db}", "serve", "--addr", f"127.0.0.1:{self.port}", "--rate-limit", "0"],
            env=dict(os.environ, STOREFRONT_LOG_FORMAT="json", RUST_LOG="warn"), stdout=subprocess.DEVNULL,
            stderr=open(Path(workdir) / "serve.log", "ab"), start_new_session=True)
        wait_http(self.base + "/readyz")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def new_merchant(db):
    out = subprocess.run([str(BIN), "--database", f"sqlite://{db}", "merchant", "create", "--name", "bench", "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["api_key"]


def run_cli(args, base, key):
    env = dict(os.environ, STOREFRONT_URL=base, STOREFRONT_API_KEY=key)
    t = time.time()
    proc = subprocess.Popen([str(BIN), "locations", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    # wait4 before reading would deadlock on a full pipe: the outputs are short lines.
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.time() - t
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    code = os.waitstatus_to_exitcode(status)
    return code, out, err, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--keep", help="keep the generated files in this folder")
    a = p.parse_args()
    workdir = Path(a.keep or scratch_dir("sheets-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    n = a.rows
    log(f"== writing {n:,} rows four ways into {workdir}")
    files = {}
    files["utf8.csv"] = workdir / "utf8.csv"
    write_csv(files["utf8.csv"], n, ",", "utf-8", False, "TRUE")
    files["ru-1251.csv"] = workdir / "ru-1251.csv"
    write_csv(files["ru-1251.csv"], n, ";", "cp1251", True, "ИСТИНА")

    # The workbook pull writes: the CSV pushed, then pulled.
    db = workdir / "pull.db"
    key = new_merchant(db)
    server = Server(db, workdir)
    try:
        code, out, err, *_ = run_cli(["push", str(files["utf8.csv"])], server.base, key)
        assert code == 0, (out, err)
        files["pulled.xlsx"] = workdir / "pulled.xlsx"
        code, out, err, *_ = run_cli(["pull", "--output", str(files["pulled.xlsx"])], server.base, key)
        assert code == 0, (out, err)
    finally:
        server.stop()
    if shutil.which("soffice"):
        log("== converting the CSV with LibreOffice Calc")
        subprocess.run(["soffice", f"-env:UserInstallation=file://{workdir}/lo-profile", "--headless",
                        "--infilter=CSV:44,34,76,1,,1033,false,true", "--convert-to", "xlsx:Calc MS Excel 2007 XML",
                        "--outdir", str(workdir / "calc"), str(files["utf8.csv"])], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        files["calc.xlsx"] = workdir / "calc.xlsx"
        shutil.move(workdir / "calc/utf8.xlsx", files["calc.xlsx"])

    results = {}
    nowhere = f"http://127.0.0.1:{free_port()}"
    for rep in range(a.reps):
        for name, path in files.items():
            code, out, err, wall, cpu, rss = run_cli(["push", str(path)], nowhere, "sf_nowhere")
            assert code == 2 and "cannot be reached" in err, (name, code, err)
            results.setdefault((name, "read"), []).append((n / wall, cpu, rss))
            log(f"   read  {name:12} rep {rep + 1}: {n / wall:10,.0f} rows/s  cpu {cpu:.2f} s  rss {rss:.1f} MiB")

            db = workdir / f"push-{time.time_ns()}.db"
            key = new_merchant(db)
            server = Server(db, workdir)
            try:
                code, out, err, wall, cpu, rss = run_cli(["push", str(path)], server.base, key)
            finally:
                server.stop()
                for suffix in ("", "-wal", "-shm"):
                    Path(str(db) + suffix).unlink(missing_ok=True)
            assert code == 0 and out.startswith(f"{n} rows: {n} created"), (name, code, out, err)
            results.setdefault((name, "push"), []).append((n / wall, cpu, rss))
            log(f"   push  {name:12} rep {rep + 1}: {n / wall:10,.0f} rows/s  cpu {cpu:.2f} s  rss {rss:.1f} MiB  "
                f"({out.strip()})")

    print()
    print("| file | size MB | reading rows/s | reading CLI CPU s | reading peak RSS MiB | push rows/s | "
          "push CLI CPU s | push peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, path in files.items():
        read, push = results[(name, "read")], results[(name, "push")]
        med = lambda runs, k: statistics.median(r[k] for r in runs)
        print(f"| `{name}` | {path.stat().st_size / 1e6:.1f} | {med(read, 0):,.0f} | {med(read, 1):.2f} | "
              f"{max(r[2] for r in read):.1f} | {med(push, 0):,.0f} | {med(push, 1):.2f} | {max(r[2] for r in push):.1f} |")


if __name__ == "__main__":
    main()
