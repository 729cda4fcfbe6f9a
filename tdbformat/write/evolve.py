"""Schema evolution as TileDB-Py's ``ArraySchemaEvolution`` (ArraySchemaEvolution::evolve_schema), at the
array's own format version (v10+: the versions whose schemas are timestamped files of ``__schema/``).

The latest schema, as TileDB loads it (a dimension without filters takes the coordinates' pipeline), with
attributes dropped then added, enumerations added, extended or dropped (v20+) and
the current domain expanded (v22+), is written as a new ``__schema/__<t>_<t>_<uuid>`` file. New enumeration
files go first; they are invisible until the schema that names them is renamed into place, last.
Everything is checked before the first byte is written.
"""

from __future__ import annotations

from types import SimpleNamespace

from construct import Container, ListContainer

from .. import layout as directory
from .. import schema as S
from .create import new_uuid, now_ms
from ..storage import storage_for
from ..structs.array_schema import VAR_NUM, ArraySchema
from ..structs.enumeration import Enumeration, enumeration_values
from ..structs.names import timestamped_name
from ..versions import FEATURES

__all__ = ["ArraySchemaEvolution"]

_ENUMERATIONS_SINCE, _CURRENT_DOMAIN_SINCE = 20, 22


def _plain(value):
    """A parsed Container without the stored tile it came from (so that building it filters anew)."""
    if isinstance(value, dict):
        return Container({k: _plain(v) for k, v in value.items() if k not in ("_generic_tile", "_unfiltered")})
    if isinstance(value, list):
        return ListContainer(_plain(v) for v in value)
    return value


class ArraySchemaEvolution:
    """TileDB-Py's ``tiledb.ArraySchemaEvolution``: gather changes, then :meth:`array_evolve` applies them.
    Attributes and enumerations are ``tdbformat.schema.Attr`` / ``Enumeration``; ``ctx`` is accepted and
    ignored, as a TileDB-Py script passes it."""

    def __init__(self, ctx=None):
        self._drops, self._adds, self._enum_adds, self._enum_extends, self._enum_drops = [], [], [], [], []
        self._current_domain, self._timestamp = None, None

    def add_attribute(self, attr):
        if not isinstance(attr, S.Attr):
            raise TypeError(f"attr: expected a tdbformat.schema.Attr, not {type(attr).__name__}")
        self._adds.append(attr)

    def drop_attribute(self, attr_name: str):
        if not isinstance(attr_name, str):
            raise TypeError(f"attr_name: expected a str, not {type(attr_name).__name__}")
        self._drops.append(attr_name)

    def add_enumeration(self, enmr):
        self._enum_adds.append(self._enumeration(enmr, "enmr"))

    def extend_enumeration(self, enmr):
        """Replace the enumeration of ``enmr``'s name by ``enmr``, whose values start with the old ones."""
        self._enum_extends.append(self._enumeration(enmr, "enmr"))

    def drop_enumeration(self, enmr_name: str):
        if not isinstance(enmr_name, str):
            raise TypeError(f"enmr_name: expected a str, not {type(enmr_name).__name__}")
        self._enum_drops.append(enmr_name)

    def expand_current_domain(self, current_domain):
        if not isinstance(current_domain, S.CurrentDomain) or current_domain.ranges is None:
            raise TypeError("current_domain: expected a non-empty tdbformat.schema.CurrentDomain")
        self._current_domain = current_domain

    def timestamp(self, timestamp: int):
        """The new schema file's timestamp (ms; default: now)."""
        self._timestamp = directory.checked_timestamp(timestamp)

    @staticmethod
    def _enumeration(enmr, argument):
        if not isinstance(enmr, S.Enumeration):
            raise TypeError(f"{argument}: expected a tdbformat.schema.Enumeration, not {type(enmr).__name__}")
        return enmr

    def array_evolve(self, uri, key=None) -> str:
        """Apply the changes to the array at ``uri``; returns the new schema file's name."""
        storage, root = storage_for(uri)
        schemas = directory.load_schemas(storage, root, key)
        _, latest = schemas[-1]
        version = latest.version
        if not FEATURES["schema_folder"](version):
            raise ValueError(f"uri: format version {version} keeps one schema file (__array_schema.tdb): schema "
                             f"evolution needs version {FEATURES['schema_folder'].since}+ (convert the array first)")
        t = now_ms() if self._timestamp is None else self._timestamp
        schema = _plain(latest)
        for d in schema.domain.dimensions:  # TileDB loads an empty dimension pipeline as the coordinates' one
            if not d.filters.filters:  # (Dimension::deserialize), and writes it so when it evolves the schema
                d.filters = _plain(schema.coords_filters)
        files = _enumerations(self, schema, version, storage, root, key)
        self._attributes(schema, version)
        if self._current_domain is not None:
            _expand(self, schema, version)
        data = ArraySchema.build(schema, version=version, key=key)
        name = timestamped_name(t, t, new_uuid())
        for path, content in files:
            storage.commit(path, content, staging=root)
        storage.commit(storage.join(root, directory.SCHEMA_DIR, name), data, staging=root)
        return name

    def _attributes(self, schema, version):
        names = [a.name for a in schema.attributes]
        for name in self._drops:
            if name not in names:
                raise ValueError(f"drop_attribute: the array has no attribute {name!r}")
            names.remove(name)
        schema.attributes = ListContainer(a for a in schema.attributes if a.name in names)
        enums = {e.name for e in schema.get("enumerations") or []}
        taken = set(names) | {d.name for d in schema.domain.dimensions}
        for attr in self._adds:
            if attr.name in taken:
                raise ValueError(f"add_attribute: {attr.name!r} names an attribute or dimension already")
            if attr.enum_label is not None and attr.enum_label not in enums:
                raise ValueError(f"add_attribute: attribute {attr.name!r} names no enumeration of the array "
                                 f"({attr.enum_label!r})")
            taken.add(attr.name)
            schema.attributes.append(attr.to_dict(version))
        if not schema.attributes:
            raise ValueError("drop_attribute: an array keeps at least one attribute")
        used = {a.get("enumeration_name") for a in schema.attributes} - {None, ""}
        if used - enums:
            raise ValueError(f"drop_enumeration: attributes still use {sorted(used - enums)}")


def _enumerations(ev, schema, version, storage, root, key) -> list:
    """The schema's enumeration list updated; returns the new enumeration files (path, bytes)."""
    if not (ev._enum_adds or ev._enum_extends or ev._enum_drops):
        return []
    if version < _ENUMERATIONS_SINCE:
        raise ValueError(f"enumerations need format version {_ENUMERATIONS_SINCE}+, not {version}")
    refs = list(schema.enumerations)
    by_name = {r.name: r for r in refs}
    files = []
    for name in ev._enum_drops:
        if name not in by_name:
            raise ValueError(f"drop_enumeration: the array has no enumeration {name!r}")
        refs.remove(by_name.pop(name))
    for enmr in ev._enum_extends:
        old = by_name.get(enmr.name)
        if old is None:
            raise ValueError(f"extend_enumeration: the array has no enumeration {enmr.name!r}")
        path = directory.enumeration_path(storage, root, old.filename)
        stored = Enumeration.parse(storage.read(path, what="enumeration file"), key=key, filename=str(path))
        new = Enumeration.parse(Enumeration.build(enmr.to_dict(version), version=version))
        before, after = enumeration_values(stored), enumeration_values(new)
        if list(after[:len(before)]) != list(before) or len(after) <= len(before) \
                or stored.datatype != new.datatype or bool(stored.ordered) != bool(new.ordered):
            raise ValueError(f"extend_enumeration: {enmr.name!r} must keep its values, type and order and "
                             "add values after them")
        old.filename = enmr.path_name
        files.append(enmr)
    for enmr in ev._enum_adds:
        if enmr.name in by_name:
            raise ValueError(f"add_enumeration: the array has an enumeration {enmr.name!r} already")
        by_name[enmr.name] = Container(name=enmr.name, filename=enmr.path_name)
        refs.append(by_name[enmr.name])
        files.append(enmr)
    schema.enumerations = ListContainer(refs)
    return [(directory.enumeration_path(storage, root, e.path_name),
             Enumeration.build(e.to_dict(version), version=version, key=key)) for e in files]


def _expand(ev, schema, version):
    if version < _CURRENT_DOMAIN_SINCE:
        raise ValueError(f"expand_current_domain: a current domain needs format version "
                         f"{_CURRENT_DOMAIN_SINCE}+, not {version}")
    dims = [SimpleNamespace(name=d.name, var=d.cell_val_num == VAR_NUM, datatype=d.datatype)
            for d in schema.domain.dimensions]
    new = ev._current_domain.to_dict(SimpleNamespace(dims=dims, ndim=len(dims)), version)
    old = schema.current_domain
    if not old.empty:
        for o, n, d in zip(old.ndrectangle, new.ndrectangle, schema.domain.dimensions):
            if n.start > o.start or n.end < o.end:
                raise ValueError(f"expand_current_domain: dimension {d.name}'s range [{n.start}, {n.end}] "
                                 f"does not contain the current [{o.start}, {o.end}]")
    schema.current_domain = new
