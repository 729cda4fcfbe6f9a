"""Creating an array: a schema brought to a format version, and the folder layout of that version's era
(REFERENCE.md §3.2; TileDB's ``Array::create`` in ``array/array.cc``).

:func:`schema_at` takes a schema of any version (what ``ArraySchema.parse`` returns, a plain dict of the same
shape, or an object with ``to_dict(version)``) and gives the Container ``ArraySchema.build`` takes at the
target version: fields the version lacks are dropped, fields it has and the schema lacks get TileDB's
defaults. A feature the version cannot hold is a ValueError naming the feature and the first version with it.
"""

from __future__ import annotations

import secrets
import time

import numpy as np
from construct import Container, ListContainer

from ..layout import (
    COMMITS_DIR, ENUMERATIONS_DIR, FRAGMENT_META_DIR, FRAGMENTS_DIR, LABELS_DIR, LEGACY_SCHEMA, LOCK,
    META_DIR, SCHEMA_DIR, enumeration_path,
)
from ..enums import Datatype, FilterType, Layout
from ..storage import storage_for
from ..structs.array_schema import VAR_NUM, ArraySchema
from ..structs.enumeration import Enumeration
from ..structs.filter_pipeline import DEFAULT_MAX_CHUNK_SIZE
from ..structs.names import timestamped_name
from ..versions import DEFAULT_WRITE_VERSION, FEATURES, KNOWN_VERSIONS, LATEST

__all__ = ["create", "schema_at", "SCHEMA_FEATURES", "new_uuid", "now_ms", "check_version"]

_TIME_TYPES = {t for t in Datatype if t.name.startswith("TIME_")}
_DATETIME_TYPES = {t for t in Datatype if t.name.startswith("DATETIME_")}

# (feature, first format version that holds it, test on the schema Container) — from REFERENCE §18 and
# TileDB's HISTORY.md (Hilbert: 2.2 = v7; datetimes: 1.6 = v3; GEOM types: 2.21 = v21)
SCHEMA_FEATURES = [
    ("duplicates (allows_dups)", 5, lambda s: bool(s.get("allows_dups"))),
    ("var-sized dimensions", 5, lambda s: any(d.get("cell_val_num") == VAR_NUM for d in s.domain.dimensions)),
    ("dimensions of different datatypes", 5, lambda s: len({_field_type(s, d) for d in s.domain.dimensions}) > 1),
    ("fill values other than the default", 6, lambda s: any(_custom_fill(a) for a in s.attributes)),
    ("nullable attributes", 7, lambda s: any(a.get("nullable") for a in s.attributes)),
    ("Hilbert cell order", 7, lambda s: s.cell_order == Layout.HILBERT),
    ("ordered attributes", 17, lambda s: any(a.get("order") for a in s.attributes)),
    ("dimension labels", 18, lambda s: bool(s.get("labels"))),
    ("enumerations", 20, lambda s: bool(s.get("enumerations"))
     or any(a.get("enumeration_name") for a in s.attributes)),
    ("a current domain", 22, lambda s: s.get("current_domain") is not None and not s.current_domain.empty),
    ("datetime datatypes", 3, lambda s: bool(_types(s) & _DATETIME_TYPES)),
    ("time datatypes", 5, lambda s: bool(_types(s) & _TIME_TYPES)),
    ("the BLOB datatype", 11, lambda s: Datatype.BLOB in _types(s)),
    ("the BOOL datatype", 14, lambda s: Datatype.BOOL in _types(s)),
    ("GEOM datatypes", 21, lambda s: bool(_types(s) & {Datatype.GEOM_WKB, Datatype.GEOM_WKT})),
    ("checksum filters", 4, lambda s: bool(_filters(s) & {FilterType.CHECKSUM_MD5, FilterType.CHECKSUM_SHA256})),
    ("the dictionary filter", 13, lambda s: FilterType.DICTIONARY in _filters(s)),
    ("the dictionary filter on UTF-8 strings", 17, lambda s: any(
        _field_type(s, f) == Datatype.STRING_UTF8 and any(x.type == FilterType.DICTIONARY for x in f.filters.filters)
        for f in _fields(s))),
    ("the float scale filter", 15, lambda s: FilterType.SCALE_FLOAT in _filters(s)),
    ("the XOR filter", 16, lambda s: FilterType.XOR in _filters(s)),
    ("the WebP filter", 16, lambda s: FilterType.WEBP in _filters(s)),
    ("the delta filter", 19, lambda s: FilterType.DELTA in _filters(s)),
]


def _field_type(schema, dim) -> Datatype:
    return Datatype(dim.datatype if dim.get("datatype") is not None else schema.domain.domain_type)


def _types(schema) -> set:
    return {_field_type(schema, d) for d in schema.domain.dimensions} | {Datatype(a.datatype) for a in schema.attributes}


def _fields(schema):
    """Dimensions and attributes that have a pipeline of their own."""
    return [f for f in list(schema.domain.dimensions) + list(schema.attributes) if f.get("filters") is not None]


def _pipelines(schema):
    for name in ("coords_filters", "cell_var_offsets_filters", "cell_validity_filters"):
        if schema.get(name) is not None:  # a pipeline the schema leaves out gets the default (empty) one
            yield schema[name]
    for f in _fields(schema):
        yield f.filters


def _filters(schema) -> set:
    return {FilterType(f.type) for p in _pipelines(schema) for f in p.filters}


def default_fill(datatype: Datatype, cell_val_num: int) -> bytes:
    """TileDB's default fill value of one cell (constants.cc): min of signed integers and times, max of unsigned
    ones, NaN for floats, 0x80 for CHAR, 0 for strings; one value for var-sized fields."""
    dt = datatype.numpy_dtype
    if datatype.is_string or datatype in (Datatype.BLOB, Datatype.BOOL, Datatype.GEOM_WKB, Datatype.GEOM_WKT):
        value = np.zeros(1, dt)
    elif dt.kind == "f":
        value = np.full(1, np.nan, dt)
    elif dt.kind in "iMm":
        value = np.full(1, np.iinfo(np.int64 if dt.kind in "Mm" else dt).min, "<i8").astype(dt)
    elif dt.kind == "u":
        value = np.full(1, np.iinfo(dt).max, dt)
    else:  # CHAR, ANY
        value = np.frombuffer(b"\x80" * dt.itemsize, dt)
    return value.tobytes() * (1 if cell_val_num == VAR_NUM else cell_val_num)


def _custom_fill(attribute) -> bool:
    fill = attribute.get("fill_value")
    return fill is not None and bytes(fill) != default_fill(Datatype(attribute.datatype), attribute.cell_val_num)


def check_version(version) -> int:
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or int(version) not in KNOWN_VERSIONS:
        raise ValueError(f"version: expected a format version from 1 to {LATEST}, not {version!r}")
    return int(version)


def _empty_pipeline():
    return Container(max_chunk_size=DEFAULT_MAX_CHUNK_SIZE, filters=ListContainer())


def _pick(src, version, spans, defaults):
    """``src``'s fields as a Container for ``version``: each (name, first version, last version + 1) present at
    the version takes its value from ``src``, else from ``defaults``; the others are None."""
    out = Container()
    for name, lo, hi in spans:
        present = version >= lo and (hi is None or version < hi)
        value = src.get(name) if src.get(name) is not None else defaults.get(name)
        out[name] = (value() if callable(value) else value) if present else None
    return out


# filter options that only some versions store: (filter type, option, first version, its value when absent)
_VERSIONED_OPTIONS = [(FilterType.DOUBLE_DELTA, "reinterpret_datatype", 20, Datatype.ANY),
                      (FilterType.DELTA, "reinterpret_datatype", 19, Datatype.ANY)]


def _pipeline_at(pipeline, version):
    """A filter pipeline with the options ``version`` stores: a reinterpretation other than none is refused
    before it exists, and absent ones become none after."""
    if pipeline is None:
        return None
    filters = ListContainer()
    for f in pipeline.filters:
        options = Container(f.get("options") or {})
        for ftype, name, since, absent in _VERSIONED_OPTIONS:
            if FilterType(f.type) != ftype:
                continue
            if version < since:
                if options.get(name) not in (None, absent):
                    raise ValueError(f"schema: a {ftype.name} filter's {name} needs format version {since} or later, "
                                     f"not {version}")
                options[name] = None
            elif options.get(name) is None:
                options[name] = absent
        filters.append(Container(type=f.type, options=options))
    return Container(max_chunk_size=pipeline.max_chunk_size, filters=filters)


def _dimension_at(schema, dim, version):
    out = _pick(dim, version, [("name", 1, None), ("datatype", 5, None), ("cell_val_num", 5, None),
                               ("filters", 5, None), ("domain", 1, None), ("tile_extent", 1, None)],
                dict(datatype=_field_type(schema, dim), cell_val_num=1, filters=_empty_pipeline))
    out.tile_extent = dim.get("tile_extent")
    out.filters = _pipeline_at(out.filters, version)
    return out


def _attribute_at(attr, version):
    # the default fill only where the version stores one: cell_val_num values of it (2**31 of them, hostile)
    def fill():
        return default_fill(Datatype(attr.datatype), attr.cell_val_num)
    out = _pick(attr, version, [("name", 1, None), ("datatype", 1, None), ("cell_val_num", 1, None),
                                ("filters", 1, None), ("fill_value", 6, None), ("nullable", 7, None),
                                ("fill_value_validity", 7, None), ("order", 17, None), ("enumeration_name", 20, None)],
                dict(fill_value=fill, nullable=False, fill_value_validity=False, order=0, enumeration_name=""))
    out.filters = _pipeline_at(out.filters, version)
    return out


def _as_container(value):
    if isinstance(value, dict) and not isinstance(value, Container):
        return Container({k: _as_container(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)) and not isinstance(value, ListContainer):
        return ListContainer(_as_container(v) for v in value)
    return value


def schema_at(schema, version: int = DEFAULT_WRITE_VERSION) -> Container:
    """``schema`` as the Container ``ArraySchema.build`` takes at ``version`` (see the module doc)."""
    version = check_version(version)
    if hasattr(schema, "to_dict"):
        schema = schema.to_dict(version)
    if not isinstance(schema, dict) or "domain" not in schema or "attributes" not in schema:
        raise TypeError("schema: expected the dict ArraySchema.build takes (what ArraySchema.parse returns) or an "
                        f"object with to_dict(version), not {type(schema).__name__}")
    schema = _as_container(schema)
    for feature, since, test in SCHEMA_FEATURES:
        if version < since and test(schema):
            raise ValueError(f"schema: {feature} need format version {since} or later, not {version}")
    if not schema.attributes:
        raise ValueError("schema: an array needs at least one attribute")
    if schema.array_type == 0 and schema.cell_order == Layout.HILBERT:
        raise ValueError("schema: a dense array cannot have the Hilbert cell order (TileDB refuses it)")
    dims = schema.domain.dimensions
    out = _pick(schema, version, [
        ("allows_dups", 5, None), ("array_type", 1, None), ("tile_order", 1, None), ("cell_order", 1, None),
        ("capacity", 1, None), ("coords_filters", 1, None), ("cell_var_offsets_filters", 1, None),
        ("cell_validity_filters", 7, None), ("labels", 18, None), ("enumerations", 20, None),
        ("current_domain", 22, None)],
        dict(allows_dups=False, capacity=10000, coords_filters=_empty_pipeline,
             cell_var_offsets_filters=_empty_pipeline, cell_validity_filters=_empty_pipeline,
             labels=ListContainer, enumerations=ListContainer,
             current_domain=lambda: Container(version=0, empty=True, type=None, ndrectangle=None)))
    out.version = version
    for name in ("coords_filters", "cell_var_offsets_filters", "cell_validity_filters"):
        out[name] = _pipeline_at(out[name], version)
    out.domain = Container(domain_type=_field_type(schema, dims[0]) if version < 5 else None,
                           dimensions=ListContainer(_dimension_at(schema, d, version) for d in dims))
    out.attributes = ListContainer(_attribute_at(a, version) for a in schema.attributes)
    return out


def now_ms() -> int:
    return time.time_ns() // 1_000_000


_label = {"ms": None, "counter": 0}


def new_uuid() -> str:
    """A name's 32 hex digits as TileDB 2.22+ makes them (random_label.cc): a counter that starts at random in
    each millisecond and counts up within it, then 24 random hex digits, so names made in one millisecond
    sort in the order they were made."""
    ms = now_ms()
    if ms != _label["ms"]:
        _label["ms"], _label["counter"] = ms, secrets.randbits(31)
    else:
        _label["counter"] = (_label["counter"] + 1) & 0xFFFFFFFF
    return f"{_label['counter']:08x}{secrets.randbits(32):08x}{secrets.randbits(64):016x}"


def _era_folders(version: int) -> list[str]:
    """The empty folders TileDB's create makes for ``version``'s era (array.cc for v20+; the corpus for older)."""
    folders = [META_DIR] if version >= 4 else []
    if FEATURES["fragments_folder"](version):
        folders += [COMMITS_DIR, FRAGMENTS_DIR, FRAGMENT_META_DIR]
    if version >= 18:
        folders.append(LABELS_DIR)
    if version >= 20:
        folders.append(f"{SCHEMA_DIR}/{ENUMERATIONS_DIR}")
    return folders


def create(path, schema, version: int = DEFAULT_WRITE_VERSION, key=None, timestamp: int | None = None,
           fsync: bool | None = None, enumerations: dict | None = None) -> Container:
    """Create an array at ``path`` holding ``schema`` at format ``version`` (default
    :data:`~tdbformat.versions.DEFAULT_WRITE_VERSION`, the newest a released TileDB writes; encrypted with
    ``key``): the schema file of the version's era (``__array_schema.tdb`` v1-9, ``__schema/__t_t_uuid`` from
    v10), the lock file of v1-10, the folders of the era and the enumeration files the schema names (v20+):
    those of a ``tdbformat.schema.ArraySchema``, or for a schema dict ``enumerations``, ``{file name:
    payload}`` (what ``Enumeration.parse`` returns), written before the schema file.
    ``fsync`` (default on, or the environment's ``TDBFORMAT_FSYNC=0``): the files and folders reach the disk
    before the schema file is renamed into place; ``False`` for scratch arrays. Returns the schema Container
    as written."""
    storage, root = storage_for(path, fsync=fsync)
    built_schema = schema_at(schema, version)
    payloads = schema.enumeration_dicts(version) if hasattr(schema, "enumeration_dicts") else enumerations or {}
    files = {name: Enumeration.build(Container(p), version=version, key=key) for name, p in payloads.items()}
    if storage.is_dir(root) and storage.list(root):
        raise ValueError(f"path: {path} exists and is not empty")
    t = now_ms() if timestamp is None else int(timestamp)
    data = ArraySchema.build(built_schema, key=key, version=version)
    storage.makedirs(root)
    for folder in _era_folders(version):
        storage.makedirs(storage.join(root, *folder.split("/")))
    if version <= 10:
        storage.write(storage.join(root, LOCK), b"")
    for name, enumeration in files.items():  # before the schema that names them
        storage.commit(enumeration_path(storage, root, name), enumeration)
    for uri, label_schema in getattr(schema, "label_schemas", dict)().items():  # dimension labels' arrays (v18+)
        create(storage.join(root, *uri.split("/")), label_schema, version, key, t)
    # the schema file makes the folder an array: it comes last, whole (renamed into place)
    if FEATURES["schema_folder"](version):
        storage.makedirs(storage.join(root, SCHEMA_DIR))
        storage.commit(storage.join(root, SCHEMA_DIR, timestamped_name(t, t, new_uuid())), data)
    else:
        storage.commit(storage.join(root, LEGACY_SCHEMA), data)
    return ArraySchema.parse(data, key=key)

