"""Every **Bytes** citation of spec_versions/DISCREPANCIES.md still holds: the cited corpus file has the cited
bytes at the cited offset."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
_CITATION = re.compile(r"\*\*Bytes\*\*: `([^`]+)` at offset (\d+)[^`]*`([0-9a-f ]+)`")


def _citations():
    text = (ROOT / "spec_versions" / "DISCREPANCIES.md").read_text()
    return _CITATION.findall(re.sub(r"\n\s+", " ", text))  # a citation may wrap onto the next line


def test_the_filter_discrepancies_are_cited():
    assert len(_citations()) >= 7


@pytest.mark.parametrize("path, offset, hexbytes", _citations(), ids=lambda x: str(x)[-40:])
def test_the_cited_bytes_are_in_the_corpus(path, offset, hexbytes):
    expected = bytes.fromhex(hexbytes)
    with open(ROOT / path, "rb") as f:
        f.seek(int(offset))
        assert f.read(len(expected)) == expected
