"""Write the corpus arrays for behaviours that TileDB's code has and the shared corpus does not show, with
TileDB-Py (0.36: format v22), into tests/data/behaviours/<case>/ with a truth.json of what TileDB-Py reads.

    python3 scripts/make_behaviours.py [OUT [CASE ...]]

- delete_conditions: delete commits whose conditions hold IN, NOT_IN and AND/OR expression nodes;
- consolidated_commits_with_delete: a `.con` file that embeds a whole `.del` file;
- fragment_newer_than_schema: a v5 array (copied from the corpus) written to by TileDB 2.30: a schema older
  than v7 gets fragments at the library's version (ArraySchema::write_version), so a v22 fragment names the
  v5 `__array_schema.tdb`;
- back_compat_v11: a v11 array (copied from the corpus) written to by TileDB 2.30, which keeps writing v11
  fragments (the schema is v7 or newer) with the 8 footer bytes of the fragment summary offset, then its
  fragment metadata consolidated (`.meta`): the .meta's footer offsets are 8 bytes off, and TileDB 2.30 cannot
  open the array any more; its truth is TileDB-Py's read before the consolidation;
- escaped_names_v8: a v8 schema made here from the corpus's, with attribute names that v8 percent-encodes in
  file names, written to by TileDB 2.30 (a v8 fragment, its files named as TileDB escapes them);
- update_commit: an update commit (`.upd`, "b = 9.5 where a < 3"), through TileDB's C API (TileDB-Py has no
  update query; updates are experimental and `sm.allow_updates_experimental` enables them). TileDB's readers
  do not apply updates yet, so the read is unchanged;
- evolved_pre_v10_array: the same, then evolved (a v22 schema in `__schema/` adds an attribute). TileDB 2.30
  cannot open it any more ("Reading data past end of serialized data size"): its truth is TileDB-Py's read
  before the evolution, with the new attribute's fill value in every cell;
- attribute_added_back: a sparse array whose zstd attribute `a` is dropped and added back with double delta and
  gzip. TileDB decodes the first fragment's tiles of `a` with the new pipeline and fails ("GZipException");
  its truth is the cells written;
- same_timestamp_writes: two sparse writes at the same timestamp over some of the same coordinates. TileDB's
  global-order read keeps the cell of the fragment whose name sorts last; its row-major read keeps the other
  one for some of those cells. Written again until the two reads differ (the fragments' UUIDs decide).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import tiledb

ROOT = Path(__file__).resolve().parent.parent
V5 = ROOT / "tests/data/corpus/v5_c-api_core-2.0.8/sparse_2d_rtree/array"
V8 = ROOT / "tests/data/corpus/v8_c-api_core-2.2.9/sparse_2d_rtree/array"
V11 = ROOT / "tests/data/corpus/v11_c-api_core-2.7.2/sparse_2d_rtree/array"


def _sparse(uri: str) -> None:
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 999), tile=100, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, capacity=8, attrs=[
        tiledb.Attr("a", dtype=np.int32), tiledb.Attr("b", dtype=np.float64), tiledb.Attr("s", dtype=str, var=True)]))
    with tiledb.open(uri, "w", timestamp=1) as A:
        d = np.arange(0, 40, dtype=np.int64)
        A[d] = {"a": (d % 13).astype(np.int32), "b": d / 4.0, "s": np.array([f"s{i % 5}" for i in d], dtype=object)}


def _delete(uri: str, ts: int, cond: str) -> None:
    with tiledb.open(uri, "d", timestamp=ts) as A:
        A.query(cond=cond).submit()


def delete_conditions(uri: str) -> dict:
    _sparse(uri)
    conds = ["a in [1, 5]", "a not in [0, 2, 3, 4, 6, 7, 8, 9]", "b > 7.0 and a < 12", "s == 's3' or a == 11"]
    for ts, cond in enumerate(conds, start=2):
        _delete(uri, ts, cond)
    return {"deletes": conds, "timestamps": [2, 3, 4, 5]}


def consolidated_commits_with_delete(uri: str) -> dict:
    _sparse(uri)
    _delete(uri, 2, "a == 3")
    with tiledb.open(uri, "w", timestamp=3) as A:
        A[np.array([100, 101], dtype=np.int64)] = {"a": np.array([3, 4], np.int32), "b": np.array([0.5, 1.5]),
                                                    "s": np.array(["x", "y"], dtype=object)}
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    return {"deletes": ["a == 3"], "consolidated": "commits"}


def fragment_newer_than_schema(uri: str) -> dict:
    shutil.copytree(V5, uri)
    coords = (np.array([1001 % 1000, 2], dtype=np.int64), np.array([0.25, 0.5]))
    values = {"a": np.array([7, 8], np.int32), "s": np.array(["new", "newer"], dtype=object)}
    with tiledb.open(uri, "w") as A:  # at now: later than the corpus's writes, and visible to a default read
        A[coords] = values
    return {"source": str(V5.relative_to(ROOT))}


def back_compat_v11(uri: str) -> dict:
    shutil.copytree(V11, uri)
    with tiledb.open(uri, "w") as A:
        A[np.array([3, 4], np.int64), np.array([5.5, 6.5])] = {"a": np.array([1, 2], np.int32),
                                                                "s": np.array(["p", "qq"], dtype=object)}
    with tiledb.open(uri) as A:
        before = A.query(order="G")[:]
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "fragment_meta"}))
    return {"source": str(V11.relative_to(ROOT)), "consolidated": "fragment_meta",
            "tiledb_error_after_consolidation": _open_error(uri),
            "read_global_order": {k: _plain(v) for k, v in before.items()}}


def _open_error(uri: str) -> str:
    """TileDB's error opening ``uri``, which it is expected to fail on."""
    try:
        tiledb.open(uri).close()
    except tiledb.TileDBError as e:
        return str(e)
    raise SystemExit(f"TileDB opens {uri} now: make its truth from TileDB's read instead")


#: names with characters v8 percent-encodes in file names (fragment_metadata.cc encode_name)
ESCAPED = {"a": "a<b>&c", "s": 's/x?|"\\'}


def escaped_names_v8(uri: str) -> dict:
    from tdbformat.structs import ArraySchema

    schema = ArraySchema.parse((V8 / "__array_schema.tdb").read_bytes())
    for attr in schema.attributes:
        attr.name = ESCAPED[attr.name]
    Path(uri).mkdir()
    (Path(uri) / "__array_schema.tdb").write_bytes(ArraySchema.build(schema))
    (Path(uri) / "__lock.tdb").write_bytes(b"")
    with tiledb.open(uri, "w") as A:
        A[np.array([3, 4], np.int64), np.array([5.5, 6.5])] = {ESCAPED["a"]: np.array([1, 2], np.int32),
                                                                ESCAPED["s"]: np.array(["p", "qq"], dtype=object)}
    return {"source": str(V8.relative_to(ROOT)), "attribute_names": list(ESCAPED.values())}


def _c_api():
    """libtiledb as TileDB-Py ships it, through ctypes, with each call checked."""
    import ctypes
    import glob
    import os

    lib = ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(tiledb.__file__), "..", "tiledb.libs",
                                             "libtiledb-*.so*"))[0])

    def call(name, *args):
        rc = getattr(lib, name)(*args)
        if rc != 0:
            raise SystemExit(f"{name} returned {rc}")
    return ctypes, call


def update_commit(uri: str) -> dict:
    _sparse(uri)
    ctypes, call = _c_api()
    p = ctypes.c_void_p
    config, err, ctx, array, query, cond = p(), p(), p(), p(), p(), p()
    call("tiledb_config_alloc", ctypes.byref(config), ctypes.byref(err))
    call("tiledb_config_set", config, b"sm.allow_updates_experimental", b"true", ctypes.byref(err))
    call("tiledb_ctx_alloc", config, ctypes.byref(ctx))
    call("tiledb_array_alloc", ctx, uri.encode(), ctypes.byref(array))
    call("tiledb_array_set_open_timestamp_end", ctx, array, ctypes.c_uint64(2))
    call("tiledb_array_open", ctx, array, 3)  # TILEDB_UPDATE
    call("tiledb_query_alloc", ctx, array, 3, ctypes.byref(query))
    three, new = ctypes.c_int32(3), ctypes.c_double(9.5)
    call("tiledb_query_condition_alloc", ctx, ctypes.byref(cond))
    call("tiledb_query_condition_init", ctx, cond, b"a", ctypes.byref(three), ctypes.c_uint64(4), 0)  # LT
    call("tiledb_query_set_condition", ctx, query, cond)
    call("tiledb_query_add_update_value", ctx, query, b"b", ctypes.byref(new), ctypes.c_uint64(8))
    call("tiledb_query_submit", ctx, query)
    call("tiledb_array_close", ctx, array)
    return {"update": "b = 9.5 where a < 3", "timestamp": 2}


def evolved_pre_v10_array(uri: str) -> dict:
    fragment_newer_than_schema(uri)
    with tiledb.open(uri) as A:
        before = A.query(order="G")[:]
    se = tiledb.ArraySchemaEvolution(tiledb.Ctx())
    se.add_attribute(tiledb.Attr("added", dtype=np.int32))
    se.array_evolve(uri)
    error = _open_error(uri)
    fill = np.iinfo(np.int32).min  # TileDB's default fill value of an int32 attribute
    cells = {**before, "added": np.full(len(before["a"]), fill, np.int32)}
    return {"source": str(V5.relative_to(ROOT)), "evolved": "added attribute 'added' (int32)",
            "tiledb_error_after_evolution": error, "read_global_order": {k: _plain(v) for k, v in cells.items()}}


def attribute_added_back(uri: str) -> dict:
    dim = tiledb.Dim("d", domain=(1, 10), tile=5, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, attrs=[
        tiledb.Attr("a", dtype=np.int32, filters=[tiledb.ZstdFilter()]), tiledb.Attr("b", dtype=np.int32)]))
    cells = {"d": np.arange(1, 11), "a": np.arange(10, dtype=np.int32) * 300, "b": np.arange(10, dtype=np.int32)}
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[cells["d"][:5]] = {k: cells[k][:5] for k in "ab"}
    for ts, change in ((2, lambda se: se.drop_attribute("a")), (3, lambda se: se.add_attribute(tiledb.Attr(
            "a", dtype=np.int32, filters=[tiledb.DoubleDeltaFilter(), tiledb.GzipFilter()])))):
        se = tiledb.ArraySchemaEvolution()
        change(se)
        se.timestamp(ts)
        se.array_evolve(uri)
    with tiledb.open(uri, "w", timestamp=4) as A:
        A[cells["d"][5:]] = {k: cells[k][5:] for k in "ab"}
    try:
        tiledb.open(uri)[:]
    except tiledb.TileDBError as e:
        error = str(e)
    return {"evolved": "a (int32, zstd) dropped at 2, added back at 3 (int32, double delta + gzip)",
            "tiledb_error_reading": error, "read_global_order": {k: _plain(v) for k, v in cells.items()}}


def same_timestamp_writes(uri: str) -> dict:
    for _ in range(40):
        shutil.rmtree(uri, ignore_errors=True)
        dim = tiledb.Dim("x", domain=(0, 99), tile=4, dtype=np.int64)
        tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, capacity=4,
                                                    attrs=[tiledb.Attr("a", dtype=np.int32)]))
        for value, xs in ((1, [2, 5, 9, 12, 17, 23, 40, 41, 57, 60, 77, 80, 93]),
                          (2, [5, 9, 11, 23, 30, 41, 42, 60, 61, 80, 88])):
            with tiledb.open(uri, "w", timestamp=3) as A:
                A[np.array(xs)] = {"a": np.full(len(xs), value, np.int32)}
        with tiledb.open(uri) as A:
            rows, cells = A.query(order="C")[:], A.query(order="G")[:]
        if rows["a"].tolist() != cells["a"][np.argsort(cells["x"])].tolist():
            return {"tiledb_row_major_read": {k: _plain(v) for k, v in rows.items()},
                    "read_global_order": {k: _plain(v) for k, v in cells.items()}}
    raise RuntimeError("TileDB's row-major and global-order reads agreed 40 times")


KEY = "0123456789abcdeF0123456789abcdeF"


def evolved_encrypted_array(uri: str) -> dict:
    ctx = tiledb.Ctx({"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": KEY})
    dim = tiledb.Dim("x", domain=(0, 9), tile=5, dtype=np.int64, ctx=ctx)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim, ctx=ctx), sparse=True, ctx=ctx,
                                                attrs=[tiledb.Attr("a", dtype=np.int32, ctx=ctx)]), ctx=ctx)
    with tiledb.open(uri, "w", timestamp=1, ctx=ctx) as A:
        A[np.array([1, 4, 7])] = {"a": np.array([10, 40, 70], np.int32)}
    se = tiledb.ArraySchemaEvolution(ctx)
    se.add_attribute(tiledb.Attr("added", dtype=np.int32, ctx=ctx))
    se.timestamp(2)
    se.array_evolve(uri)
    try:
        tiledb.open(uri, ctx=ctx).close()
    except tiledb.TileDBError as e:
        error = str(e)
    fill = np.iinfo(np.int32).min
    return {"key": KEY, "evolved": "added attribute 'added' (int32)", "tiledb_error_after_evolution": error,
            "read_global_order": {"x": [1, 4, 7], "a": [10, 40, 70], "added": [fill] * 3}}


CASES = {f.__name__: f for f in (delete_conditions, consolidated_commits_with_delete, fragment_newer_than_schema,
                                 evolved_pre_v10_array, back_compat_v11, escaped_names_v8, update_commit,
                                 attribute_added_back, same_timestamp_writes, evolved_encrypted_array)}


def _plain(v):
    return v.tolist() if isinstance(v, np.ndarray) and v.dtype != object else [str(x) for x in v]


def main(out: Path, names=None) -> None:
    for name, make in CASES.items():
        if names and name not in names:
            continue
        case = out / name
        shutil.rmtree(case, ignore_errors=True)
        case.mkdir(parents=True)
        facts = make(str(case / "array"))
        if "read_global_order" not in facts:
            with tiledb.open(str(case / "array")) as A:
                facts["read_global_order"] = {k: _plain(v) for k, v in A.query(order="G")[:].items()}
        truth = {"case": name, "tiledb_py_version": tiledb.__version__,
                 "libtiledb_version": ".".join(map(str, tiledb.libtiledb.version())), **facts}
        (case / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(case)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/data/behaviours", sys.argv[2:])
