"""``versions``, ``du``, ``explain`` and ``history`` of a group of many small arrays: seconds each and the
files each reads, on a local folder and (``--s3``) on the test S3 server, with the requests each sends.

    python benchmarks/datasets.py [--arrays 1000] [--fragments 2] [--dir /dev/shm] [--s3]

tdbformat's writer makes the group: ``--arrays`` 1-D dense arrays of 100 int64 cells (zstd), each with
``--fragments`` fragments and one metadata key, half of them in a nested group, all listed by relative URI.
Each command runs once on the whole group (no tile is decoded: the counts of reads show it); the table gives
its time and the local file reads it made (``LocalStorage._read`` calls). With ``--s3`` the group is
uploaded to moto's S3 server (a process of its own on loopback, as the tests run it) and each command runs
again on its ``s3://`` URL through the storage options, cold (a new filesystem, nothing cached), behind
benchmarks/remote_latency.py's counting proxy at 0 ms: the table adds its time there and the requests it
sent. Not a test: it takes minutes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _build(root: Path, arrays: int, fragments: int) -> None:
    import tdbformat
    from tdbformat import schema

    top = tdbformat.create_group(root, version=22)
    sub_path = root / "sub"
    sub = tdbformat.create_group(sub_path, version=22)
    dims = [schema.Dim("d", (0, 99), tile=50, dtype=np.int64)]
    spec = schema.ArraySchema(schema.Domain(*dims), attrs=[
        schema.Attr("v", np.int64, filters=schema.FilterList([schema.ZstdFilter()]))])
    for i in range(arrays):
        inner = i % 2 == 1
        path = (sub_path if inner else root) / f"a{i:05d}"
        tdbformat.create(path, spec, version=22, timestamp=1)
        for t in range(fragments):
            tdbformat.write(path, {"v": np.arange(100, dtype=np.int64) * (t + 1)}, timestamp=10 + t)
        tdbformat.put_metadata(path, {"i": i}, timestamp=100)
        (sub if inner else top).add(path.name, name=path.name, relative=True)
    sub.close()
    top.add("sub", name="sub", relative=True)
    top.close()


def _measure(fn):
    from tdbformat.storage import LocalStorage

    reads = [0]
    original = LocalStorage._read

    def counted(self, path, start, length):
        reads[0] += 1
        return original(self, path, start, length)
    LocalStorage._read = counted
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0, reads[0]
    finally:
        LocalStorage._read = original


def _commands(root, versions, du, explain, history):
    return (("versions", lambda: versions(root)), ("versions --max-format 20", lambda: versions(root, max_format=20)),
            ("du", lambda: du(root)), ("explain", lambda: explain(root)), ("history", lambda: history(root)))


def _on_s3(root: Path, commands):
    """(seconds, requests) of each command on ``root`` uploaded to moto's server, cold, through the proxy."""
    import fsspec
    import s3fs

    from tdbformat.storage import default_storage_options

    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(here), str(here.parent / "tests")]
    from remote_latency import LatencyProxy
    from s3server import MotoProcess

    server = MotoProcess()
    proxy = LatencyProxy(server.endpoint, 0)
    try:
        fs = fsspec.filesystem("s3", **server.options)
        fs.mkdir("bench")
        fs.put(str(root), "bench/g", recursive=True)
        options = {**server.options, "client_kwargs": {"endpoint_url": f"http://{proxy.endpoint}"}}
        out = []
        for _, fn in commands("s3://bench/g"):
            s3fs.S3FileSystem.clear_instance_cache()  # cold: no listing or size remembered from the last command
            start, t0 = proxy.count(), time.perf_counter()
            with default_storage_options(options):
                fn()
            out.append((time.perf_counter() - t0, proxy.count() - start))
        return out
    finally:
        server.stop()
        proxy.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arrays", type=int, default=1000)
    p.add_argument("--fragments", type=int, default=2)
    p.add_argument("--dir", default=None, help="where to build the group (default: a temporary folder)")
    p.add_argument("--s3", action="store_true", help="also on moto's S3 server: time and requests")
    args = p.parse_args()
    from rich.console import Console
    from rich.table import Table

    from tdbformat.check.du import du
    from tdbformat.check.explain import explain
    from tdbformat.check.gate import versions
    from tdbformat.check.history import history

    work = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        root = work / "g"
        t0 = time.perf_counter()
        _build(root, args.arrays, args.fragments)
        built = time.perf_counter() - t0
        files = sum(1 for f in root.rglob("*") if f.is_file())
        table = Table(title=f"a group of {args.arrays} arrays, {args.fragments} fragments each ({files} files; "
                      f"built in {built:.1f} s)", title_justify="left")
        columns = ["command", "seconds", "file reads", "ms per array"]
        columns += ["S3 seconds", "requests", "requests per array"] if args.s3 else []
        for c in columns:
            table.add_column(c, justify="right" if c != "command" else "left")
        commands = lambda path: _commands(path, versions, du, explain, history)  # noqa: E731
        rows = []
        for name, fn in commands(root):
            seconds, reads = _measure(fn)
            rows.append([name, f"{seconds:.2f}", str(reads), f"{1000 * seconds / args.arrays:.2f}"])
        if args.s3:
            for row, (seconds, requests) in zip(rows, _on_s3(root, commands)):
                row += [f"{seconds:.2f}", str(requests), f"{requests / args.arrays:.2f}"]
        for row in rows:
            table.add_row(*row)
        Console().print(table)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
