"""`bench/bench_options.py`, the command line every benchmark shares: its docstring shown as
written, ``--json`` last, and the results written only when asked."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from tests.helpers import BENCH

# Loaded from its file: putting bench/ on sys.path would let its modules shadow others here.
_spec = importlib.util.spec_from_file_location("bench_options", BENCH / "bench_options.py")
assert _spec is not None and _spec.loader is not None
bench_options = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_options)

DOC = """First line.

    python bench/x.py [--n N]

Indented lines stay as written."""


def test_help_is_the_docstring_as_written_and_json_comes_last():
    parser = bench_options.with_json(bench_options.parser(DOC))
    text = parser.format_help()
    assert "    python bench/x.py [--n N]\n\nIndented lines stay as written." in text
    assert text.rstrip().endswith("--json JSON  also write the results here")
    assert parser.parse_args(["--json", "out.json"]).json == Path("out.json")
    assert parser.parse_args([]).json is None


def test_results_are_written_only_when_asked(tmp_path: Path):
    bench_options.write_json(None, {"a": 1})
    assert list(tmp_path.iterdir()) == []
    out = tmp_path / "r.json"
    bench_options.write_json(out, {"a": 1, "b": [1.5]})
    assert json.loads(out.read_text()) == {"a": 1, "b": [1.5]}
