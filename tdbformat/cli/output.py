"""What the command prints: the JSON envelope of every ``--json`` document, rich tables and consoles, progress
bars (on stderr, only when a person watches)."""

from __future__ import annotations

import sys

__all__ = ["envelope", "print_json", "progress_wanted", "new_console", "new_table", "meta_table", "print_schema",
           "progress"]


def envelope(command: str, path: str, **body) -> dict:
    """The envelope of every --json document: its shape is docs/json-schema/<command>.v<N>.json."""
    from ..show import JSON_VERSION

    return {"json_schema": f"{command}.v{JSON_VERSION}", "path": path, **body}


def print_json(doc) -> None:
    import json

    print(json.dumps(doc, ensure_ascii=False, allow_nan=False))


def progress_wanted() -> bool:
    """Progress bars go to stderr, and only when a person watches both streams (never into a pipe)."""
    return sys.stdout.isatty() and sys.stderr.isatty()


def new_console():
    from rich.console import Console

    # piped output keeps whole names and values: a wide page rather than the 80 columns rich assumes
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=240)


def new_table(title: str, columns: list, rows: list):
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*(("" if v is None else str(v)) for v in r))
    return t


def meta_table(meta: dict, title: str):
    return new_table(title, ["key", "type", "value"], [(k, e["type"], e["value"]) for k, e in meta.items()])


def print_schema(console, d: dict) -> None:
    from ..show import jsonable

    console.print(f"[bold]{d['array_type']} array[/bold], schema {d['name']} (format version {d['format_version']})")
    console.print(f"cell order {d['cell_order']}, tile order {d['tile_order']}, capacity {d['capacity']}, "
                  f"duplicates {'allowed' if d['allows_duplicates'] else 'not allowed'}"
                  + (f", current domain {d['current_domain']}" if d["current_domain"] else ""))

    def filters(fs):
        return " → ".join(f["type"] + (f"({', '.join(f'{k}={v}' for k, v in f['options'].items())})"
                                       if f["options"] else "") for f in fs)
    console.print(new_table("dimensions", ["name", "type", "domain", "tile", "filters"],
                         [(x["name"], x["type"] + (" (var)" if x["var"] else ""), x["domain"], x["tile"],
                           filters(x["filters"])) for x in d["dimensions"]]))
    console.print(new_table("attributes", ["name", "type", "cells", "nullable", "fill", "enumeration", "filters"],
                         [(x["name"], x["type"], x["cell_val_num"], x["nullable"], x["fill"], x["enumeration"],
                           filters(x["filters"])) for x in d["attributes"]]))
    for e in d["enumerations"]:
        console.print(f"enumeration {e['name']}: {jsonable(e['values'])}")
    if d["dimension_labels"]:
        console.print(new_table("dimension labels", ["name", "dimension", "type", "order", "uri"],
                             [(x["name"], x["dimension"], x["type"], x["order"], x["uri"])
                              for x in d["dimension_labels"]]))
    console.print(f"coords {filters(d['coords_filters']) or '-'}; offsets {filters(d['offsets_filters']) or '-'}; "
                  f"validity {filters(d['validity_filters']) or '-'}\n")


def walking(label: str, fn):
    """``fn(progress)`` under a bar on stderr (``label``, an object at a time) when a person watches."""
    bar, advance = progress(label)
    if bar is None:
        return fn(None)
    with bar:
        return fn(advance)


def progress(label: str = "validating tiles"):
    """(rich Progress or None, callback for validate(progress=)): a bar on stderr, when a person watches."""
    if not progress_wanted():
        return None, None
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=0)

    def advance(done=0, total=0):
        if total:
            bar.update(task, total=bar.tasks[0].total + total)
        if done:
            bar.update(task, advance=done)
    return bar, advance


def cli_words(text: str) -> str:
    """The API's words as the command line says them: ``pass key=`` is ``--key``."""
    return text.replace("pass key=", "pass --key KEY")
