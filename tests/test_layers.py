"""The layering holds: dependencies point one way, and the domain and projections are pure
(no I/O, no clock, no global randomness)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "events": {"companyos.events"},
    "domain": {"companyos.domain", "companyos.events.types"},
    "projections": {"companyos.projections", "companyos.domain", "companyos.events"},
    "api": {
        "companyos.api",
        "companyos.analytics",
        "companyos.projections",
        "companyos.domain",
        "companyos.events",
    },
    "analytics": {
        "companyos.analytics",
        "companyos.projections",
        "companyos.domain",
        "companyos.events",
    },
    "agents": {
        "companyos.agents",
        "companyos.api",
        "companyos.projections",
        "companyos.domain",
        "companyos.events",
    },
}
IMPURE = {
    "random",
    "time",
    "datetime",
    "os",
    "uuid",
    "secrets",
    "socket",
    "sqlite3",
    "sqlalchemy",
    "sqlmodel",
    "threading",
    "subprocess",
    "pathlib",
    "requests",
    "httpx",
}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: stays inside its own layer
                continue
            found.add(node.module or "")
    return found


def test_dependencies_point_one_way():
    for layer, allowed in ALLOWED.items():
        for path in (ROOT / layer).rglob("*.py"):
            for name in imports(path):
                if name.startswith("companyos"):
                    assert any(name == a or name.startswith(a + ".") for a in allowed), (
                        f"{path.relative_to(ROOT)} imports {name}"
                    )


def test_domain_and_projections_are_pure():
    for layer in ("domain", "projections"):
        for path in (ROOT / layer).rglob("*.py"):
            bad = {n.split(".")[0] for n in imports(path)} & IMPURE
            assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
            assert "open(" not in path.read_text()


def test_the_wheel_installs_only_the_companyos_package(tmp_path):
    """The layer folders map into `companyos.*`: nothing named `api` or `events` lands in
    site-packages (the original installed `env`, `server` and `apps`)."""
    import shutil
    import subprocess
    import sys
    import zipfile

    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    shutil.rmtree(ROOT / "build", ignore_errors=True)  # setuptools' scratch in the checkout
    wheel = next(tmp_path.glob("companyos-*.whl"))
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"companyos", wheel.name.split("-py3")[0] + ".dist-info"}
    names = zipfile.ZipFile(wheel).namelist()
    for layer in ("domain", "events", "projections", "api", "agents"):
        assert f"companyos/{layer}/__init__.py" in names
    for asset in ("index.html", "app.js", "style.css"):  # the replay viewer's package data
        assert f"companyos/api/viewer/{asset}" in names
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.util as u;print(u.find_spec('domain'), u.find_spec('api'))",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.strip() == "None None"
