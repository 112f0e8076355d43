"""Runs every shell example of README.md, in order, as a new user would, and checks each answer
shown against the one the service gives.

The rules the README is written to (CONTRIBUTING.md says them too):
- Every ```sh block runs, in one bash session (variables, background jobs and the working
  directory carry over), in a fresh directory holding links to the repository's `examples/` and
  `data/`, with `storefront` on PATH (the binary given).
- A ```json or ```text block right after it (nothing but blank lines between) is what the
  block prints, stdout and stderr together. `…` stands for anything; in JSON, a string with `…`
  in it stands for any string, and spaces outside strings do not matter.
- A block preceded by `<!-- readme-test: skip REASON -->` is not run; the README says why beside
  it (a PostgreSQL server, a cluster).
- A line that starts the service (`cargo run --release -- serve …` or `storefront serve …`) is
  run by this script in the background, as the README's other terminal, after stopping the
  service it started before; `scripts/test` (which runs this) is not run again.
- `NAME=value` where the value holds `…` is a placeholder for what the user copies from what
  `serve --demo` printed: KEY and STOREFRONT_KEY its keys, MERCHANT its merchant's id (the
  README captures every other value from an earlier answer itself).
- Ports 8080 (the service) and 9000 (the receiver) are replaced by free ones, so that a run
  never meets another service on this machine (and STOREFRONT_URL, push's and pull's default
  address, names the service's).

Usage: python3 scripts/readme/examples.py path/to/storefront [README.md]
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BLOCK_SECONDS = 90
SERVE = re.compile(r"^\s*(?:cargo run --release -- |storefront )serve\b([^#&]*)&?\s*(?:#.*)?$")
ASSIGN = re.compile(r"^(\s*(?:export\s+)?)([A-Z_]+)=(\S*…\S*)(.*)$")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def blocks(text):
    """(line, language, body, directive) of every fenced block, in order."""
    out, lines, i, directive = [], text.split("\n"), 0, None
    while i < len(lines):
        line = lines[i]
        m = re.match(r"<!-- readme-test: (.*) -->", line.strip())
        if m:
            directive = m.group(1)
        elif line.startswith("```"):
            lang, start, body = line[3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((start, lang, "\n".join(body), directive))
            directive = None
        elif line.strip():
            directive = None if not line.startswith("<!--") else directive
        i += 1
    return out


def followed(text, blocks_):
    """Pairs each ```sh block with the answer block right after it, if any."""
    lines = text.split("\n")
    pairs = []
    for n, (start, lang, body, directive) in enumerate(blocks_):
        if lang != "sh":
            continue
        answer = None
        if n + 1 < len(blocks_):
            nstart, nlang, nbody, _ = blocks_[n + 1]
            end = start + body.count("\n") + 1  # the closing fence's index
            between = lines[end + 1 : nstart - 1]
            if nlang in ("json", "text") and all(not x.strip() for x in between):
                answer = (nlang, nbody)
        pairs.append((start, body, directive, answer))
    return pairs


def squeeze_json(text):
    """The text without whitespace outside JSON strings."""
    out, in_string, escaped = [], False, False
    for ch in text:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif not ch.isspace():
            out.append(ch)
    return "".join(out)


def pattern(lang, shown):
    if lang == "json":
        parts = re.split(r'("(?:[^"\\]|\\.)*")', squeeze_json(shown))
        regex = ""
        for part in parts:
            if part.startswith('"') and "…" in part:
                regex += r'"(?:[^"\\]|\\.)*"'
            else:
                regex += ".*?".join(re.escape(x) for x in part.split("…"))
        return re.compile(regex, re.S)
    words = " ".join(shown.split())
    return re.compile(".*?".join(re.escape(x) for x in words.split("…")), re.S)


def matches(lang, shown, printed):
    actual = squeeze_json(printed) if lang == "json" else " ".join(printed.split())
    return pattern(lang, shown).fullmatch(actual) is not None


class Session:
    def __init__(self, binary, work):
        self.work, self.binary = work, binary
        self.server, self.values, self.n = None, {}, 0
        self.ports = {"8080": str(free_port()), "9000": str(free_port())}
        bindir = work / ".bin"
        bindir.mkdir()
        (bindir / "storefront").symlink_to(binary)
        env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", HOME=str(work))
        env["STOREFRONT_URL"] = f"http://127.0.0.1:{self.ports['8080']}"  # push's and pull's default, moved
        env.pop("STOREFRONT_API_KEY", None)
        env.pop("STOREFRONT_DATABASE", None)
        self.env = env
        self.bash = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, cwd=work, env=env,
            text=True, start_new_session=True,
        )

    def ported(self, text):
        for fixed, free in self.ports.items():
            text = re.sub(rf"\b{fixed}\b", free, text)
        return text

    def serve(self, args, line):
        self.stop_server()
        args = args.split()
        if "--addr" not in args:
            args += ["--addr", f"127.0.0.1:{self.ports['8080']}"]
        out = open(self.work / "serve.out", "w")
        self.server = subprocess.Popen(
            [str(self.binary), "--log-format", "json", "serve", *args], cwd=self.work, env=self.env,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while "is listening on" not in (self.work / "serve.out").read_text():
            if self.server.poll() is not None or time.monotonic() > deadline:
                fail(line, "the service did not start:\n" + (self.work / "serve.out").read_text())
            time.sleep(0.05)
        printed = (self.work / "serve.out").read_text()
        m = re.search(r"merchant_id ([0-9a-f-]{36})", printed)
        if m:
            self.values["MERCHANT"] = m.group(1)
        keys = re.findall(r"^\s+(sf_\S+)$", printed, re.M)
        if len(keys) >= 2:
            self.values["KEY"], self.values["STOREFRONT_KEY"] = keys[0], keys[1]

    def stop_server(self):
        if self.server and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            self.server.wait(timeout=40)
        self.server = None

    def script(self, line, body):
        lines = []
        for text in body.split("\n"):
            m = SERVE.match(text)
            if m:
                self.serve(self.ported(m.group(1)), line)
                continue
            if text.strip() == "scripts/test" or text.strip().startswith("scripts/test "):
                continue
            a = ASSIGN.match(text)
            if a:
                name = a.group(2)
                if name not in self.values:
                    fail(line, f"{name}=… names nothing printed so far (known: {sorted(self.values)})")
                text = f"{a.group(1)}{name}='{self.values[name]}'{a.group(4)}"
            lines.append(text.replace("cargo run --release -- ", "storefront "))
        return self.ported("\n".join(lines)) if any(x.strip() for x in lines) else ":"

    def run(self, line, body):
        self.n += 1
        out, rc = self.work / f".out.{self.n}", self.work / f".rc.{self.n}"
        script = self.script(line, body)
        self.bash.stdin.write(f"{{\n{script}\n}} >{out} 2>&1 </dev/null\necho $? >{rc}\n")
        self.bash.stdin.flush()
        deadline = time.monotonic() + BLOCK_SECONDS
        while not rc.exists() or not rc.read_text().strip():
            if self.bash.poll() is not None or time.monotonic() > deadline:
                fail(line, "the block did not end:\n" + (out.read_text() if out.exists() else ""))
            time.sleep(0.05)
        printed = out.read_text()
        return int(rc.read_text()), printed

    def close(self):
        self.stop_server()
        try:  # the session and what it left running in the background (the receivers)
            os.killpg(self.bash.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def fail(line, why):
    raise SystemExit(f"README.md:{line}: {why}")


def main():
    binary = Path(sys.argv[1]).resolve()
    readme = Path(sys.argv[2] if len(sys.argv) > 2 else "README.md")
    text = readme.read_text()
    repo = readme.resolve().parent
    work = Path(tempfile.mkdtemp(prefix="readme-"))
    for shared in ("examples", "data"):
        (work / shared).symlink_to(repo / shared)
    session = Session(binary, work)
    ran = skipped = checked = 0
    try:
        for line, body, directive, answer in followed(text, blocks(text)):
            if directive and directive.startswith("skip"):
                skipped += 1
                print(f"README.md:{line}: not run ({directive[4:].strip(' :')})")
                continue
            rc, printed = session.run(line, body)
            ran += 1
            if rc != 0:
                fail(line, f"exit {rc}:\n{printed}")
            if answer:
                lang, shown = answer
                shown = session.ported(shown)
                if not matches(lang, shown, printed):
                    fail(line, f"printed\n{printed}\nnot what the README shows:\n{shown}")
                checked += 1
    finally:
        session.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"README.md: {ran} examples run as written, {checked} answers as shown, {skipped} not run (said why)")


if __name__ == "__main__":
    main()
