"""Kaitai's Python parsers, compiled from every .ksy of spec_versions/ksy, read every file of conformance/ to its
expected.json, leaf by leaf (the suite's JSON, not tdbformat's in-memory values): every structure the suite
has, the edge cases' 64-bit values included; the same walk as conformance/js/run.js, in Python."""

from __future__ import annotations

import enum
import gzip
import importlib.util
import json
import math
import shutil
import struct
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "conformance"
VAR = 2**32 - 1


@pytest.fixture(scope="session")
def py_parsers(compiled):
    """The walk over the Python parsers that tests/conftest.py compiles once per session."""
    ksy, errors, folders = compiled
    assert not [e for e in errors.values() if e is not None]
    return Suite(next(iter(folders.values())).parent)


class Suite:
    """The compiled parsers of one session and the walk of a suite entry (conformance/js/run.js's, in Python)."""

    def __init__(self, folder: Path):
        self.folder, self.classes = folder, {}

    def parse(self, ident, version, data, params=()):
        from kaitaistruct import KaitaiStream
        import io

        folder = f"v{version:02d}" if isinstance(version, int) else f"v{version}"  # v01..v23, v0.x, v1.0..v1.3
        path = self.folder / folder / f"{ident}.py"
        if path not in self.classes:
            spec = importlib.util.spec_from_file_location(f"ksy_py_{folder.replace('.', '_')}_{ident}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.classes[path] = getattr(module, "".join(w.capitalize() for w in ident.split("_")))
        return self.classes[path](*params, KaitaiStream(io.BytesIO(bytes(data))))

    def tile(self, ident, data, params=(), at=0):
        """{generic_tile, payload}: the tile at ``at``, its GZIP chunks inflated, the payload parsed."""
        version = struct.unpack_from("<I", data, at)[0]
        gt = self.parse("generic_tile", version, data[at:])
        filters = [f.type.name for f in gt.filter_pipeline.filters]
        chunks = []
        for c in gt.tile.chunks:
            if not filters:
                chunks.append(c.data)
                continue
            assert filters == ["gzip"], filters
            meta = self.parse("gzip_zstd_lz4_rle_bzip2_double_delta_delta_chunk_metadata", version, c.metadata)
            pos = 0
            for i, part in enumerate(meta.parts):
                if i >= meta.num_metadata_parts:
                    chunks.append(zlib.decompress(c.data[pos:pos + part.compressed_size]))
                pos += part.compressed_size
        return {"generic_tile": gt, "payload": self.parse(ident, version, b"".join(chunks), params)}

    def schema(self, data):
        s = self.tile("array_schema", data)["payload"]
        dims = [(d.datatype if hasattr(d, "datatype") else s.domain.domain_type, getattr(d, "cell_val_num", 1) == VAR)
                for d in s.domain.dimensions]  # v1-4: the domain's type
        attrs = [(a.datatype, a.cell_val_num == VAR) for a in s.attributes]
        params = [len(attrs), len(dims), [int(t.value) for t, _ in dims], [v for _, v in dims]]
        return attrs, dims, params

    def fragment_metadata(self, data, entry, array):
        ctx = entry["context"]
        attrs, dims, params = self.schema((array / ctx["schema"]).read_bytes())
        if "footer" not in ctx:
            return {"legacy": self.tile("fragment_metadata_v1_2", data, params)}
        span = data[ctx["footer"]["offset"]:ctx["footer"]["offset"] + ctx["footer"]["size"]]
        version = struct.unpack_from("<I", span)[0]
        footer = self.parse("fragment_metadata_footer", version, span, params)
        u64 = 10  # Datatype.UINT64
        fields = [(int(t.value), v) for t, v in attrs] + [(int(dims[0][0].value), False)]
        if version >= 5:
            fields += [(int(t.value), v) for t, v in dims] + [(u64, False)] * (
                (1 if getattr(footer, "has_timestamps", 0) else 0) + (2 if getattr(footer, "has_delete_meta", 0) else 0))
        order = next((s.data for s in (getattr(footer, "optional_sections", None) or [])
                      if hasattr(s.data, "min_offsets")), None)
        out = {"footer": footer}
        for name in entry["value"]:
            if name == "footer":
                continue
            key, ident, kind, value = _SECTIONS[name]
            offsets = getattr(order if kind == "dimension" else footer, key)

            def one(at, i):
                field = [(int(t.value), v) for t, v in dims][i] if kind == "dimension" else fields[i]
                p = {"schema": params, "fields": [len(fields), [f[0] for f in fields]], None: []}.get(kind, field)
                t = self.tile(ident, data, p, at)
                return _VALUES[value](t["payload"]) if value else t

            out[name] = [one(at, i) for i, at in enumerate(offsets)] if isinstance(offsets, list) else one(offsets, 0)
        return out

    def tile1x(self, ident, label, data, params=()):
        """A 1.x generic tile (30-byte header, no version): {generic_tile, payload}, its chunks decompressed."""
        gt = self.parse("generic_tile", label, data)
        codec = gt.compressor.name
        decode = {"gzip": zlib.decompress, "blosc_zstd": _blosc}.get(codec)
        assert decode or codec == "no_compression", codec
        payload = b"".join(decode(c.data) for c in gt.body.chunks) if decode else gt.body
        return {"generic_tile": gt, "payload": self.parse(ident, label, payload, params)}

    def prev1(self, entry, array: Path, label: str, data: bytes):
        """A file of a pre-v1 dialect (0.x: label "0.x"; 1.x: "1.2", "1.3")."""
        def params():
            schema = (array / entry["context"]["schema"]).read_bytes()
            if label == "0.x":
                s = self.parse("array_schema", label, schema)
                return [s.attribute_num, s.dim_num, int(s.types[-1].value)]
            s = self.tile1x("array_schema", label, schema)["payload"]
            return [s.attribute_num, s.dim_num, int(s.domain_type.value)]

        kind = entry["kind"]
        if kind == "array_schema_0x":
            return self.parse("array_schema", label, data)
        if kind == "book_keeping_0x":
            return self.parse("book_keeping", label, gzip.decompress(data), params())
        if kind == "array_schema_1x":
            return self.tile1x("array_schema", label, data)
        if kind == "fragment_metadata_1x":
            return self.tile1x("fragment_metadata", label, data, params())
        if kind in ("data_0x", "data_1x"):
            c = entry["context"]
            step = c.get("tile_bytes")  # an uncompressed 0.x field: no offsets; a var one: one span
            offsets = c.get("tile_offsets") or (list(range(0, len(data), step)) if step else []) or [0]
            cut = [offsets] if kind == "data_0x" else [offsets, c["compressor"] != "NO_COMPRESSION"]
            return self.parse("data_file", label, data, cut).tiles
        return None

    def entry(self, entry, array: Path, writer_version):
        data = (array / entry["file"]).read_bytes()
        if isinstance(writer_version, str):
            return self.prev1(entry, array, writer_version, data)
        kind = entry["kind"]
        if kind in ("array_schema", "enumeration", "metadata", "group_details", "delete_commit", "update_commit"):
            return self.tile(kind, data)
        if kind in _TEXT:
            return self.parse(_TEXT[kind], writer_version, data)
        if kind == "commit":
            return self.parse("commit_marker", writer_version, data)
        if kind == "data":
            return self.parse("data_file", writer_version, data).items
        if kind == "fragment_metadata":
            return self.fragment_metadata(data, entry, array)
        if kind == "consolidated_fragment_metadata":
            return self.tile(kind, data, self.schema((array / entry["context"]["schema"]).read_bytes())[2])
        return None


def _blosc(frame: bytes) -> bytes:
    """A blosc 1.x frame of one-byte items compressed with zstd (TileDB 1.0-1.2's BLOSC_ZSTD generic tiles)."""
    import zstandard

    flags, typesize = frame[2], frame[3]
    nbytes, blocksize = struct.unpack_from("<II", frame, 4)
    if flags & 0x02:  # stored
        return frame[16:16 + nbytes]
    assert flags >> 5 == 4 and typesize == 1, (flags, typesize)
    out = []
    for i in range(-(-nbytes // blocksize)):
        start = struct.unpack_from("<I", frame, 16 + 4 * i)[0]
        size = struct.unpack_from("<i", frame, start)[0]
        block = frame[start + 4:start + 4 + size]
        n = min(blocksize, nbytes - i * blocksize)
        out.append(block if size == n else zstandard.ZstdDecompressor().decompress(block, max_output_size=n))
    return b"".join(out)


_TEXT = {"vacuum": "vacuum_file", "ignore": "ignore_file", "consolidated_commits": "consolidated_commits"}
_SECTIONS = {  # as conformance/js/run.js's SECTIONS
    "rtree": ("rtree_offset", "r_tree", "schema", None),
    "tile_offsets": ("tile_offsets_offsets", "tile_offsets", None, "data"),
    "tile_var_offsets": ("tile_var_offsets_offsets", "tile_offsets", None, "data"),
    "tile_var_sizes": ("tile_var_sizes_offsets", "tile_offsets", None, "data"),
    "tile_validity_offsets": ("tile_validity_offsets_offsets", "tile_offsets", None, "data"),
    "tile_mins": ("tile_min_offsets", "tile_mins_maxes", "field", None),
    "tile_maxes": ("tile_max_offsets", "tile_mins_maxes", "field", None),
    "tile_global_order_mins": ("min_offsets", "tile_mins_maxes", "dimension", None),
    "tile_global_order_maxes": ("max_offsets", "tile_mins_maxes", "dimension", None),
    "tile_sums": ("tile_sum_offsets", "tile_sums", "field", "data"),
    "tile_null_counts": ("tile_null_count_offsets", "tile_offsets", None, "data"),
    "fragment_summary": ("fragment_min_max_sum_null_count_offset", "fragment_min_max_sum_null_count", "fields",
                         "fields"),
    "processed_conditions": ("processed_conditions_offset", "processed_conditions", None, "markers"),
}
_VALUES = {"data": lambda p: p.data, "fields": lambda p: p.fields,
           "markers": lambda p: [c.marker for c in p.conditions]}


def _unwrap(k):
    name = type(k).__name__
    if name in ("TypedValue", "FieldValue", "FieldSum"):
        return k.value
    if name.startswith("Run"):
        return k.items
    if name == "NdRectangle":
        return k.ranges
    if name == "TileSpan":  # a pre-v1 data tile
        return k.sub_tiles if hasattr(k, "sub_tiles") else k.raw
    if name == "CoordsPair":
        return [k.first, k.last]
    if name == "NdRange":
        if k.is_var:
            return {"range_size": k.range_size, "start_size": k.start_size, "start": k.start_var, "end": k.end_var}
        return {"start": k.start, "end": k.end}
    return k


def _same(k, e) -> bool:
    if e is None:
        return k is None
    if isinstance(e, bool):
        return k is e or k == int(e)
    if isinstance(e, enum.Enum) or isinstance(k, enum.Enum):
        return isinstance(k, enum.Enum) and k.name.upper().rstrip("_") == e
    if isinstance(e, (int, float)):
        return not isinstance(k, (bytes, str)) and (k == e or (isinstance(e, float) and math.isnan(e) and math.isnan(k)))
    if isinstance(e, str):
        return k == e
    if "bytes_hex" in e:
        return (bytes([k]) if isinstance(k, int) else bytes(k)).hex() == e["bytes_hex"]
    if "int" in e:
        return isinstance(k, int) and k == int(e["int"])
    return isinstance(k, float) and repr(k) == repr(float(e["float"]))


def compare(k, e, where, out):
    k = _unwrap(k)
    if isinstance(e, dict) and not ({"bytes_hex", "int", "float"} & set(e)):
        if k is None or isinstance(k, (int, float, str, bytes)):
            return out["diffs"].append(f"{where}: an object, kaitai {k!r:.60}")
        for name, v in e.items():
            compare(k.get(name) if isinstance(k, dict) else getattr(k, name, None), v, f"{where}.{name}", out)
        return None
    if isinstance(e, list):
        if isinstance(k, dict) and {"start", "end"} <= set(k):
            k = [k["start"], k["end"]]
        if not isinstance(k, list) or len(k) != len(e):
            return out["diffs"].append(f"{where}: {len(e)} items, kaitai {k!r:.60}")
        for i, (a, b) in enumerate(zip(k, e)):
            compare(a, b, f"{where}[{i}]", out)
        return None
    out["leaves"] += 1
    if not _same(k, e):
        out["diffs"].append(f"{where}: {json.dumps(e)} != kaitai {k!r:.60}")
    return None


#: empty files that only mark a folder: no .ksy describes them
_EMPTY_MARKERS = {"lock", "group_marker", "fragment_marker", "consolidation_lock"}


def run(suite: Suite, docs) -> dict:
    out = {"files": 0, "compared": 0, "leaves": 0, "no_ksy": {}, "kinds": set(), "diffs": []}
    for doc in docs:
        label = doc.parent.parent.name.split("_")[0][1:]  # "22", or a pre-v1 dialect: "0.x", "1.2"...
        version = int(label) if label.isdigit() else label
        for entry in json.loads(doc.read_text())["files"]:
            out["files"] += 1
            where = f"{doc.parent.parent.name}/{doc.parent.name}/array/{entry['file']}"
            try:
                got = suite.entry(entry, doc.parent / "array", version)
            except Exception as e:  # the compiled parser refused the file
                out["diffs"].append(f"{where}: kaitai raised {type(e).__name__}: {e}")
                continue
            if got is None:
                out["no_ksy"][entry["kind"]] = out["no_ksy"].get(entry["kind"], 0) + 1
                continue
            out["compared"] += 1
            out["kinds"].add(entry["kind"])
            compare(got, entry["value"], where, out)
    return out


def test_every_suite_file_reads_to_its_expected_json_in_python(py_parsers):
    docs = sorted(SUITE.glob("v*/*/expected.json"))
    out = run(py_parsers, docs)
    print({k: v for k, v in out.items() if k != "diffs"})
    assert not out["diffs"], "\n".join(out["diffs"][:40])
    assert set(out["no_ksy"]) <= _EMPTY_MARKERS
    assert out["compared"] == out["files"] - sum(out["no_ksy"].values()) and out["leaves"] > 100_000


def test_the_corpus_soma_and_pandas_read_to_their_suite_json_in_python(py_parsers, corpus_suite):
    """Beyond the committed suite: the corpus (sampled), a tiledbsoma experiment and pandas frames (SOMA's
    int64 domains near 2^63, saturated sums, pre-1970 datetimes), every structure that has a .ksy."""
    docs = sorted(corpus_suite.glob("v*/*/expected.json"))
    out = run(py_parsers, docs)
    print({k: v for k, v in out.items() if k != "diffs"})
    assert not out["diffs"], "\n".join(out["diffs"][:40])
    kinds = {e["kind"] for d in docs for e in json.loads(d.read_text())["files"]}
    assert out["kinds"] == kinds - _EMPTY_MARKERS and out["compared"] > 1500


def test_a_changed_expected_leaf_is_a_disagreement(py_parsers, tmp_path):
    case = next(SUITE.glob("v22_*/edge_int64_sparse"))
    copy = tmp_path / case.parent.name / case.name
    shutil.copytree(case, copy)
    doc = json.loads((copy / "expected.json").read_text())
    fm = next(e for e in doc["files"] if e["kind"] == "fragment_metadata")
    lo = fm["value"]["footer"]["non_empty_domain"][0][0]
    fm["value"]["footer"]["non_empty_domain"][0][0] = {"int": str(int(lo["int"]) + 1)}
    (copy / "expected.json").write_text(json.dumps(doc))
    out = run(py_parsers, [copy / "expected.json"])
    assert [d.split(".tdb")[-1] for d in out["diffs"]] == [
        f'.footer.non_empty_domain[0][0]: {{"int": "{int(lo["int"]) + 1}"}} != kaitai {lo["int"]}']
