"""Every **Bytes** citation of spec_versions/DISCREPANCIES.md still holds: the cited corpus file has the cited
bytes at the cited offset."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
_CITATION = re.compile(r"\*\*(Bytes|Payload bytes)\*\*: `([^`]+)` at offset (\d+)[^`]*`([0-9a-f ]+)`")


def _citations():
    text = (ROOT / "spec_versions" / "DISCREPANCIES.md").read_text()
    return _CITATION.findall(re.sub(r"\n\s+", " ", text))  # a citation may wrap onto the next line


def _payload(path: Path) -> bytes:
    """A generic tile's unfiltered payload (a schema is gzipped on disk)."""
    from construct import GreedyBytes, Struct

    from tdbformat.structs.generic_tile import generic_tile

    return generic_tile(Struct("rest" / GreedyBytes)).parse(path.read_bytes())._unfiltered


def test_the_filter_discrepancies_are_cited():
    assert len(_citations()) >= 10 and any(c[0] == "Payload bytes" for c in _citations())


@pytest.mark.parametrize("where, path, offset, hexbytes", _citations(), ids=lambda x: str(x)[-40:])
def test_the_cited_bytes_are_in_the_corpus(where, path, offset, hexbytes):
    expected = bytes.fromhex(hexbytes)
    data = (ROOT / path).read_bytes() if where == "Bytes" else _payload(ROOT / path)
    assert data[int(offset):int(offset) + len(expected)] == expected
