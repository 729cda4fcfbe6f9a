"""FilteredTile: a data tile as the cell values it holds, composing the pipeline with the Tile struct.

Parse with context ``pipeline=`` (a FilterPipeline Container), ``datatype=`` and ``version=`` (the
fragment's format version), plus ``key=`` for encrypted arrays, ``cell_size=`` (default: one value of
the datatype) and ``var=True`` for var-size data (string RLE/dictionary then return the offsets they
carry). The result holds the stored ``tile``, the unfiltered ``data`` bytes, their ``array`` (a numpy
view by datatype) and ``offsets`` (string RLE/dictionary only). Building a value whose ``data`` is
unchanged writes the stored tile back byte for byte; otherwise (or from ``array`` alone) the pipeline
runs forward (give ``offsets`` in the value for var data).
"""

from __future__ import annotations

import numpy as np
from construct import Container, Construct

from ..enums import Datatype
from ..errors import FormatError
from ..structs.tile import Tile
from .encryption import normalize_key
from .pipeline import filter_tile, skips_offsets, unfilter, unfilter_strings

__all__ = ["FilteredTile"]

_TILE = Tile.subcon  # the raw layer, without the Section boundary


def _settings(context):
    p = context._params
    if p.get("pipeline") is None or p.get("datatype") is None:
        raise FormatError("a filtered tile needs pipeline= and datatype= to be parsed or built")
    datatype = Datatype(p.datatype)
    key = normalize_key(p.get("key"))
    return dict(datatype=datatype, version=p.get("version") or 0, key=key, encrypted=key is not None), \
        p.pipeline, p.get("cell_size") or datatype.size, bool(p.get("var"))


class _FilteredTile(Construct):
    def _parse(self, stream, context, path):
        tile = _TILE._parsereport(stream, context, path)
        kw, pipeline, cell_size, var = _settings(context)
        offsets = None
        if var and skips_offsets(pipeline, kw["datatype"], kw["version"]):
            data, offsets = unfilter_strings(tile, pipeline, **kw)
        else:
            data = unfilter(tile, pipeline, cell_size=cell_size, **kw)
        dtype = kw["datatype"].numpy_dtype
        if len(data) % dtype.itemsize:
            raise FormatError(f"the tile unfilters to {len(data)} bytes, not whole {kw['datatype'].name} values",
                              path=path)
        return Container(tile=tile, data=data, array=np.frombuffer(data, dtype), offsets=offsets)

    def _build(self, obj, stream, context, path):
        kw, pipeline, cell_size, var = _settings(context)
        data = obj.get("data")
        if data is None:
            data = np.ascontiguousarray(obj["array"], kw["datatype"].numpy_dtype).tobytes()
        tile = obj.get("tile")
        unchanged = tile is not None and obj.get("data") is not None and (
            obj.get("array") is None or np.asarray(obj["array"]).tobytes() == data)
        if not unchanged:
            tile = filter_tile(data, pipeline, cell_size=cell_size, offsets=obj.get("offsets"), var=var, **kw)
        _TILE._build(tile, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise FormatError("a filtered tile has no static size", path=path)


#: A data tile parsed through its filter pipeline (see the module doc).
FilteredTile = _FilteredTile()
