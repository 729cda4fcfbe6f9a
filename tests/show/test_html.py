"""``tdbformat html`` pages in a real browser (Debian's headless Chromium through chromium-driver and selenium):
each page loads without a console error, names every dimension, attribute and live fragment that TileDB wrote
into truth.json, highlights exactly a field's bytes when the field is selected (the bytes on disk, read as
``tdbformat inspect --json`` reads the field), names the field of a byte under the pointer, asks no network,
and stays within its size. One browser for every page; a screenshot per kind under pytest's tmp dir."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest

import corpus
from tdbformat.cli import main
from tdbformat.check.coverage import spans
from tdbformat.layout.files import inspect_path
from tdbformat.show.render import files_json

#: the largest page a corpus case may make (the issue: "at most a few MB")
LIMIT = 3 << 20
V22, V12, V1, V23 = ("v22_tiledb-py-0.36.1_core-2.30.0", "v12_c-api_core-2.8.3", "v1_c-api_core-1.4.0",
                     "v23_c-api_core-2.31-dev-28aeb653")
#: arrays of different kinds: dense, sparse, string dimension, enumerations, consolidated, deletes,
#: encrypted, current domain, consolidated commits, consolidated fragment metadata, format v1, v23
ARRAYS = [(V22, "dense_2d_multiattr"), (V12, "sparse_2d_rtree"), (V22, "sparse_var_string_dim"),
          (V22, "enumerations"), (V22, "consolidated_dense"), (V22, "sparse_delete"), (V22, "encrypted_dense"),
          (V22, "current_domain"), (V22, "commits_consolidated_vacuumed"), (V22, "fragment_meta_consolidated"),
          (V1, "dense_2d_multiattr"), (V23, "consolidated_sparse_with_timestamps")]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,1000"]


def _case(writer: str, name: str) -> Path:
    return corpus.CORPUS / writer / name


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install "
                                    "'tdbformat[test]'")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip("no headless Chromium and chromium-driver here: apt-get install -y chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="tdbf-chromium-")
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    from selenium.webdriver.chrome.service import Service

    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.get("about:blank")  # the browser's start page loads its own chrome:// resources: before the logs
    driver.get_log("performance")
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("html-screenshots")


def _render(path, out: Path, key=None) -> Path:
    argv = ["html", str(path), "-o", str(out)] + (["--key", key] if key else [])
    assert main(argv) == 0
    return out


def _open(browser, page: Path, shots: Path, name: str) -> str:
    """Load the page, check the console and the network log, save a screenshot; the page's text."""
    browser.get_log("performance")  # what earlier pages left
    browser.get(page.as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    urls = []
    for entry in browser.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    # the page itself, and nothing else (chrome:// is the browser's own start page, never the network)
    assert page.as_uri() in urls and all(u == page.as_uri() or u.startswith("chrome://") for u in urls), urls
    assert page.stat().st_size <= LIMIT
    browser.save_screenshot(str(shots / f"{name}.png"))
    return browser.execute_script("return document.body.innerText")


def _select(browser, relpath: str, field: str) -> list[int]:
    """Show the file ``relpath``, click the leaf of ``field``: the offsets of the bytes highlighted."""
    link = browser.find_element("css selector", f"a.flink[data-file='{relpath}']")
    browser.execute_script("arguments[0].click()", link)
    leaf = browser.find_element("css selector", f"#ptree .leaf[data-path='{field}']")
    browser.execute_script("arguments[0].click()", leaf)
    return browser.execute_script("return Array.from(document.querySelectorAll('#hex .b.sel'))"
                                  ".map(e => [e.closest('.hexspace').dataset.space, +e.dataset.o])")


def _check_fields(browser, root: Path, f: Path, key=None) -> None:
    """Selecting a field highlights exactly its bytes; those bytes on disk are the value ``inspect --json``
    gives; pointing at a byte names its field."""
    rel = f.relative_to(root).as_posix() if f != root else f.name
    value = files_json(inspect_path(f, key=key))[0]["value"]
    data = f.read_bytes()
    _, found = spans(f, key=key)
    picked = [(s, _lookup(value, s.path)) for s in found if s.space == "file" and s.path is not None]
    picked = [(s, v) for s, v in picked if isinstance(v, int) and not isinstance(v, bool)][:3]
    assert picked, f
    for s, expected in picked:
        got = _select(browser, rel, s.path)
        assert got == [["file", o] for o in range(s.start, s.end)], (f, s.path)
        assert int.from_bytes(data[s.start:s.end], "little", signed=expected < 0) == expected, (f, s.path)
    s = picked[-1][0]
    byte = browser.find_element("css selector", f".hexspace[data-space='file'] .b[data-o='{s.start}']")
    from selenium.webdriver import ActionChains

    ActionChains(browser).move_to_element(byte).perform()
    status = browser.find_element("id", "status").text
    assert f"offset {s.start} " in status and s.path in status, status


def _lookup(value, path: str):
    """The value at a field path ("footer.tile_offsets[0]") of ``inspect --json``'s shape; None if it has none."""
    for part in path.replace("[", ".[").split("."):
        try:
            value = value[int(part[1:-1])] if part.startswith("[") else value[part] if part else value
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _fragment_names(truth: dict) -> list[str]:
    return [fr["uri"].rstrip("/").rsplit("/", 1)[-1] for fr in truth.get("fragments") or []]


def _schema_names(schema: dict) -> list[str]:
    return [d["name"] for d in schema["domain"]["dims"]] + [a["name"] for a in schema["attrs"]]


@pytest.mark.parametrize("writer,name", ARRAYS, ids=[f"{w.split('_')[0]}-{n}" for w, n in ARRAYS])
def test_an_array_page(browser, shots, tmp_path, writer, name):
    case = _case(writer, name)
    truth, root, key = corpus.truth(case), corpus.root(case), corpus.key(case)
    page = _render(root, tmp_path / "page.html", key)
    text = _open(browser, page, shots, f"{writer}-{name}")
    missing = [n for n in _schema_names(truth["schema"]) + _fragment_names(truth) if n not in text]
    assert _fragment_names(truth) and not missing, missing
    # a fragment folder's files are reclaimable exactly where TileDB's to_vacuum lists the fragment
    rows = re.findall(r"<tr class='st-(\w+)'><td><a href='#' class=flink data-file='([^']+)'>", page.read_text())
    gone = {u.rstrip("/").rsplit("/", 1)[-1] for u in truth.get("to_vacuum") or []}
    frags = {path: state for state, path in rows if path.startswith("__fragments/")}
    assert frags == {p: "reclaimable" if p.split("/")[1] in gone else "live" for p in frags}
    schema = sorted(p for p in corpus.files(root) if p.parent.name == "__schema" or p.name == "__array_schema.tdb")[-1]
    _check_fields(browser, root, schema, key)
    # a field of the schema's unfiltered (decompressed, decrypted) payload: the bytes TileDB's first dimension
    # name is made of
    name = truth["schema"]["domain"]["dims"][0]["name"]
    field = next(s for s in spans(schema, key=key)[1] if s.path and s.path.endswith("dimensions[0].name"))
    browser.execute_script("arguments[0].click()", browser.find_element(
        "css selector", f"#ptree .leaf[data-path='{field.path}']"))
    shown = browser.execute_script("return Array.from(document.querySelectorAll('#hex .b.sel'))"
                                   ".map(e => [e.closest('.hexspace').dataset.space, +e.dataset.o, e.textContent])")
    assert [(sp, o) for sp, o, _ in shown] == [(field.space, o) for o in range(field.start, field.end)]
    assert bytes.fromhex("".join(h for _, _, h in shown)) == name.encode()


def test_a_tile_decodes_on_request_to_what_tiledb_reads(browser, shots, tmp_path):
    """The first tile of a sparse 1-D array's dimension: "decode" shows the first cells of TileDB-Py's global
    order (capacity 4 per tile) and highlights the tile's bytes in its data file."""
    tiledb = pytest.importorskip("tiledb")
    root = corpus.root(_case(V22, "enumerations"))
    _open(browser, _render(root, tmp_path / "page.html"), shots, "tile-decode")
    with tiledb.open(str(root)) as A:
        first = A.query(order="G")[:]["d"][:A.schema.capacity].tolist()
    data = next(p for p in root.rglob("d0.tdb"))
    link = browser.find_element("css selector", f"a.flink[data-file='{data.relative_to(root).as_posix()}']")
    browser.execute_script("arguments[0].click()", link)
    buttons = browser.find_elements("css selector", ".tile button")
    button = next(b for b in buttons if "tile 0 of d " in b.get_attribute("textContent"))
    browser.execute_script("arguments[0].click()", button)
    shown = button.find_element("xpath", "following-sibling::span").get_attribute("textContent")
    assert shown.startswith(", ".join(map(str, first)) + " (4 cells)"), shown
    selected = browser.execute_script("return Array.from(document.querySelectorAll('#hex .b.sel')).map(e => +e.dataset.o)")
    assert selected and selected[0] == 0 and selected == list(range(selected[0], selected[-1] + 1))


def test_enumerated_cells_show_their_labels(browser, shots, tmp_path):
    tiledb = pytest.importorskip("tiledb")
    root = corpus.root(_case(V22, "enumerations"))
    text = _open(browser, _render(root, tmp_path / "page.html"), shots, "enumerations-labels")
    with tiledb.open(str(root)) as A:
        labels = {str(v) for v in A[:]["color"][:20]}  # TileDB-Py reads an enumerated attribute as labels
    assert labels and all(label in text for label in labels), labels


def test_a_group_page(browser, shots, tmp_path):
    case = _case(V22, "group")
    truth, root = corpus.truth(case), corpus.root(case)
    text = _open(browser, _render(root, tmp_path / "page.html"), shots, "group")
    members = [m["name"] for m in truth["group"]["members"]] + [m["name"] for g in truth["subgroups"].values()
                                                                for m in g["members"]]
    names = members + [n for a in truth["member_arrays"].values() for n in _schema_names(a["schema"])
                       + _fragment_names(a)]
    assert not [n for n in names if n not in text]
    _check_fields(browser, root, next((root / "__group").iterdir()))


@pytest.mark.parametrize("writer,name,pick", [
    (V22, "dense_2d_multiattr", lambda r: sorted((r / "__schema").iterdir())[-1]),
    (V12, "sparse_2d_rtree", lambda r: next(r.rglob("__fragment_metadata.tdb"))),
    (V22, "filter_zstd", lambda r: next(p for p in r.rglob("*.tdb") if p.parent.parent.name == "__fragments"
                                        and p.name != "__fragment_metadata.tdb"))],
    ids=["schema", "fragment-metadata", "data"])
def test_a_file_page(browser, shots, tmp_path, writer, name, pick):
    root = corpus.root(_case(writer, name))
    f = pick(root)
    _open(browser, _render(f, tmp_path / "page.html"), shots, f"file-{f.name[:24]}")
    _check_fields(browser, f, f)


def test_markup_in_a_file_name_stays_text(browser, shots, tmp_path):
    """A stray file named like markup: the page shows its name as text and runs nothing of it (an injected
    <img> would ask the network for "x" and log an error)."""
    shutil.copytree(corpus.root(_case(V22, "dense_2d_multiattr")), tmp_path / "a")
    name = "<img src=x onerror=console.error(1)><!--<script>"
    (tmp_path / "a" / name).write_bytes(b"<script>console.error(2)</script>")
    text = _open(browser, _render(tmp_path / "a", tmp_path / "page.html"), shots, "markup-name")
    assert name in text and "stray-files" in text
    browser.execute_script("arguments[0].click()", browser.find_element(
        "xpath", "//a[contains(@class, 'flink') and starts-with(@data-file, '<img')]"))
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert name in browser.execute_script("return document.getElementById('ptree').textContent")


def test_a_broken_array_page_says_why_and_keeps_its_files(tmp_path):
    """A fragment metadata file whose footer length points before the file: the array does not open, and the
    page still lists its files, shows validate's finding, and the reason in place of the array's sections."""
    from tdbformat.show.html import page

    shutil.copytree(corpus.root(_case(V22, "sparse_delete")), tmp_path / "a")
    meta = next((tmp_path / "a").rglob("__fragment_metadata.tdb"))
    meta.write_bytes(meta.read_bytes()[:-8] + b"\xff" * 8)
    text = page(tmp_path / "a")
    assert "the array does not open: " in text and "file-parses" in text
    assert all(p.name in text for p in corpus.files(tmp_path / "a"))


@pytest.mark.parametrize("dialect", ["tiledb-0.6.1/my_workspace/sparse_arrays/sparse_zstd_rle_bzip2",
                                     "tiledb-1.2.2/my_sparse_array"])
def test_a_page_of_an_array_from_before_format_version_1(tmp_path, dialect):
    """Its data files are parsed whole (no fields inside): the page lists and shows every file all the same."""
    from tdbformat.show.html import page

    root = Path(__file__).resolve().parents[1] / "data" / "prev1" / dialect
    text = page(root)
    assert "before format version 1" in text and all(p.name in text for p in corpus.files(root))


def test_a_large_array_is_sampled_and_says_so(tmp_path):
    """A sparse array of 6000 two-cell tiles (TileDB-Py writes it) and a data file over FILE_BYTES: the page
    draws every third MBR, embeds the first FILE_BYTES of the file, says both, and stays small."""
    tiledb = pytest.importorskip("tiledb")
    import numpy as np

    from tdbformat.show.html import FILE_BYTES, PAGE_BYTES, page

    uri = str(tmp_path / "big")
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99_999), tile=100, dtype=np.int64),
                        tiledb.Dim("y", domain=(0, 99_999), tile=100, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, capacity=2,
                                                attrs=[tiledb.Attr("a", dtype=np.float64)]))
    rng = np.random.default_rng(7)
    with tiledb.open(uri, "w") as A:
        A[np.arange(12_000) * 8, rng.integers(0, 100_000, 12_000)] = rng.random(12_000)
    text = page(uri)
    frag = next(Path(uri, "__fragments").iterdir()).name
    assert f"{frag}: 6000 MBRs, 1 in every 3 drawn" in text
    assert text.count("stroke-width=0.6") == 2000  # one pair of dimensions: 2000 MBRs drawn
    assert f"file: the first {FILE_BYTES} of " in text
    assert len(text.encode()) < PAGE_BYTES * 4 // 3 + (1 << 20)


def test_the_timeline_marks_deletes_and_the_domains_overlap_where_tiledb_says(tmp_path):
    """sparse_delete: one mark per delete commit on disk, at its timestamp. A 3-D array of two fragments that
    TileDB-Py writes overlapping: one plot per pair of dimensions, each fragment's rectangle where its
    non-empty domain (TileDB-Py's fragment info) puts it, so the two overlap in every plot."""
    tiledb = pytest.importorskip("tiledb")
    import numpy as np

    from tdbformat.show.html import page

    root = corpus.root(_case(V22, "sparse_delete"))
    text = page(root)
    deletes = sorted(p.name for p in (root / "__commits").glob("*.del"))
    marks = re.findall(r"<title>delete: __commits/([^ ]+) at (\d+)</title>", text)
    assert [(n, int(n.split("_")[2])) for n in deletes] == [(n, int(t)) for n, t in marks]

    uri = str(tmp_path / "cube")
    dims = [tiledb.Dim(n, domain=(0, 99), tile=10, dtype=np.int32) for n in "xyz"]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True,
                                                attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for lo, hi in ((0, 59), (40, 99)):
        with tiledb.open(uri, "w") as A:
            A[[lo, hi], [lo, hi], [lo, hi]] = np.array([1, 2], np.int32)
    text = page(uri)
    info = tiledb.array_fragments(uri)
    figures = re.findall(r"<figure>.*?</figure>", text)
    assert len(figures) == 3  # x-y, x-z, y-z
    for fig in figures:
        boxes = []
        for ned, frag in zip(info.nonempty_domain, info.uri):
            name = frag.rstrip("/").rsplit("/", 1)[-1]
            x, y, w, h = map(float, re.search(r"<rect x=([\d.]+) y=([\d.]+) width=([\d.]+) height=([\d.]+) "
                                              rf"fill='[^']+' fill-opacity=0.25[^>]*><title>{name}:", fig).groups())
            lo, hi = ned[0]  # every dimension has the same bounds here; the union is [0, 99]: 100 cells, 300 px
            assert (x, w) == pytest.approx((40 + 3 * lo, 3 * (hi - lo + 1)), abs=0.01)
            assert (y, h) == pytest.approx((40 + 300 - 3 * (hi + 1), 3 * (hi - lo + 1)), abs=0.01)
            boxes.append((x, x + w))
        assert boxes[1][0] < boxes[0][1]  # the second starts before the first ends: they overlap


def test_the_command_line(tmp_path, capsys):
    out = tmp_path / "report.html"
    root = corpus.root(_case(V22, "dense_2d_multiattr"))
    assert main(["html", str(root), "-o", str(out)]) == 0
    assert capsys.readouterr().out == f"{out}: {out.stat().st_size} bytes\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # written atomically: no temporary left
    assert main(["html", str(tmp_path / "nothing"), "-o", str(tmp_path / "x.html")]) == 1  # no array there: a FormatError (exit 1; 2 is for bad arguments)
    assert "no file or folder here" in capsys.readouterr().err and not (tmp_path / "x.html").exists()


def test_a_group_page_classes_its_member_arrays_files(tmp_path):
    """A group whose member array was consolidated and not vacuumed: the replaced fragments' files are
    reclaimable (TileDB-Py's fragment info lists them in to_vacuum), the rest live."""
    tiledb = pytest.importorskip("tiledb")
    import numpy as np

    from tdbformat.show.html import _collect

    group = str(tmp_path / "g")
    tiledb.Group.create(group)
    uri = f"{group}/arr"
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 9), tile=5, dtype=np.int32))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for ts in (1, 2):
        with tiledb.open(uri, "w", timestamp=ts) as A:
            A[0:10] = np.full(10, ts, np.int32)
    tiledb.consolidate(uri)
    with tiledb.Group(group, "w") as g:
        g.add("arr", name="arr", relative=True)
    gone = {u.rstrip("/").rsplit("/", 1)[-1] for u in tiledb.array_fragments(uri, include_mbrs=False).to_vacuum}
    html_text = _collect(group, None)[1]
    rows = re.findall(r"<tr class='st-(\w+)'><td><a href='#' class=flink data-file='([^']+)'>", html_text)
    data = {path: state for state, path in rows if path.endswith("/a0.tdb")}
    assert len(gone) == 2 and len(data) == 3
    assert {p: s for p, s in data.items()} == {p: "reclaimable" if p.split("/")[-2] in gone else "live" for p in data}
