"""The original CompanyOS's own files, run unchanged against a real `companyos serve` with
only the base URL changed. They are not part of this repository (nothing of the original's
code is copied here): point ``COMPANYOS_ORIGINAL_REPO`` at a checkout of
Satyamshahi17/companyos to run these; without it they skip, and `test_original_http.py`
covers the same behaviour re-expressed.

    COMPANYOS_ORIGINAL_REPO=/path/to/its/checkout .venv/bin/python -m pytest \
        tests/test_original_files.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .serving import running_server

ORIGINAL = os.environ.get("COMPANYOS_ORIGINAL_REPO")
pytestmark = pytest.mark.skipif(
    not ORIGINAL or not (Path(ORIGINAL) / "training" / "random_baseline.py").is_file(),
    reason="set COMPANYOS_ORIGINAL_REPO to a checkout of the original CompanyOS",
)
HOSTED = "https://satyamshahi-companyos.hf.space"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("orig-files") / "store.db"
    with running_server(f"sqlite:///{db}") as url:
        yield url


def run_python(code: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, *args] if not code else [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_its_random_baseline_script(base, tmp_path):
    repo = Path(ORIGINAL)  # type: ignore[arg-type]
    done = run_python(
        "",
        repo,
        "training/random_baseline.py",
        "--episodes",
        "30",
        "--env-url",
        f"{base}/original",
        "--output",
        str(tmp_path / "curve.png"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"Mean reward:\s+[-+]\d", done.stdout)
    assert "Success rate:" in done.stdout and (tmp_path / "curve.png").is_file()


def test_its_readme_requests_examples(base):
    text = (Path(ORIGINAL) / "README.md").read_text()  # type: ignore[arg-type]
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "requests" in b]
    assert len(blocks) >= 2
    for block in blocks:
        done = run_python(block.replace(HOSTED, f"{base}/original"), Path(ORIGINAL))  # type: ignore[arg-type]
        assert done.returncode == 0, (block, done.stderr[-2000:])


def test_its_notebooks_http_cells(base):
    """Reachability, its REST client and its random baseline (cells 3-5), on the curriculum
    mount: the notebook prints the progress flags from the observation."""
    nb = json.loads((Path(ORIGINAL) / "training" / "train.ipynb").read_text())  # type: ignore[arg-type]
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    wanted = [c for c in code if "/health" in c or "def env_step" in c or "BASELINE_EPISODES" in c]
    assert len(wanted) == 3
    program = "\n\n".join([f"ENV_URL = {base + '/original/curriculum'!r}", *wanted])
    done = run_python(program, Path(ORIGINAL))  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Environment reachable and working" in done.stdout
    assert "Baseline Results" in done.stdout


def test_its_client_module_cannot_be_instantiated_anywhere():
    """Its client.py subclasses OpenEnv's abstract EnvClient without the three methods a
    client must define, so it fails before it could talk to any server: there is no
    behaviour of it to keep. `companyos.api.client.CompanyOSClient` is the working one."""
    code = "import client\nclient.CompanyOSEnv(base_url='http://127.0.0.1:9')"
    done = run_python(code, Path(ORIGINAL))  # type: ignore[arg-type]
    assert done.returncode != 0 and "Can't instantiate abstract class" in done.stderr
