"""The attackers of the staying-up workloads (`create+slow`, `list-google+silent`, …), and the
soak's: one client address doing what one hostile client can, beside the measured load."""

import select
import socket
import threading
import time

ATTACKER_ADDR = "127.0.0.2"


class Attacker:
    """One client address (127.0.0.2) doing what §17 names, beside the measured workload (wrk, from
    127.0.0.1), until stopped: `silent` holds as many silent connections as the per-client cap lets
    it (256), opening new ones as the server closes them; `slow` keeps 16 creates of 8 MiB arriving
    slowly (2 MiB at once, then a byte every half second) as another merchant; `401` sends requests
    with made-up keys over two connections at `FLOOD_PER_S` in all (a hundred times the default 401
    budget; unpaced, on a 2-core machine, the Python flood itself would take a core from the
    measured workload, which says nothing of the server)."""

    FLOOD_PER_S = 2000

    def __init__(self, kind, port, key=None):
        self.kind, self.port, self.key = kind, port, key
        self.stopping = threading.Event()
        self.sent = 0
        workers = {"silent": 4, "slow": 16, "401": 2}[kind]
        self.threads = [threading.Thread(target=getattr(self, f"run_{kind.replace('401', 'unauthenticated')}"), daemon=True)
                        for _ in range(workers)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        time.sleep(1)  # let it reach its full strength before the measurement
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=15)

    def connect(self):
        s = socket.socket()
        s.bind((ATTACKER_ADDR, 0))
        s.settimeout(5)
        s.connect(("127.0.0.1", self.port))
        return s

    def run_silent(self):
        held = []
        while not self.stopping.is_set():
            while len(held) < 64:
                try:
                    held.append(self.connect())
                except OSError:
                    break
            readable, _, _ = select.select(held, [], [], 0.5) if held else ([], [], [])
            for s in readable:
                try:
                    closed = not s.recv(1)
                except OSError:
                    closed = True
                if closed:
                    held.remove(s)
                    s.close()
            if not held:
                time.sleep(0.2)
        for s in held:
            s.close()

    def run_slow(self):
        head = (f"POST /v1/location/create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {self.key}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {8 << 20}\r\n\r\n").encode()
        while not self.stopping.is_set():
            try:
                s = self.connect()
                s.sendall(head + b" " * (2 << 20))
                while not self.stopping.is_set():
                    s.sendall(b" ")
                    if select.select([s], [], [], 0.5)[0]:
                        break  # answered (408, or the connection closed)
                s.close()
            except OSError:
                time.sleep(0.2)

    def run_unauthenticated(self):
        n = 0
        interval = len(self.threads) / self.FLOOD_PER_S
        next_at = time.time()
        while not self.stopping.is_set():
            try:
                s = self.connect()
                while not self.stopping.is_set():
                    next_at += interval
                    pause = next_at - time.time()
                    if pause > 0:
                        time.sleep(pause)
                    n += 1
                    s.sendall((f"POST /v1/categories/list HTTP/1.1\r\nHost: x\r\n"
                               f"Authorization: Bearer sf_{n:024x}_madeup\r\nContent-Length: 0\r\n\r\n").encode())
                    answer = b""
                    while b"\r\n\r\n" not in answer:
                        chunk = s.recv(65536)
                        if not chunk:
                            raise OSError("closed")
                        answer += chunk
                    head, _, body = answer.partition(b"\r\n\r\n")
                    length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
                    while len(body) < length:
                        body += s.recv(65536)
                    self.sent += 1
            except OSError:
                time.sleep(0.05)


def split_attack(workload):
    """`create+slow` → ("create", "slow"); `create` → ("create", None)."""
    base, _, attack = workload.partition("+")
    return base, attack or None
