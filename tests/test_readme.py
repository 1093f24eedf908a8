"""Every code block of the README runs as printed, against a live `companyos serve`.

A block is fenced ```python or ```bash (run) or ```text (not code); any other fence fails the
test. A block that cannot run here says so, and why, in an HTML comment on the line before it:

    <!-- readme-test: illustrative: <why, and what runs in its place> -->   never run
    <!-- readme-test: slow: <why> -->      run only with COMPANYOS_README_FULL=1 (`make readme`)

The networked examples name http://127.0.0.1:8000 (or localhost:8000). The server is started
there when the port is free, so they run character for character; when something else holds
port 8000 (say a developer's own `make serve`), its address is the one thing changed. Python
blocks run with this interpreter, bash blocks with `bash -e -o pipefail` and this interpreter's
`companyos` on the PATH, all in a fresh directory (their `data/` is made there).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from .serving import ServerProcess

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUNNABLE = ("python", "bash")
FULL = os.environ.get("COMPANYOS_README_FULL") == "1"
MARK = re.compile(r"<!--\s*readme-test:\s*(illustrative|slow):\s*(.*?)-->\s*\n\Z", re.S)


@dataclass(frozen=True)
class Block:
    line: int
    lang: str
    code: str
    mark: str | None
    reason: str

    @property
    def id(self) -> str:
        return f"line{self.line}-{self.lang}"


def blocks() -> list[Block]:
    text = README.read_text()
    out = []
    for m in re.finditer(r"^```(\S*)\n(.*?)^```", text, flags=re.S | re.M):
        before = text[max(0, m.start() - 600) : m.start()]
        mark = MARK.search(before)
        out.append(
            Block(
                line=text.count("\n", 0, m.start()) + 1,
                lang=m.group(1),
                code=m.group(2),
                mark=mark.group(1) if mark else None,
                reason=" ".join(mark.group(2).split()) if mark else "",
            )
        )
    return out


def python_blocks() -> list[str]:
    return [b.code for b in blocks() if b.lang == "python"]


def test_every_block_is_runnable_or_says_why_not():
    found = blocks()
    assert len(found) >= 15
    for b in found:
        assert b.lang in (*RUNNABLE, "text"), f"README line {b.line}: fence ```{b.lang}"
        if b.mark:
            assert b.lang in RUNNABLE and len(b.reason) >= 30, (b.line, b.reason)
    assert sum(b.mark is None and b.lang in RUNNABLE for b in found) >= 7


def test_five_line_example_runs(tmp_path):
    first = python_blocks()[0]
    assert len(first.strip().splitlines()) == 5
    done = subprocess.run(
        [sys.executable, "-c", first], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "STALE" in done.stdout


def test_readme_gives_the_two_commands_first():
    text = README.read_text()
    assert text.index("make serve") < text.index("make test") < text.index("```python")


def test_every_relative_link_names_a_file_that_exists():
    # Documents the README points to (the performance history, the failure taxonomy, the
    # plots) move and get renamed; a link to nothing is an example that no longer runs.
    text = README.read_text()
    links = re.findall(r"\]\(((?!https?:|#|mailto:)[^)\s]+)\)", text)
    assert len(links) >= 5
    missing = [link for link in links if not (ROOT / link.split("#", 1)[0]).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_family_table_is_what_tasks_prints():
    """The README's table of families and step budgets is `companyos tasks --markdown`."""
    from companyos.tasks import markdown_families

    assert markdown_families() in README.read_text()


# ------------------------------------------------------------------ every block, live


def _port_8000_free() -> bool:
    from companyos.cli import check_port

    try:
        check_port("127.0.0.1", 8000)
    except ValueError:
        return False
    return True


def _ours(server: ServerProcess, store: str) -> bool:
    """The server answering at ``server.url`` writes to ``store``: another process that took
    port 8000 first (a parallel test run) would answer health checks just as well."""
    from companyos.events import open_store

    probe = f"readme-probe-{uuid.uuid4().hex}"
    httpx.post(f"{server.url}/reset", json={"episode_id": probe, "seed": 0}, timeout=30)
    events = open_store(store)
    try:
        return events.version(probe) != -1
    finally:
        events.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    here = tmp_path_factory.mktemp("readme")
    store = f"sqlite:///{here / 'server.db'}"
    server = None
    if _port_8000_free():
        server = ServerProcess(store, port=8000)
        try:
            server.start()
            if not _ours(server, store):
                raise RuntimeError("someone else's server answers on 8000")
        except (RuntimeError, TimeoutError):  # 8000 was taken between the check and the start
            server.stop()
            server = None
    if server is None:
        server = ServerProcess(store)
        server.start()
    try:
        yield server, here
    finally:
        server.stop()


RUN = [b for b in blocks() if b.lang in RUNNABLE and b.mark != "illustrative"]


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_block_runs_as_printed(block: Block, live: tuple[ServerProcess, Path]) -> None:
    if block.mark == "slow" and not FULL:
        pytest.skip(f"slow ({block.reason}); COMPANYOS_README_FULL=1 runs it")
    server, cwd = live
    code = block.code
    if server.port != 8000:  # the one change when 8000 was taken
        code = code.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}")
        code = code.replace("localhost:8000", f"127.0.0.1:{server.port}")
    if block.lang == "python":
        cmd = [sys.executable, "-c", code]
    else:
        for tool in ("curl", "jq"):
            if tool in code and shutil.which(tool) is None:
                pytest.fail(
                    f"{tool} is not installed: the example at README line {block.line} uses it"
                )
        cmd = ["bash", "-e", "-o", "pipefail", "-c", code]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800 if FULL else 300
    )
    where = f"README line {block.line}:\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, where
    assert "Traceback" not in done.stderr, where
    # An example that "works" but shows a refusal is broken too: curl -s prints an error answer
    # and exits 0, and a call the environment refuses is an observation, not an exception.
    assert '"detail":' not in done.stdout, where
    assert not re.search(r"\b(Rejected|Invalid action):|\"error\": ?\"|'error': '", done.stdout), (
        where
    )
