"""Object-store reads behind latency: moto's S3 server (a process of its own) behind a loopback HTTP proxy
that holds each request ``--latency`` ms before passing it on and counts them; tdbformat against TileDB-Py
at ``--threads`` threads (a cloud machine gives TileDB one per core), alternating, median of ``--repeat``.

    python benchmarks/remote_latency.py [--latency 20] [--threads 16] [--repeat 3]

Rows: opening a 100-fragment sparse array (and reading its array metadata, three files); reading it whole; a
~1% box of it; a ~1% box of a 1M-cell sparse array; reading a 64 MiB dense array whole (float64 zstd, 81 tiles
of 362 x 362, as ``benchmarks/remote.py``). The table
gives times, their ratio tdbformat / TileDB-Py and the requests each sent (issue #46: ratio <= 1.0 with
fewer requests).
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from s3server import MotoProcess  # noqa: E402 (moto in a process of its own: s3server.py says why)


class LatencyProxy:
    """This script with ``--proxy UPSTREAM SECONDS`` in a process of its own (in this one, TileDB-Py, which
    holds the GIL while it waits on a request, stalls it): HTTP on a free loopback port, each request held
    that long, then sent on to ``upstream`` (host:port); :meth:`count` requests so far."""

    def __init__(self, upstream: str, latency: float):
        self.process = subprocess.Popen([sys.executable, __file__, "--proxy", upstream, str(latency)],
                                        stdout=subprocess.PIPE, text=True)
        self.endpoint = self.process.stdout.readline().strip()

    def count(self) -> int:
        conn = http.client.HTTPConnection(self.endpoint, timeout=10)
        conn.request("GET", "/__count")
        return int(conn.getresponse().read())

    def stop(self):
        self.process.terminate()
        self.process.wait()


def _serve(upstream: str, latency: float):
    count, lock, local = [0], threading.Lock(), threading.local()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self):
            if self.path == "/__count":
                return self._answer(200, "OK", [], str(count[0]).encode())
            with lock:
                count[0] += 1
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("expect", "transfer-encoding")}
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                body = b""
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    body += self.rfile.read(size)
                    self.rfile.readline()
                self.rfile.readline()
                headers["Content-Length"] = str(len(body))
            else:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency)
            if getattr(local, "conn", None) is None:
                local.conn = http.client.HTTPConnection(upstream, timeout=60)
            local.conn.request(self.command, self.path, body=body, headers=headers)
            got = local.conn.getresponse()
            self._answer(got.status, got.reason, got.getheaders(), got.read(),
                         got.getheader("Content-Length", "0") if self.command == "HEAD" else None)

        def _answer(self, status, reason, headers, data, length=None):
            self.send_response(status, reason)
            for k, v in headers:
                if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(k, v)
            self.send_header("Content-Length", length or str(len(data)))  # (a HEAD's: the object's length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _any

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=20, help="ms added to each request")
    ap.add_argument("--threads", type=int, default=16, help="TileDB-Py's compute and I/O threads")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import fsspec
    import tiledb

    import tdbformat

    server = MotoProcess()
    proxy = LatencyProxy(server.endpoint, args.latency / 1000)
    try:
        _bench(args, server, proxy, fsspec, tiledb, tdbformat)
    finally:  # (a failed write left both servers running)
        server.stop()
        proxy.stop()


def _bench(args, server, proxy, fsspec, tiledb, tdbformat):
    options = {**server.options, "client_kwargs": {"endpoint_url": f"http://{proxy.endpoint}"}}
    fsspec.config.conf["s3"] = options
    fsspec.filesystem("s3", **server.options).mkdir("bench")
    config = {**server.tiledb_config(), "vfs.s3.endpoint_override": proxy.endpoint,
              "sm.compute_concurrency_level": str(args.threads), "sm.io_concurrency_level": str(args.threads)}
    ctx = tiledb.Ctx(server.tiledb_config())  # arrays are written to the server directly, read through the proxy
    many, one = "s3://bench/many", "s3://bench/one"
    rng = np.random.default_rng(0)
    for uri, fragments, n in ((many, 100, 10_000), (one, 1, 1_000_000)):
        dims = [tiledb.Dim(d, domain=(0, 99_999), tile=1000, dtype=np.int64) for d in "xy"]
        tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=10_000, attrs=[
            tiledb.Attr("a", dtype=np.float64, filters=[tiledb.ZstdFilter()])]), ctx=ctx)
        for f in range(fragments):
            with tiledb.open(uri, "w", timestamp=f + 1, ctx=ctx) as A:
                cells = rng.choice(1_000_000, n, replace=False)
                A[cells // 1000 * 100, cells % 1000 * 100] = rng.random(n)
    dense, side = "s3://bench/dense", int(np.sqrt(64 * 2**20 / 8))
    dom = tiledb.Domain(*(tiledb.Dim(f"d{i}", (0, side - 1), tile=362, dtype=np.int64) for i in range(2)))
    tiledb.Array.create(dense, tiledb.ArraySchema(domain=dom, attrs=[
        tiledb.Attr("v", np.float64, filters=[tiledb.ZstdFilter()])]), ctx=ctx)
    with tiledb.open(dense, "w", timestamp=1, ctx=ctx) as A:
        A[:] = rng.random((side, side)).round(3)
    for t, (k, v) in enumerate({"unit": "metres", "scale": 0.5, "axes": (1, 2, 3)}.items()):  # three metadata files
        with tiledb.open(many, "w", timestamp=1000 + t, ctx=ctx) as A:
            A.meta[k] = v

    def py(uri, read):
        def run():
            with tiledb.open(uri, ctx=tiledb.Ctx(config)) as A:
                return read(A)
        return run
    box = (40_000, 40_999)  # rows 400..409 of the 1000 x 1000 coordinate grid: 1% of the cells
    rows = [("open 100 sparse fragments", lambda: tdbformat.open_array(many) and None, py(many, lambda A: None)),
            ("100 fragments of 10,000 cells, read whole", lambda: tdbformat.open_array(many).read(order="G")["a"],
             py(many, lambda A: A.query(order="G")[:]["a"])),
            ("open 100 fragments and read its metadata", lambda: len(tdbformat.open_array(many).meta) and None,
             py(many, lambda A: len(A.meta) and None)),
            ("100 fragments, a 1% box", lambda: tdbformat.open_array(many).multi_index[box[0]:box[1]]["a"],
             py(many, lambda A: A.multi_index[box[0]:box[1]]["a"])),
            ("1M-cell sparse, a 1% box", lambda: tdbformat.open_array(one).multi_index[box[0]:box[1]]["a"],
             py(one, lambda A: A.multi_index[box[0]:box[1]]["a"])),
            ("64 MiB dense, read whole", lambda: tdbformat.open_array(dense).read()["v"].reshape(-1),
             py(dense, lambda A: A[:]["v"].reshape(-1)))]
    print(f"moto S3 behind a {args.latency:g} ms proxy, TileDB-Py at {args.threads} threads, median of "
          f"{args.repeat}, alternating")
    print(f"{'read':<44} {'tdbformat s':>11} {'TileDB-Py s':>11} {'ratio':>6} {'requests':>9} {'TileDB-Py':>9}")
    for name, ours, theirs in rows:
        a, b, counts = [], [], {}
        for r in range(args.repeat):
            for who, run, into in (("ours", ours, a), ("theirs", theirs, b))[::1 if r % 2 else -1]:
                start, t = proxy.count(), time.perf_counter()
                got = run()
                into.append(time.perf_counter() - t)
                counts[who] = proxy.count() - start
                if got is not None:
                    counts[who + " cells"] = len(got)
        if counts.get("ours cells") != counts.get("theirs cells"):
            raise SystemExit(f"{name}: {counts}")
        ta, tb = statistics.median(a), statistics.median(b)
        print(f"{name:<44} {ta:>11.3f} {tb:>11.3f} {ta / tb:>6.2f} {counts['ours']:>9} {counts['theirs']:>9}",
              flush=True)


if __name__ == "__main__":
    _serve(sys.argv[2], float(sys.argv[3])) if sys.argv[1:2] == ["--proxy"] else main()
