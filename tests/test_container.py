"""The Dockerfile, checked without Docker (no daemon here): its parts agree with the repository,
a wheel built from exactly its build context is complete, and its command line and health check
work when run directly on this machine."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .serving import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Instruction:
    stage: int
    op: str
    args: str


def instructions() -> list[Instruction]:
    text = (ROOT / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)  # line continuations
    out, stage = [], -1
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, args = line.partition(" ")
        if op.upper() == "FROM":
            stage += 1
        out.append(Instruction(stage, op.upper(), args.strip()))
    return out


def final(op: str) -> list[str]:
    ins = instructions()
    last = max(i.stage for i in ins)
    return [i.args for i in ins if i.stage == last and i.op == op]


def exec_form(args: str) -> list[str]:
    assert args.startswith("["), f"use the exec form (a JSON list), not {args!r}"
    argv = json.loads(args)
    assert all(isinstance(a, str) for a in argv)
    return argv


def env_vars() -> dict[str, str]:
    found: dict[str, str] = {}
    for args in final("ENV"):
        for part in shlex.split(args):
            key, _, value = part.partition("=")
            found[key] = value
    return found


def ignored(rel: str) -> bool:
    """Docker's .dockerignore, for the patterns this repository uses (no negations)."""
    patterns = [
        p.strip()
        for p in (ROOT / ".dockerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]
    assert not any(p.startswith("!") for p in patterns), "extend ignored() for negations"
    parts = Path(rel).parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for p in patterns:
        anywhere = p.startswith("**/")
        pat = p[3:] if anywhere else p
        for prefix in prefixes:
            if fnmatch.fnmatchcase(prefix, pat):
                return True
            if anywhere and fnmatch.fnmatchcase(prefix.split("/")[-1], pat):
                return True
    return False


def copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of every COPY from the build context (not --from a stage)."""
    out = []
    for i in instructions():
        if i.op != "COPY" or "--from" in i.args:
            continue
        *sources, dest = shlex.split(i.args)
        out.append(([s.rstrip("/") for s in sources], dest))
    return out


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def openenv_port() -> int:
    match = re.search(r"^port:\s*(\d+)\s*$", (ROOT / "openenv.yaml").read_text(), re.M)
    assert match, "openenv.yaml has no port"
    return int(match.group(1))


# ---------------------------------------------------------------------------- static checks


def test_slim_base_and_a_non_root_user():
    bases = [i.args for i in instructions() if i.op == "FROM"]
    assert bases and all(b.split()[0] == "python:3.11-slim" for b in bases)
    users = final("USER")
    assert users, "the image must not run as root"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    assert any("useradd" in r and re.search(rf"\b{user}\b", r) for r in final("RUN"))


def test_the_command_is_a_console_script_serving_the_openenv_port():
    port = openenv_port()
    assert final("EXPOSE") == [str(port)]
    argv = exec_form(final("CMD")[-1])
    scripts = pyproject()["project"]["scripts"]
    assert argv[0] in scripts, f"{argv[0]} is not a console script of the package"
    assert argv[1] == "serve" and scripts[argv[0]] == "companyos.cli:main"
    flags = dict(zip(argv[2::2], argv[3::2], strict=True))
    assert flags == {"--host": "0.0.0.0", "--port": str(port)}


def test_the_health_check_needs_only_python_and_asks_health():
    (check,) = final("HEALTHCHECK")
    options, _, command = check.partition("CMD ")
    assert "--interval" in options and "--timeout" in options
    argv = exec_form(command)
    assert argv[:2] == ["python", "-c"]
    assert f"127.0.0.1:{openenv_port()}/health" in argv[2] and "urllib" in argv[2]


def test_the_store_lives_on_the_volume():
    env = env_vars()
    store = env["COMPANYOS_STORE"]
    assert store.startswith("sqlite:////"), "an absolute SQLite path: sqlite:////data/..."
    (volume,) = final("VOLUME")
    assert store.removeprefix("sqlite:///").startswith(volume.rstrip("/") + "/")
    assert any("chown" in r and volume in r for r in final("RUN")), "the user must own it"


def test_every_copy_source_exists_and_reaches_the_build_context():
    for sources, _ in copies():
        for src in sources:
            assert (ROOT / src).exists(), f"COPY {src}: no such file in the repository"
            assert not ignored(src), f"COPY {src}: excluded by .dockerignore"
    for rel in (".venv", "data", ".git", "tests", "api/__pycache__/x.pyc"):
        assert ignored(rel), f"{rel} should stay out of the build context"


def test_the_image_gets_every_package_folder():
    copied = {src for sources, _ in copies() for src in sources}
    tool = pyproject()["tool"]["setuptools"]
    folders = {d.split("/")[0] for d in tool["package-dir"].values()}
    assert folders <= copied, f"not copied: {sorted(folders - copied)}"
    assert pyproject()["project"]["readme"] in copied  # setuptools reads it while building


def build_context(into: Path) -> Path:
    """Exactly the files the COPY lines take from the context, .dockerignore applied."""
    for sources, _ in copies():
        for src in sources:
            path = ROOT / src
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            for f in files:
                rel = f.relative_to(ROOT).as_posix()
                if not ignored(rel):
                    (into / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, into / rel)
    return into


def test_a_wheel_built_from_the_context_has_everything(tmp_path):
    context = build_context(tmp_path / "context")
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
            str(tmp_path / "wheels"),
            str(context),
        ],
        check=True,
        timeout=300,
    )
    wheel = next((tmp_path / "wheels").glob("companyos-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for asset in ("index.html", "app.js", "style.css"):
        assert f"companyos/api/viewer/{asset}" in names
    for package in pyproject()["tool"]["setuptools"]["packages"]:
        folder = package.replace(".", "/")
        assert any(n.startswith(folder + "/") for n in names), f"{package} not in the wheel"
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "companyos = companyos.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


# ---------------------------------------------------------------------------- run it here


def test_the_command_and_health_check_work_outside_docker(tmp_path):
    """Run the image's CMD with the image's environment (store and port moved: there is no
    /data here and 8000 may be taken), then its HEALTHCHECK against it."""
    port = free_port()
    argv = exec_form(final("CMD")[-1])
    argv = [str(Path(sys.executable).with_name(argv[0])), *argv[1:]]
    argv[argv.index("--port") + 1] = str(port)
    argv[argv.index("--host") + 1] = "127.0.0.1"
    env = {**os.environ, **env_vars()}
    env["COMPANYOS_STORE"] = f"sqlite:///{tmp_path / 'companyos.db'}"
    check = exec_form(final("HEALTHCHECK")[0].partition("CMD ")[2])
    check = [sys.executable, check[1], check[2].replace(f":{openenv_port()}/", f":{port}/")]

    def healthy() -> bool:
        return subprocess.run(check, capture_output=True, timeout=30).returncode == 0

    assert not healthy()  # nothing listening yet: the check must notice
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        assert healthy()
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()
    assert (tmp_path / "companyos.db").exists()  # it used the store it was given
    assert not healthy()
