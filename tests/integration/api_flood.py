"""A seat's flood of the API server, bounded: parallel LIST loops with the seat's own kubeconfig.

    python api_flood.py KUBECONFIG PATH --threads 128 --seconds 30 --max-requests 20000

Each thread keeps one connection and LISTs PATH again and again, asking for a gzip answer (the API server
compresses what it sends, the client reads little: the work is the server's) until the time or the request count
is up. Loopback only: it refuses a server that is not 127.0.0.1 or localhost. Prints one JSON line: the answers by
HTTP status (or exception name), the requests sent and the seconds taken. Run as its own process, so that its
threads do not slow down the measuring test's own Python.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import ssl
import tempfile
import threading
import time
from urllib.parse import urlsplit

import yaml

LOOPBACK = ("127.0.0.1", "localhost")


def seat_connection(kubeconfig: str):
    """(host, port, ssl context, token) of a token kubeconfig (its current context)."""
    config = yaml.safe_load(open(kubeconfig, encoding="utf-8"))
    context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    url = urlsplit(cluster["server"])
    if url.hostname not in LOOPBACK:
        raise SystemExit(f"refusing to flood {url.hostname}: loopback only")
    with tempfile.NamedTemporaryFile("wb", suffix=".crt") as ca:
        ca.write(base64.b64decode(cluster["certificate-authority-data"]))
        ca.flush()
        ctx = ssl.create_default_context(cafile=ca.name)
    return url.hostname, url.port, ctx, user["token"]


def flood(kubeconfig: str, path: str, threads: int, seconds: float, max_requests: int) -> dict:
    host, port, ctx, token = seat_connection(kubeconfig)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", "Accept-Encoding": "gzip"}
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    answers: dict[str, int] = {}
    sent = [0]

    def loop():
        conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=30)
        while time.monotonic() < deadline:
            with lock:
                if sent[0] >= max_requests:
                    return
                sent[0] += 1
            try:
                conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                response.read()
                key = str(response.status)
            except (OSError, http.client.HTTPException) as exc:
                key = type(exc).__name__
                conn.close()
                conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=30)
            with lock:
                answers[key] = answers.get(key, 0) + 1
        conn.close()

    started = time.monotonic()
    workers = [threading.Thread(target=loop, daemon=True) for dummy in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(seconds + 60)
    return {"answers": answers, "requests": sent[0], "seconds": round(time.monotonic() - started, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("kubeconfig")
    parser.add_argument("path")
    parser.add_argument("--threads", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--max-requests", type=int, default=20000)
    args = parser.parse_args()
    print(json.dumps(flood(args.kubeconfig, args.path, args.threads, args.seconds, args.max_requests)), flush=True)


if __name__ == "__main__":
    main()
