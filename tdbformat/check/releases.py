"""Which releases read which format version: TileDB's from the spec's array_format_history.md
(:data:`tdbformat.versions.FIRST_RELEASE`), TileDB-Py's from the TileDB Embedded release each of its releases
bundles (TileDB-Py's HISTORY.md). A release of TileDB reads every format version up to the newest it writes.

:func:`reads_since` is the oldest TileDB release that opens a format version, :func:`oldest_tiledb_py` the
oldest TileDB-Py release, :func:`newest_readable` the newest format version a TileDB or TileDB-Py release
opens (``"tiledb-py==0.21.6"``, ``"tiledb==2.15"``, or a bare TileDB version).
"""

from __future__ import annotations

import re

from ..versions import FIRST_RELEASE, KNOWN_VERSIONS

__all__ = ["TILEDB_PY_CORE", "READS_SINCE", "reads_since", "oldest_tiledb_py", "newest_readable", "parse_reader",
           "release"]

#: (TileDB-Py release, the TileDB Embedded release it bundles), for each release that changed it: HISTORY.md's
#: "TileDB-Py X includes TileDB Embedded Y" and "Bump release target to TileDB Y" lines; 0.4.0 "builds
#: against TileDB 1.5", 0.5.0 brought 1.7's array metadata (0.5.4 bumps to 1.7.3), 0.6.0 "Target TileDB
#: version 2.0". A release not listed bundles what the release before it did. Before 0.4.0 the notes say nothing.
TILEDB_PY_CORE = (
    ("0.4.0", "1.5.0"), ("0.4.3", "1.6.0"), ("0.4.4", "1.6.3"), ("0.5.0", "1.7.0"), ("0.5.4", "1.7.3"),
    ("0.5.5", "1.7.4"), ("0.5.6", "1.7.5"), ("0.5.7", "1.7.6"), ("0.5.9", "1.7.7"), ("0.6.0", "2.0.0"),
    ("0.6.3", "2.0.5"), ("0.6.4", "2.0.6"), ("0.6.6", "2.0.7"), ("0.7.0", "2.1.2"), ("0.7.2", "2.1.3"),
    ("0.7.5", "2.1.6"), ("0.8.0", "2.2.2"), ("0.8.1", "2.2.3"), ("0.8.3", "2.2.4"), ("0.8.5", "2.2.6"),
    ("0.8.6", "2.2.7"), ("0.8.8", "2.2.8"), ("0.8.9", "2.2.9"), ("0.9.0", "2.3.0"), ("0.9.1", "2.3.1"),
    ("0.9.5", "2.3.3"), ("0.10.0", "2.4.0"), ("0.10.3", "2.4.2"), ("0.10.4", "2.4.3"), ("0.11.0", "2.5.0"),
    ("0.11.1", "2.5.1"), ("0.11.2", "2.5.2"), ("0.11.4", "2.5.3"), ("0.12.0", "2.6.0"), ("0.12.1", "2.6.1"),
    ("0.12.2", "2.6.2"), ("0.12.3", "2.6.3"), ("0.12.4", "2.6.4"), ("0.13.0", "2.7.0"), ("0.13.1", "2.7.1"),
    ("0.13.2", "2.7.2"), ("0.14.0", "2.8.0"), ("0.14.1", "2.8.1"), ("0.14.2", "2.8.2"), ("0.14.5", "2.8.3"),
    ("0.15.0", "2.9.0"), ("0.15.1", "2.9.1"), ("0.15.2", "2.9.2"), ("0.15.3", "2.9.3"), ("0.15.5", "2.9.4"),
    ("0.15.6", "2.9.5"), ("0.16.0", "2.10.0"), ("0.16.1", "2.10.1"), ("0.16.2", "2.10.2"), ("0.16.4", "2.10.3"),
    ("0.16.5", "2.10.4"), ("0.17.0", "2.11.0"), ("0.17.2", "2.11.1"), ("0.17.3", "2.11.2"), ("0.17.4", "2.11.3"),
    ("0.18.0", "2.12.0"), ("0.18.1", "2.12.1"), ("0.18.2", "2.12.2"), ("0.18.3", "2.12.3"), ("0.19.0", "2.13.0"),
    ("0.19.1", "2.13.1"), ("0.20.0", "2.14.0"), ("0.21.1", "2.15.0"), ("0.21.2", "2.15.1"), ("0.21.3", "2.15.2"),
    ("0.21.4", "2.15.3"), ("0.21.5", "2.15.4"), ("0.22.0", "2.16.0"), ("0.22.1", "2.16.1"), ("0.22.2", "2.16.2"),
    ("0.22.3", "2.16.3"), ("0.23.0", "2.17.0"), ("0.23.1", "2.17.1"), ("0.23.2", "2.17.3"), ("0.23.4", "2.17.4"),
    ("0.24.0", "2.18.2"), ("0.25.0", "2.19.0"), ("0.26.0", "2.20.0"), ("0.26.1", "2.20.1"), ("0.27.0", "2.21.0"),
    ("0.27.1", "2.21.1"), ("0.28.0", "2.22.0"), ("0.29.0", "2.23.0"), ("0.30.0", "2.24.0"), ("0.30.1", "2.24.1"),
    ("0.31.0", "2.25.0"), ("0.32.0", "2.26.0"), ("0.32.1", "2.26.1"), ("0.32.3", "2.26.2"), ("0.33.0", "2.27.0"),
    ("0.33.4", "2.27.1"), ("0.33.5", "2.27.2"), ("0.34.0", "2.28.0"), ("0.34.1", "2.28.1"), ("0.35.0", "2.29.0"),
    ("0.35.1", "2.29.1"), ("0.35.2", "2.29.2"), ("0.36.0", "2.30.0"), ("0.36.1", "2.30.1"),
)

#: the oldest TileDB release that opens each format version: the spec's "introduced in", except where a
#: release refuses it: TileDB 2.30.0 (TileDB-Py 0.36.x) writes v22 and refuses v23 ("Array format version (23)
#: is newer than the library format version (22)"); v23 arrays come from 2.31's development line
READS_SINCE = {**FIRST_RELEASE, 23: "2.31"}


def release(text: str) -> tuple[int, ...]:
    """A release number as a tuple of ints ("2.2.3" -> (2, 2, 3)), for ordering."""
    if not isinstance(text, str) or not re.fullmatch(r"\d+(\.\d+){0,2}", text):
        raise ValueError(f"release: expected a release number such as 2.15 or 0.21.6, not {text!r}")
    return tuple(int(p) for p in text.split("."))


def reads_since(version: int) -> str:
    """The oldest TileDB release that opens format ``version``."""
    return READS_SINCE[version]


def oldest_tiledb_py(version: int) -> str | None:
    """The oldest TileDB-Py release whose TileDB opens format ``version`` (None when the oldest release notes,
    0.4.0's, already bundle a newer TileDB and nothing says what came before)."""
    need = release(reads_since(version))
    found = next((py for py, core in TILEDB_PY_CORE if release(core) >= need), None)
    if found == TILEDB_PY_CORE[0][0] and release(TILEDB_PY_CORE[0][1]) > need + (0,) * (3 - len(need)):
        return None
    return found


def _core_of_tiledb_py(version: str) -> str:
    wanted = release(version)
    found = [core for py, core in TILEDB_PY_CORE if release(py) <= wanted]
    if not found:
        raise ValueError(f"reader: TileDB-Py {version} is older than the release notes go (0.4.0)")
    return found[-1]


def parse_reader(text: str) -> tuple[str, str]:
    """``"tiledb-py==0.21.6"`` (or ``tiledb==0.21.6``, the package's name on PyPI), ``"libtiledb==2.15"``,
    ``"core==2.15"`` or ``"2.15"`` as (TileDB-Py release or None, TileDB release)."""
    name, sep, number = text.partition("==")
    if not sep:
        name, number = "libtiledb", text
    name = name.strip().lower()
    if name in ("tiledb-py", "tiledb_py", "tiledb"):
        return number, _core_of_tiledb_py(number)
    if name in ("libtiledb", "core", "tiledb-core"):
        release(number)
        return None, number
    raise ValueError(f"reader: expected tiledb-py==X.Y.Z or libtiledb==X.Y, not {text!r}")


def newest_readable(reader: str) -> int:
    """The newest format version the TileDB or TileDB-Py release ``reader`` opens (see :func:`parse_reader`);
    0 when it opens none (a TileDB before 1.4)."""
    core = release(parse_reader(reader)[1])
    return max((v for v in KNOWN_VERSIONS if release(reads_since(v)) <= core), default=0)
