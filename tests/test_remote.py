"""Arrays behind URLs: a real S3 server on loopback (moto's server mode speaks the S3 protocol over HTTP)
holding the corpus, read back equal to the local read; requests counted to show that opening fetches
footers by ranged reads and no tile data; TileDB-Py writing to the same server (the storage's own behaviour
on ``memory://``: tests/storage/test_fsspec.py)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import threading
import uuid

import os

import numpy as np
import pytest

import tdbformat
import tdbformat.array
from tdbformat.array.ranged import open_fragment_metadata
from tdbformat.errors import FormatError, UnsupportedError
from tdbformat.storage import FsspecStorage, LocalStorage
from tdbformat.structs import fragment as fragment_mod

import corpus
from common import equal_cells

fsspec = pytest.importorskip("fsspec")
s3fs = pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
from s3server import MotoProcess  # noqa: E402 (after the skips: it needs moto)

ARRAY_CASES = [c for c in corpus.cases() if corpus.truth(c).get("kind", "array") == "array"]
#: uploading the whole corpus to the S3 server takes ~10 minutes: by default one array of each kind per
#: writer (dense, sparse, encrypted, consolidated...) with TDBFORMAT_REMOTE_CORPUS=all, every array
_KINDS = ("dense_2d_multiattr", "sparse_2d_rtree", "encrypted_dense", "consolidated_sparse_with_timestamps",
          "sparse_var_string_dim", "fragment_meta_consolidated", "sparse_delete")
S3_CASES = ARRAY_CASES if os.environ.get("TDBFORMAT_REMOTE_CORPUS") == "all" else \
    [c for c in ARRAY_CASES if c.name in _KINDS]
BUCKET = "corpus"
#: a tail that holds a small footer but not the corpus's whole metadata files
SMALL_TAIL = 1024


class S3Server:
    """moto's S3 server on loopback (in a process of its own: tests/s3server.py says why) holding the bucket
    the tests upload to: ``options`` are the fsspec storage_options that reach it."""

    def __init__(self):
        self.server = MotoProcess()
        self.options = self.server.options
        self.fs = s3fs.S3FileSystem(**self.options, skip_instance_cache=True)
        self.fs.mkdir(BUCKET)
        self.uploaded = set()

    def url(self, case) -> str:
        """The case's array on the server, uploaded on first use (the whole corpus takes minutes)."""
        if case not in self.uploaded:
            self.fs.put(str(case), f"{BUCKET}/corpus/{case.relative_to(corpus.CORPUS).as_posix()}", recursive=True)
            self.uploaded.add(case)
        return f"s3://{BUCKET}/corpus/{corpus.root(case).relative_to(corpus.CORPUS).as_posix()}"


@pytest.fixture(scope="module")
def server():
    s = S3Server()
    yield s
    s.server.stop()


@pytest.fixture(scope="module")
def s3(server):
    return server.options


@pytest.fixture
def remote(monkeypatch, s3):
    """open_array("s3://...") through the S3 server without storage_options: fsspec's own defaults
    (``fsspec.config.conf``, as a user's configuration would set them) point s3:// at it."""
    import fsspec.config

    monkeypatch.setitem(fsspec.config.conf, "s3", dict(s3))
    return s3


class Counter:
    """Every byte range an FsspecStorage fetches: ``(path, start, end)``."""

    def __init__(self, monkeypatch):
        self.ranges = []
        real_cat, real_ranges = FsspecStorage._read, FsspecStorage.read_many
        counter = self

        def _read(storage, path, start, length):
            counter.ranges.append((str(path), start, start + length))
            return real_cat(storage, path, start, length)

        def read_many(storage, ranges, what="file"):
            counter.ranges += [(str(p), s, e) for p, s, e in ranges]
            return real_ranges(storage, ranges, what)
        monkeypatch.setattr(FsspecStorage, "_read", _read)
        monkeypatch.setattr(FsspecStorage, "read_many", read_many)


def _outcome(path, key):
    try:
        return tdbformat.open_array(path, key=key).read()
    except UnsupportedError as e:
        pytest.skip(f"cannot be read here: {e}")
    except FormatError as e:
        return type(e)


@pytest.mark.parametrize("case", S3_CASES, ids=corpus.case_id)
def test_corpus_reads_equal_over_s3(case, remote, server):
    _reads_as_the_local_copy(case, server.url(case))


def _reads_as_the_local_copy(case, url):
    local = _outcome(corpus.root(case), corpus.key(case))
    got = _outcome(url, corpus.key(case))
    if not isinstance(local, dict):
        assert got is local
        return
    assert set(got) == set(local)
    for name in local:
        equal_cells(got[name], local[name], name)


def _data_file(path: str) -> bool:
    """A tile-holding file: anything in a fragment folder but its metadata and commit files."""
    name = path.rsplit("/", 1)[-1]
    return "/__fragments/" in path and name.endswith(".tdb") and name != "__fragment_metadata.tdb"


@pytest.mark.parametrize("case", [c for c in ARRAY_CASES if corpus.case_id(c).startswith(("v22", "v23"))],
                         ids=corpus.case_id)
def test_opening_fetches_footers_by_tail_and_no_tile_data(case, remote, server, monkeypatch):
    url = server.url(case)
    monkeypatch.setattr(tdbformat.array.ranged, "TAIL", SMALL_TAIL)  # corpus files are small: tail a part
    counter = Counter(monkeypatch)
    try:
        arr = tdbformat.open_array(url, key=corpus.key(case))
    except UnsupportedError as e:
        pytest.skip(str(e))
    assert not [r for r in counter.ranges if _data_file(r[0])], "opening fetched tile data"
    sizes = {p: s for p, s in ((r[0], arr.storage.size_of(r[0])) for r in counter.ranges)}
    footers = [r for r in counter.ranges if r[0].endswith("/__fragment_metadata.tdb")]
    assert footers or arr._listing.consolidated_metadata or not arr._listing.fragments
    # each metadata file is first fetched by a tail read, which ends at the file's size
    first = {}
    for path, start, end in footers:
        first.setdefault(path, (start, end))
    for path, (start, end) in first.items():
        assert (start, end) == (max(0, sizes[path] - SMALL_TAIL), sizes[path])
    local = tdbformat.open_array(corpus.root(case), key=corpus.key(case)).read()
    got = arr.read()
    for name in local:
        equal_cells(got[name], local[name], name)


def test_open_array_reads_footer_tails(remote, server, monkeypatch):
    case = next(c for c in ARRAY_CASES if corpus.case_id(c) == "v22_tiledb-py-0.36.1_core-2.30.0/dense_2d_multiattr")
    url = server.url(case)
    monkeypatch.setattr(tdbformat.array.ranged, "TAIL", SMALL_TAIL)
    counter = Counter(monkeypatch)
    tdbformat.open_array(url)
    assert all(start > 0 for path, start, _ in counter.ranges if path.endswith("/__fragment_metadata.tdb"))


def test_a_footer_tail_holds_the_footer(s3, server, monkeypatch):
    """open_fragment_metadata parses each footer from a SMALL_TAIL-byte tail, and it equals the footer of
    the whole file (every v22 fragment of the corpus; those with a longer footer are read whole)."""
    from tdbformat import layout
    from tdbformat.storage import FileView
    monkeypatch.setattr(tdbformat.array.ranged, "TAIL", SMALL_TAIL)
    storage = FsspecStorage("s3", s3)
    ranged = 0
    for case in [c for c in ARRAY_CASES if corpus.case_id(c).startswith("v22")]:
        root = server.url(case)
        try:
            schemas = dict(layout.load_schemas(storage, root, corpus.key(case)))
        except UnsupportedError:
            continue
        entries = [(e.metadata_file, e.name) for e in layout.Listing.of(storage, root, corpus.key(case)).fragments]
        for (path, name), meta in zip(entries, open_fragment_metadata(storage, entries, schemas, corpus.key(case))):
            whole = fragment_mod.FragmentMetadata.parse(storage.read(path), schema=schemas, key=corpus.key(case),
                                                        name=name)
            assert fragment_mod.Footer.build(meta.footer, schema=schemas) == \
                fragment_mod.Footer.build(whole.footer, schema=schemas)
            assert meta.footer_offset == whole.footer_offset
            if isinstance(meta._data, FileView):
                ranged += 1
                assert meta._data.fetched() == SMALL_TAIL < len(meta._data)
    assert ranged > 20


def test_tiledb_py_writes_to_s3_and_tdbformat_reads_it(s3, remote, server):
    tiledb = pytest.importorskip("tiledb")
    ctx = tiledb.Ctx(server.server.tiledb_config())
    uri = f"s3://{BUCKET}/written-by-tiledb-py-{uuid.uuid4().hex}"
    dom = tiledb.Domain(tiledb.Dim("x", (0, 99), tile=10, dtype=np.int32),
                        tiledb.Dim("y", (0, 9), tile=5, dtype=np.int32))
    schema = tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("v", np.float64, filters=[tiledb.ZstdFilter()]),
                                                   tiledb.Attr("s", str, var=True)])
    tiledb.Array.create(uri, schema, ctx=ctx)
    values = np.random.default_rng(7).random((100, 10))
    strings = np.array([f"cell{i}" * (i % 4) for i in range(1000)], dtype=object).reshape(100, 10)
    with tiledb.open(uri, "w", ctx=ctx) as a:
        a[:] = {"v": values, "s": strings}
    got = tdbformat.open_array(uri).read()
    assert np.array_equal(got["v"], values)
    assert [s.decode() if isinstance(s, bytes) else s for s in got["s"].ravel()] == list(strings.ravel())


# -- memory:// : the storage itself ---------------------------------------------------------------------


def test_backend_errors_become_storage_errors_naming_the_url(s3):
    import socket
    with socket.socket() as s:  # a loopback port that nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    storage = FsspecStorage("s3", {**s3, "retries": 1, "client_kwargs": {"endpoint_url": dead},
                                   "config_kwargs": {"retries": {"max_attempts": 1}}})
    with pytest.raises(OSError, match="cannot access") as e:  # the store out of reach: a StorageError
        storage.read(f"s3://{BUCKET}/corpus/x", 0, 4)
    assert e.value.file == f"s3://{BUCKET}/corpus/x" and not isinstance(e.value, FormatError)
    ok = FsspecStorage("s3", s3)
    with pytest.raises(FormatError, match="found nothing") as e:
        ok.read(f"s3://{BUCKET}/no/such/object")
    assert e.value.file == f"s3://{BUCKET}/no/such/object"


def test_parse_file_takes_storage_options(remote, s3, server):
    case = next(c for c in ARRAY_CASES if corpus.case_id(c) == "v22_tiledb-py-0.36.1_core-2.30.0/dense_2d_multiattr")
    local = next(p for p in corpus.files(corpus.root(case)) if p.name == "__fragment_metadata.tdb")
    url = server.url(case) + "/" + local.relative_to(corpus.root(case)).as_posix()
    got = tdbformat.parse_file(url, storage_options=s3)
    assert got.kind == "fragment_metadata" and got.build() == local.read_bytes()


@pytest.mark.parametrize("tail", [64, 1024])
def test_every_footer_from_a_tail_equals_the_whole_files(tail, monkeypatch):
    """Every corpus fragment of v5+ (versioned names) opened from a ``tail``-byte tail (plus the rest of a
    longer footer, found by its stored length): the footer equals the one parsed from the whole file, and
    less than the whole file was fetched."""
    from tdbformat import layout
    from tdbformat.storage import FileView
    monkeypatch.setattr(tdbformat.array.ranged, "TAIL", tail)
    storage, ranged = LocalStorage(), 0
    for case in ARRAY_CASES:
        root, key = corpus.root(case), corpus.key(case)
        try:
            schemas = dict(layout.load_schemas(storage, root, key))
            entries = [(e.metadata_file, e.name) for e in layout.Listing.of(storage, root, key).fragments]
        except (FormatError, UnsupportedError):
            continue
        for (path, name), meta in zip(entries, open_fragment_metadata(storage, entries, schemas, key)):
            if not isinstance(meta._data, FileView):
                continue
            whole = fragment_mod.FragmentMetadata.parse(storage.read(path), schema=schemas, key=key, name=name)
            assert fragment_mod.Footer.build(meta.footer, schema=schemas) == \
                fragment_mod.Footer.build(whole.footer, schema=schemas), path
            assert meta.footer_offset == whole.footer_offset and meta._data.fetched() < len(meta._data)
            ranged += 1
    assert ranged > 500


# -- tile reads: one batch of coalesced, concurrent ranged GETs per fragment and field -------------------


class Gets:
    """Every GET the S3 client sends (``(key, Range header)``): the requests the server serves, counted
    below fsspec and tdbformat."""

    def __init__(self, monkeypatch):
        self.gets, self.lists = [], []
        real = s3fs.S3FileSystem._call_s3

        async def _call_s3(fs, method, *args, **kwargs):
            if method == "get_object":
                self.gets.append((kwargs["Key"], kwargs.get("Range")))
            elif method == "list_objects_v2":
                self.lists.append(kwargs.get("Prefix"))
            return await real(fs, method, *args, **kwargs)
        monkeypatch.setattr(s3fs.S3FileSystem, "_call_s3", _call_s3)

    def of_data(self) -> list:
        return [g for g in self.gets if _data_file("/" + g[0])]


def _tiled_array(server, tmp_path, sparse: bool):
    """TileDB-Py writes a 64-tile int32 array (256 x 256 cells in 32 x 32 tiles, no filters: every tile the
    same size), uploaded to the S3 server; its values an independent function of the cell."""
    tiledb = pytest.importorskip("tiledb")
    path = tmp_path / ("sparse" if sparse else "dense")
    dom = tiledb.Domain(*(tiledb.Dim(n, (0, 255), tile=32, dtype=np.int64) for n in ("r", "c")))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=sparse, capacity=1024,
                                                      attrs=[tiledb.Attr("v", np.int32)]))
    values = (np.arange(256 * 256) % 9973).astype(np.int32).reshape(256, 256)
    with tiledb.open(str(path), "w") as a:
        if sparse:
            r, c = np.indices(values.shape)
            a[r.ravel(), c.ravel()] = values.ravel()
        else:
            a[:] = values
    url = f"s3://{BUCKET}/tiled-{uuid.uuid4().hex}"
    server.fs.put(str(path), url.removeprefix("s3://"), recursive=True)
    return url, values


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_a_full_read_fetches_each_data_file_in_one_request(sparse, s3, server, tmp_path, monkeypatch):
    url, values = _tiled_array(server, tmp_path, sparse)
    arr = tdbformat.open_array(url, storage_options=s3)
    gets = Gets(monkeypatch)
    got = arr.read()
    if sparse:
        assert np.array_equal(got["v"], values[got["r"], got["c"]]) and len(got["v"]) == values.size
    else:
        assert np.array_equal(got["v"], values)
    data = gets.of_data()
    files = {k for k, _ in data}
    # 64 tiles per field, yet one GET per data file (v, and the coordinates of a sparse array)
    assert len(files) == (3 if sparse else 1) and len(data) == len(files), data


def test_a_large_file_is_fetched_in_blocks_the_next_ones_ahead(s3, server, tmp_path, monkeypatch):
    """A data file larger than a block is fetched a block (whole tiles of at most REMOTE_BLOCK bytes) at a
    time, the next ones in the background while the first decodes; together the GETs cover the file once."""
    import threading

    from tdbformat.array import tiles
    from tdbformat.storage import FsspecStorage
    monkeypatch.setattr(tiles, "REMOTE_BLOCK", 64 << 10)  # the 256 KiB file of 64 tiles in 5 blocks
    url, values = _tiled_array(server, tmp_path, sparse=False)
    arr = tdbformat.open_array(url, storage_options=s3)
    gets, threads, read = Gets(monkeypatch), [], FsspecStorage.read
    monkeypatch.setattr(FsspecStorage, "read", lambda self, *a, **k: threads.append(
        threading.current_thread().name) or read(self, *a, **k))
    assert np.array_equal(arr.read()["v"], values)
    [key] = {k for k, _ in gets.of_data()}
    size, per_tile = server.fs.size(f"{BUCKET}/{key}"), server.fs.size(f"{BUCKET}/{key}") // 64
    bounds = sorted(tuple(int(x) for x in rng.removeprefix("bytes=").split("-")) for _, rng in gets.of_data())
    assert bounds[0][0] == 0 and bounds[-1][1] == size - 1
    assert all(a[1] + 1 == b[0] for a, b in zip(bounds, bounds[1:]))  # back to back: no byte twice, none left
    assert all(end - start + 1 <= 64 << 10 and (end + 1) % per_tile == 0 for start, end in bounds)
    assert len(bounds) == -(-64 // ((64 << 10) // per_tile))
    assert any(name.startswith("tdbformat-fetch") for name in threads)  # fetched ahead, in the background


def test_a_one_tile_slice_fetches_that_tiles_range_only(s3, server, tmp_path, monkeypatch):
    url, values = _tiled_array(server, tmp_path, sparse=False)
    arr = tdbformat.open_array(url, storage_options=s3)
    gets = Gets(monkeypatch)
    got = arr.read(ranges={"r": (64, 95), "c": (160, 191)})  # tile (2, 5) of the 8 x 8 tile grid
    assert np.array_equal(got["v"], values[64:96, 160:192])
    [(key, rng)] = gets.of_data()
    # unfiltered tiles of one size: tile k (row-major tile order) is the k-th 64th of the file
    size = server.fs.size(f"{BUCKET}/{key}")
    k, per_tile = 2 * 8 + 5, size // 64
    assert size % 64 == 0 and rng == f"bytes={k * per_tile}-{(k + 1) * per_tile - 1}"


# -- the command line: --storage-options on every command that takes a path or a URL ----------------------


def _cli(capsys, *argv, code=0) -> str:
    from tdbformat.cli import main
    assert main([str(a) for a in argv]) == code, capsys.readouterr()
    return capsys.readouterr().out


def test_cli_commands_take_storage_options(s3, server, tmp_path, capsys):
    """create, write, cat, schema, validate, stats, inspect, convert and salvage on URLs of the S3 server,
    reached through --storage-options alone: the array made from a corpus array's schema JSON and cells
    shows the same schema and cells as the original."""
    import json
    opts = ["--storage-options", json.dumps(s3)]
    src = corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "dense_2d_multiattr" / "array"
    (tmp_path / "s.json").write_text(_cli(capsys, "schema", "--json", src))
    cells = _cli(capsys, "cat", "--csv", src)
    (tmp_path / "in.csv").write_text(cells)
    url = f"s3://{BUCKET}/cli-{uuid.uuid4().hex}"
    _cli(capsys, "create", url, "--schema", tmp_path / "s.json", "--version", 22, *opts)
    _cli(capsys, "write", url, tmp_path / "in.csv", "--timestamp", 7, *opts)
    assert _cli(capsys, "cat", "--csv", url, *opts) == cells

    def schema(path, *more):
        doc = json.loads(_cli(capsys, "schema", "--json", path, *more))["schemas"][-1]
        doc.pop("name")
        return doc
    assert schema(url, *opts) == schema(src)
    assert "no findings" in _cli(capsys, "validate", url, *opts)
    stats = json.loads(_cli(capsys, "stats", "--json", url, *opts))
    assert sum(f["cell_num"] for f in stats["fragments"]) == len(cells.splitlines()) - 1
    assert any(f["kind"] == "fragment_metadata" for f in json.loads(_cli(capsys, "inspect", "--json", url, *opts))
               ["files"])
    _cli(capsys, "convert", url, url + "-v20", "--version", 20, *opts)
    assert _cli(capsys, "cat", "--csv", url + "-v20", *opts) == cells
    _cli(capsys, "salvage", url, tmp_path / "copy", *opts)  # a URL source, a local destination
    assert _cli(capsys, "cat", "--csv", tmp_path / "copy") == cells


@pytest.mark.parametrize("bad, says", [("{not json", "not JSON"), ("[1, 2]", "expected a JSON object, not list")])
def test_a_bad_storage_options_is_a_usage_error_naming_the_option(bad, says, capsys):
    from tdbformat.cli import main
    with pytest.raises(SystemExit) as e:
        main(["cat", "s3://b/a", "--storage-options", bad])
    assert e.value.code == 2
    assert f"argument --storage-options: {says}" in capsys.readouterr().err


# -- dask over S3: storage options nested as fsspec takes them ------------------------------------------


def test_to_dask_with_nested_storage_options(s3, server, tmp_path):
    """``{"client_kwargs": {"endpoint_url": ...}}`` tokenizes, names the graph the same way twice, and reaches
    the array from dask's threads and from a worker process that opens it anew."""
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    from tdbformat.array.dask import to_dask
    assert isinstance(s3["client_kwargs"], dict)
    url, values = _tiled_array(server, tmp_path, sparse=False)
    arr = tdbformat.open_array(url, storage_options=s3)
    x = to_dask(arr)["v"]
    assert x.name == to_dask(arr)["v"].name  # the same array, window and options: the same graph
    assert np.array_equal(x.compute(scheduler="threads"), values)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            distributed.Client(c):
        assert np.array_equal(x[30:70, 100:200].compute(), values[30:70, 100:200])
    surl, _ = _tiled_array(server, tmp_path / "s", sparse=True)
    df = to_dask(tdbformat.open_array(surl, storage_options=s3)).compute(scheduler="threads")
    assert len(df) == values.size and np.array_equal(df["v"].to_numpy(), values[df["r"], df["c"]])
    assert dask.base.tokenize(s3) == dask.base.tokenize(dict(s3))


def test_an_array_tdbformat_writes_to_s3_reads_equal_in_tiledb_py(s3, server, tmp_path):
    """tdbformat creates an array on the S3 server and writes two fragments there (no folder objects, each
    commit marker last); TileDB-Py, pointed at the same server, opens it and reads it back equal."""
    tiledb = pytest.importorskip("tiledb")
    dom = tiledb.Domain(tiledb.Dim("x", (0, 99), tile=10, dtype=np.int32),
                        tiledb.Dim("y", (0, 9), tile=5, dtype=np.int32))
    tiledb.Array.create(str(tmp_path / "schema"), tiledb.ArraySchema(domain=dom, attrs=[
        tiledb.Attr("v", np.float64, filters=[tiledb.ZstdFilter()]), tiledb.Attr("s", str, var=True)]))
    values = np.random.default_rng(11).random((100, 10))
    strings = np.array([f"cell{i}" * (i % 4) for i in range(1000)], dtype=object).reshape(100, 10)
    url = f"s3://{BUCKET}/written-by-tdbformat-{uuid.uuid4().hex}"
    with tdbformat.storage.default_storage_options(s3):
        tdbformat.create(url, tdbformat.open_array(tmp_path / "schema").schema, version=22)
        tdbformat.write(url, {"v": values[:50], "s": strings[:50]}, subarray=[(0, 49), (0, 9)])
        tdbformat.write(url, {"v": values[50:], "s": strings[50:]}, subarray=[(50, 99), (0, 9)])
    with tiledb.open(url, ctx=tiledb.Ctx(server.server.tiledb_config())) as a:
        assert a.schema == tiledb.ArraySchema.load(str(tmp_path / "schema"))
        assert a.nonempty_domain() == ((0, 99), (0, 9))
        got = a[:]
    assert np.array_equal(got["v"], values) and got["s"].tolist() == strings.tolist()


def test_opening_lists_each_folder_once(s3, server, tmp_path, monkeypatch):
    """Opening lists the array once, recursively (every folder's names and every file's size from one
    request: no listing per folder, no HEAD per fragment or per legacy file looked for), then fetches the
    schema and the footers' tails, which are all it reads, in one concurrent round (one batch, no lone read)."""
    from tdbformat.storage import FsspecStorage
    url, values = _tiled_array(server, tmp_path, sparse=False)
    gets = Gets(monkeypatch)
    heads, rounds = [], []
    real = s3fs.S3FileSystem._info
    monkeypatch.setattr(s3fs.S3FileSystem, "_info", lambda fs, path, **kw: heads.append(path) or real(fs, path, **kw))
    batch, lone = FsspecStorage._read_blocks, FsspecStorage._read
    monkeypatch.setattr(FsspecStorage, "_read_blocks", lambda st, blocks, what: rounds.append(len(blocks)) or
                        batch(st, blocks, what))
    monkeypatch.setattr(FsspecStorage, "_read", lambda st, *a: rounds.append("lone read") or lone(st, *a))
    arr = tdbformat.open_array(url, storage_options=s3)
    assert gets.lists == [url.removeprefix(f"s3://{BUCKET}/") + "/"], gets.lists
    assert heads == []
    assert rounds == [2], rounds  # the schema and the one fragment's metadata tail
    kinds = sorted("schema" if "/__schema/" in key else key.rsplit("/", 1)[-1] for key, _ in gets.gets)
    assert kinds == ["__fragment_metadata.tdb", "schema"], gets.gets
    assert np.array_equal(arr.read()["v"], values)


def test_opening_fetches_the_array_metadata_in_its_one_round(s3, server, tmp_path, monkeypatch):
    """An array with metadata (three writes, one a deletion): the open lists once and fetches the schema,
    the footer's tail and the metadata files in one round; ``meta`` then sends no request (it took two
    more rounds: a listing of ``__meta`` and the files), and equals TileDB-Py's."""
    from tdbformat.storage import FsspecStorage
    tiledb = pytest.importorskip("tiledb")
    path = tmp_path / "meta"
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=tiledb.Domain(tiledb.Dim("d", domain=(0, 9), tile=10, dtype=np.int64)),
                                                      attrs=[tiledb.Attr("v", np.int32)]))
    with tiledb.open(str(path), "w", timestamp=1) as a:
        a[:] = np.arange(10, dtype=np.int32)
        a.meta["text"], a.meta["gone"] = "a value", 1
    with tiledb.open(str(path), "w", timestamp=2) as a:
        a.meta["numbers"] = (1.5, 2.5)
    with tiledb.open(str(path), "w", timestamp=3) as a:
        del a.meta["gone"]
    with tiledb.open(str(path)) as a:
        want = dict(a.meta.items())
    url = f"s3://{BUCKET}/meta-{uuid.uuid4().hex}"
    server.fs.put(str(path), url.removeprefix("s3://"), recursive=True)
    gets, rounds = Gets(monkeypatch), []
    batch = FsspecStorage._read_blocks
    monkeypatch.setattr(FsspecStorage, "_read_blocks", lambda st, blocks, what: rounds.append(len(blocks)) or
                        batch(st, blocks, what))
    monkeypatch.setattr(FsspecStorage, "_read", lambda st, *a: pytest.fail(f"a lone read of {a}"))
    arr = tdbformat.open_array(url, storage_options=s3)
    assert len(gets.lists) == 1 and rounds == [1 + 1 + 3], (gets.lists, rounds)  # schema, footer, 3 metadata files
    sent = len(gets.gets)
    assert arr.meta == want and set(arr.metadata) == set(want)
    assert len(gets.gets) == sent and len(gets.lists) == 1  # nothing more sent


def _record_writes(monkeypatch, cls) -> list:
    """The paths ``cls`` finished writing, in order: an object exists once its PUT (or a block's upload)
    completes, and a committed file once it is renamed into place."""
    done, depth = [], [0]
    write, commit, writer = cls.write, cls.commit, cls.writer

    def record(call):
        def wrapped(self, path, *args):  # the outer call only: a commit may write through ``write``
            depth[0] += 1
            try:
                out = call(self, path, *args)
            finally:
                depth[0] -= 1
            if not depth[0]:
                done.append(str(path))
            return out
        return wrapped

    @contextlib.contextmanager
    def recorded_writer(self, path):
        with writer(self, path) as f:
            yield f
        done.append(str(path))

    monkeypatch.setattr(cls, "write", record(write))
    monkeypatch.setattr(cls, "commit", record(commit))
    monkeypatch.setattr(cls, "writer", recorded_writer)
    return done


def _tiny_schema(tmp_path):
    import tiledb
    dom = tiledb.Domain(tiledb.Dim("x", (0, 9), tile=5, dtype=np.int32))
    tiledb.Array.create(str(tmp_path / "schema"), tiledb.ArraySchema(domain=dom, attrs=[
        tiledb.Attr("v", np.int64), tiledb.Attr("s", str, var=True)]))
    return tdbformat.open_array(tmp_path / "schema").schema


#: what commits a fragment: the metadata file itself (v1-4), ``<fragment>.ok`` (v5-11), ``__commits/*.wrt`` (v12+)
_COMMITS = {4: "/__fragment_metadata.tdb", 9: ".ok", 22: ".wrt"}


@pytest.mark.parametrize("version", sorted(_COMMITS))
@pytest.mark.parametrize("where", ["s3", "memory", "local"])
def test_a_write_commits_its_fragment_last(where, version, s3, server, tmp_path, monkeypatch):
    """Every file of a fragment is whole in the store before the one that commits it is written; and a write
    that fails before that leaves the array as it was (TileDB's protocol: a reader sees a fragment whole or
    not at all)."""
    pytest.importorskip("tiledb")
    schema = _tiny_schema(tmp_path)
    url = {"s3": f"s3://{BUCKET}/commits-{uuid.uuid4().hex}", "memory": f"memory://commits-{uuid.uuid4().hex}",
           "local": str(tmp_path / "arr")}[where]
    cls = LocalStorage if where == "local" else FsspecStorage
    with tdbformat.storage.default_storage_options(s3 if where == "s3" else {}):
        tdbformat.create(url, schema, version=version)
        tdbformat.write(url, {"v": np.arange(5), "s": np.array(list("abcde"), object)}, subarray=[(0, 4)])
        done = _record_writes(monkeypatch, cls)
        tdbformat.write(url, {"v": np.arange(5, 10), "s": np.array(list("fghij"), object)}, subarray=[(5, 9)])
        assert done and done[-1].endswith(_COMMITS[version]), done
        assert not any(p.endswith(_COMMITS[version]) for p in done[:-1]), done

        def fail_at_the_metadata(self, path, *args):
            if str(path).endswith("__fragment_metadata.tdb"):
                raise FormatError("the store went away", file=str(path))
            return (writer if args == () else write)(self, path, *args)
        write, writer = cls.write, cls.writer
        monkeypatch.setattr(cls, "write", fail_at_the_metadata)
        monkeypatch.setattr(cls, "commit", fail_at_the_metadata)
        with pytest.raises(FormatError, match="went away"):
            tdbformat.write(url, {"v": np.zeros(10, np.int64), "s": np.array(list("zzzzzzzzzz"), object)},
                            subarray=[(0, 9)])
        monkeypatch.undo()
        got = tdbformat.open_array(url).read()
    assert got["v"].tolist() == list(range(10)) and got["s"].tolist() == list("abcdefghij")


class _RangedFiles(http.server.SimpleHTTPRequestHandler):
    """Static files and index pages, with byte ranges (``Range: bytes=a-b``) as web servers serve them."""

    def log_message(self, *args):
        pass

    def send_head(self):
        path, want = self.translate_path(self.path), self.headers.get("Range", "")
        if not want.startswith("bytes=") or not os.path.isfile(path):
            return super().send_head()
        size = os.path.getsize(path)
        a, b = want.removeprefix("bytes=").split("-")
        start = size - int(b) if a == "" else int(a)
        end = size - 1 if a == "" or b == "" else min(int(b), size - 1)
        with open(path, "rb") as f:
            f.seek(start)
            body = f.read(end - start + 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


@pytest.fixture(scope="module")
def http_corpus():
    """The corpus served over HTTP on loopback: its index pages list files without their sizes."""
    pytest.importorskip("aiohttp")
    handler = functools.partial(_RangedFiles, directory=str(corpus.CORPUS))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as srv:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{srv.server_address[1]}"
        srv.shutdown()


@pytest.mark.parametrize("case", S3_CASES, ids=corpus.case_id)
def test_corpus_reads_equal_over_http(case, http_corpus):
    """An array on a web server reads as the local copy does (HTTP listings give no sizes: each file's size
    comes from a HEAD when first needed), and ``parse_file`` takes its URLs."""
    _reads_as_the_local_copy(case, f"{http_corpus}/{corpus.root(case).relative_to(corpus.CORPUS).as_posix()}")
    schema = sorted((corpus.root(case) / "__schema").glob("__*")) if (corpus.root(case) / "__schema").is_dir() \
        else [corpus.root(case) / "__array_schema.tdb"]
    rel = schema[-1].relative_to(corpus.CORPUS).as_posix()
    remote, here = (tdbformat.parse_file(p, key=corpus.key(case)) for p in (f"{http_corpus}/{rel}", schema[-1]))
    assert (remote.kind, remote.build()) == (here.kind, schema[-1].read_bytes())


@pytest.fixture(scope="module")
def s3_group(server, tmp_path_factory):
    """(url, local path, arrays) of a TileDB-Py group of ``arrays`` members (half in a nested group), each a
    dense array of two fragments, uploaded to the S3 server."""
    tiledb = pytest.importorskip("tiledb")
    import pygroups

    root, arrays = tmp_path_factory.mktemp("s3group") / "g", 6
    tiledb.Group.create(str(root))
    tiledb.Group.create(str(root / "sub"))
    with tiledb.Group(str(root), "w") as top, tiledb.Group(str(root / "sub"), "w") as sub:
        for i in range(arrays):
            where = (root / "sub") if i % 2 else root
            pygroups.dense(tiledb, where / f"a{i}", writes=2)
            (sub if i % 2 else top).add(f"a{i}", name=f"a{i}", relative=True)
        top.add("sub", name="sub", relative=True)
    url = f"s3://{BUCKET}/group-{uuid.uuid4().hex}"
    server.fs.put(str(root), url.removeprefix("s3://"), recursive=True)
    return url, root, arrays


@pytest.mark.parametrize("command", ["versions", "du", "explain", "history"])
def test_a_group_is_listed_once_and_each_member_read_in_one_round(command, s3, s3_group, monkeypatch):
    """A group's members are read through the group's one recursive listing: no listing per array (nor a
    HEAD per file); each array costs its schema and its two footers, fetched in one concurrent round. The
    answers equal the local folder's."""
    from tdbformat.check.du import du
    from tdbformat.check.explain import explain
    from tdbformat.check.gate import versions
    from tdbformat.check.history import history
    from tdbformat.storage import FsspecStorage

    fn = {"versions": versions, "du": du, "explain": explain, "history": history}[command]
    url, local, arrays = s3_group
    gets, rounds = Gets(monkeypatch), []
    batch = FsspecStorage._read_blocks
    monkeypatch.setattr(FsspecStorage, "_read_blocks", lambda st, blocks, what: rounds.append(len(blocks)) or
                        batch(st, blocks, what))
    s3fs.S3FileSystem.clear_instance_cache()
    with tdbformat.storage.default_storage_options(s3):
        got = fn(url)
    array_gets = [key for key, _ in gets.gets if "/__group/" not in key and "/__meta/" not in key]
    assert len(array_gets) == 3 * arrays, array_gets  # (TileDB's open reads as many)
    assert rounds.count(3) == arrays, rounds
    assert len(gets.lists) <= 6, gets.lists  # the tree, twice, and the two groups' details folders
    want = fn(local)
    if command == "du":
        assert (got["bytes"], got["files"], got["by_state"]) == (want["bytes"], want["files"], want["by_state"])
    elif command == "history":
        assert [(e["timestamp"], e["kind"], e["object"]) for e in got["events"]] == \
            [(e["timestamp"], e["kind"], e["object"]) for e in want["events"]]
    else:
        assert [r.get("findings", r.get("format_version")) for r in got["objects"]] == \
            [r.get("findings", r.get("format_version")) for r in want["objects"]]
