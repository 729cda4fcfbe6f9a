"""moto's S3 server on a free loopback port, in a process of its own, for the tests and benchmarks/remote.py.

Not moto's ``ThreadedMotoServer``: TileDB-Py holds the GIL while its query waits on a ranged GET, so a server
thread in the same process never answers it, and libcurl gives up ("curlCode: 28 ... Less than 1 bytes/sec
transferred"). In a process of its own, the server answers TileDB-Py and fsspec alike.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

#: TileDB-Py's configuration for a server at ``{endpoint}`` (host:port)
TILEDB_CONFIG = {"vfs.s3.scheme": "http", "vfs.s3.region": "us-east-1", "vfs.s3.use_virtual_addressing": "false",
                 "vfs.s3.aws_access_key_id": "testing", "vfs.s3.aws_secret_access_key": "testing"}


class MotoProcess:
    """``python -m moto.server`` on a free loopback port; ``options`` are the fsspec storage_options that
    reach it, ``endpoint`` its host:port, :meth:`tiledb_config` TileDB's settings for it."""

    def __init__(self, timeout: float = 60):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.endpoint = f"127.0.0.1:{port}"
        self.options = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": f"http://{self.endpoint}"}}
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"moto's server did not start on {self.endpoint}") from None
                time.sleep(0.1)

    def tiledb_config(self) -> dict:
        return {**TILEDB_CONFIG, "vfs.s3.endpoint_override": self.endpoint}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def serving(bucket: str):
    """For a module fixture: ``(server, s3fs filesystem)`` with an empty ``bucket``, stopped after."""
    import s3fs

    server = MotoProcess()
    fs = s3fs.S3FileSystem(**server.options, skip_instance_cache=True)
    fs.mkdir(bucket)
    try:
        yield server, fs
    finally:
        server.stop()
