"""Kaitai Struct (``.ksy``) export of the pre-v1 dialects (prev1.md): 0.x (TileDB 0.1-0.6) and 1.0-1.3.

The same walker as :mod:`tdbformat.spec.ksy`, over the dialects' declarations (:mod:`tdbformat.structs.prev1_0x`,
:mod:`tdbformat.structs.prev1_1x`) at a library version instead of a format version: ``v0.x`` and
``v1.0``-``v1.3`` folders beside ``v01``-``v23``. What the walker cannot read is said here, as in
:data:`tdbformat.spec.ksy._OVERRIDES`: the coordinates type of MBRs and bounding coordinates (a root param, the
schema's), the per-field counts (the schema's attributes), a 1.x generic tile's body (raw when uncompressed,
else a compressed tile). Kaitai cannot decompress: the book-keeping (a gzip member) and a compressed 1.x
generic tile are described by their uncompressed payload, as a v1+ generic tile is. A data file is cut at
the tile offsets that the fragment metadata holds: they are its params.
"""

from __future__ import annotations

from pathlib import Path

import construct

from ..enums import Datatype, LegacyDatatype
from ..storage import LocalStorage
from ..structs.prev1_1x import ChunkedTile1x, DialectSection
from ..versions import DIALECT_1X_LABELS
from . import structures
from .ksy import _Builder, _snake, ksy_text

__all__ = ["DIALECT_VERSIONS", "prev1_ksy_documents", "write_prev1_ksy"]

#: the library version each exported dialect folder is walked at (1.0 and 1.1 share a layout, as 1.2 and 1.3)
DIALECT_VERSIONS = {"0.x": (0,), **{label: (1, int(label[2]), 0) for label in DIALECT_1X_LABELS}}
_NOT_EXPORTED = ("Data file (0.x)", "Data file (1.x)")  # functions of the tile offsets: see _data_file

_BOXES = {"type": "typed_value(_root.coords_type)", "repeat": "expr", "repeat-expr": "num * 2 * _root.dim_num"}
_PER_FIELD = {"repeat-expr": "_root.attribute_num + 1"}
_PER_ATTRIBUTE = {"repeat-expr": "_root.attribute_num"}
_SCHEMA_PARAMS = [
    {"id": "attribute_num", "type": "u4", "doc": "attributes of the array schema"},
    {"id": "dim_num", "type": "u4", "doc": "dimensions of the array schema"},
    {"id": "coords_type", "type": "u1", "doc": "the coordinates' datatype (1.x domain_type, 0.x the last of types)"},
]


def _type_size(datatype: str) -> str:
    """A Kaitai expression for the bytes of one value of the legacy datatype expression ``datatype``."""
    by_size = {}
    for d in LegacyDatatype:
        by_size.setdefault(Datatype(int(d)).size, []).append(f"{datatype} == {int(d)}")
    *sizes, last = sorted(by_size)
    return "".join(f"({' or '.join(by_size[n])}) ? {n} : " for n in sizes) + str(last)


_DOMAIN_TYPE_SIZE = _type_size("_parent.domain_type.to_i")


class _Prev1Builder(_Builder):
    """The walker at a library version of a pre-v1 dialect."""

    overrides = {
        ("mbrs", "data"): lambda v: _BOXES,
        ("bounding_coords", "data"): lambda v: _BOXES,
        ("fragment_metadata_payload", "tile_offsets"): lambda v: _PER_FIELD,
        ("fragment_metadata_payload", "file_sizes"): lambda v: _PER_FIELD,
        ("fragment_metadata_payload", "tile_var_offsets"): lambda v: _PER_ATTRIBUTE,
        ("fragment_metadata_payload", "tile_var_sizes"): lambda v: _PER_ATTRIBUTE,
        ("fragment_metadata_payload", "file_var_sizes"): lambda v: _PER_ATTRIBUTE,
        ("dimension1x", "domain"): lambda v: {"size": f"2 * ({_DOMAIN_TYPE_SIZE})"},
        ("dimension1x", "tile_extent"): lambda v: {"size": f"null_tile_extent != 0 ? 0 : ({_DOMAIN_TYPE_SIZE})"
                                                   if v >= (1, 2) else _DOMAIN_TYPE_SIZE},
        ("generic_tile", "body"): lambda v: {
            "size": "persisted_size", "doc-suffix": "bytes when compressor is no_compression",
            "type": {"switch-on": "compressor == legacy_compressor::no_compression",
                     "cases": {"false": ChunkedTile1x.subcon}}},
    }
    root_params = {"fragment_metadata": _SCHEMA_PARAMS, "book_keeping": _SCHEMA_PARAMS}

    def _field(self, sc, owner: str, index: int):
        if isinstance(sc, construct.Check):  # a rule between fields read earlier: no bytes
            return None
        return super()._field(sc, owner, index)

    def _inner(self, con, attr, name, keys) -> bool:
        cases = keys.get("type", {}).get("cases") if isinstance(keys.get("type"), dict) else None
        if cases:  # a switch whose cases are declarations: their types
            keys["type"] = {**keys["type"], "cases": {k: self._type(c, "compressed_tile") for k, c in cases.items()}}
        return super()._inner(con, attr, name, keys)

    def _leaf(self, con, attr, name, keys):
        if type(con).__name__ == "_LibraryVersionField":
            attr.update({"type": "s4", "repeat": "expr", "repeat-expr": 3})
            return
        super()._leaf(con, attr, name, keys)

    def document(self, ident: str, structure) -> dict:
        out = super().document(ident, structure)
        label = "0.x" if self.version == (0,) else f"{self.version[0]}.{self.version[1]}"
        out["doc"] = out["doc"].replace(f"TileDB format version {self.version}", f"TileDB {label} (before format "
                                        "version 1)")
        for body in (out, *out.get("types", {}).values()):  # prev1.md is this project's page, not TileDB's
            body.pop("doc-ref", None)
        if ident == "book_keeping":
            out["doc"] = out["doc"].replace("one generic tile (generic_tile.ksy)", "one gzip member (RFC 1952)") \
                .replace("Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter "
                         "pipeline gives back", "parse the gunzipped bytes")
        return out


_CUT = ("(_index + 1 < _root.tile_offsets.size ? _root.tile_offsets[_index + 1] : _io.size) "
        "- _root.tile_offsets[_index]")


def _data_file(label: str, version: tuple) -> dict:
    """A data file of the dialect: tiles back to back, cut at the fragment metadata's tile offsets (params;
    an uncompressed 0.x field has none: cut at its tile's bytes; a var one is one span); a compressed 1.x tile
    is compressed tiles (one per dimension in __coords.tdb), a 0.x one has no header."""
    params = [{"id": "tile_offsets", "type": "u8[]", "doc": "where each tile starts (the fragment metadata's "
                                                             "tile_offsets or tile_var_offsets of the field)"}]
    tiles = {"id": "tiles", "repeat": "expr", "repeat-expr": "_root.tile_offsets.size", "size": _CUT,
             "doc": "each tile's bytes (0.x: compressed as the field's compressor, no header)"}
    out = {"meta": {"id": "data_file", "title": f"Data file ({label})", "endian": "le", "encoding": "UTF-8",
                    "ks-version": "0.11"},
           "doc": f"Data file ({label}) (prev1.md §{'2.3' if label == '0.x' else '3.4'}), TileDB {label} (before "
                  "format version 1): tiles back to back from the tile offsets.", "params": params,
           "seq": [tiles]}
    if label == "0.x":
        return out
    builder = _Prev1Builder(version)
    name = builder._type(ChunkedTile1x.subcon, "compressed_tile")
    params.append({"id": "compressed", "type": "bool", "doc": "the field's compressor is not NO_COMPRESSION"})
    tiles.update(type="tile_span", doc="each tile")
    out["types"] = {**builder.types, "tile_span": {"doc": "one tile", "seq": [
        {"id": "sub_tiles", "if": "_root.compressed", "repeat": "eos", "type": name,
         "doc": "compressed tiles: one per dimension in __coords.tdb, else one"},
        {"id": "raw", "if": "not _root.compressed", "size-eos": True, "doc": "the uncompressed tile"}]}}
    return out


def prev1_ksy_documents(label: str) -> dict[str, dict]:
    """Every structure of the dialect ``label`` (``"0.x"``, ``"1.0"``...``"1.3"``) as a .ksy document, by stem."""
    version = DIALECT_VERSIONS[label]
    out = {}
    for s in structures().values():
        con = s.construct
        if isinstance(con, DialectSection) and con.exists(version) and s.title not in _NOT_EXPORTED:
            ident = _snake(s.title)
            out[ident] = _Prev1Builder(version).document(ident, s)
    out["data_file"] = _data_file(label, version)
    return out


def write_prev1_ksy(folder) -> list[Path]:
    """Write ``folder/v<label>/<structure>.ksy`` for every pre-v1 dialect (v0.x, v1.0 ... v1.3)."""
    storage, written = LocalStorage(), []
    for label in DIALECT_VERSIONS:
        out = Path(folder) / f"v{label}"
        docs = prev1_ksy_documents(label)
        for name in storage.list(out):
            if name.endswith(".ksy") and name[:-4] not in docs:
                storage.delete(out / name)
        for ident, doc in docs.items():
            written.append(out / f"{ident}.ksy")
            storage.commit(written[-1], ksy_text(doc).encode())
    return written
