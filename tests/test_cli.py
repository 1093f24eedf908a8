"""The `companyos` command line: every command's --help, and each command doing its job."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from companyos.cli import build_parser, main
from companyos.domain import FAMILY_NAMES, SUITES, parse_instance_id
from companyos.domain.chaos import KIND_NAMES

COMMANDS = ("serve", "demo", "episodes", "show", "verify", "tools", "tasks", "eval")


def test_help_lists_every_command_with_examples():
    exe = shutil.which("companyos", path=str(Path(sys.executable).parent))
    assert exe is not None
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    for command in COMMANDS:
        assert command in out
    assert "examples:" in out and "companyos tasks --suite test" in out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_explains_itself(command, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([command, "--help"])
    assert done.value.code == 0
    assert len(capsys.readouterr().out) > 100


def test_tasks_prints_families_difficulties_chaos_and_suites(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    for name in (*FAMILY_NAMES, *KIND_NAMES, *SUITES):
        assert name in out, name
    assert "held out" in out and "Difficulty" in out


def test_tasks_json_is_the_whole_catalogue(capsys):
    assert main(["tasks", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in data["families"]] == list(FAMILY_NAMES)
    assert len(data["chaos"]) == len(KIND_NAMES) and len(data["difficulties"]) == 4
    assert {s["name"]: s["instances"] for s in data["suites"]}["test"] == 1200


def test_tasks_lists_a_suites_instance_ids(capsys):
    assert main(["tasks", "--suite", "train"]) == 0
    ids = capsys.readouterr().out.split()
    assert len(ids) == len(SUITES["train"].instances())
    assert all(parse_instance_id(i) is not None for i in ids)
    assert not any(i.startswith("contract_renewal") for i in ids)


def test_tasks_describes_one_instance(capsys):
    assert main(["tasks", "--instance", "purchase_order-d2-s17"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["instance_id"] == "purchase_order-d2-s17" and info["goal"]["tickets"]
    assert re.fullmatch(r"[0-9a-f]{16}", info["fingerprint"])
    assert info["max_steps"] >= info["oracle_worst_case_steps"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["tasks", "--instance", "payroll-d2-s1"], "not an instance id"),
        (["tasks", "--instance", "purchase_order-d9-s1"], "difficulty must be"),
        (["tasks", "--suite", "dev"], "unknown suite"),
        (["demo", "--task", "payroll", "--store", "memory://"], "unknown task"),
    ],
)
def test_bad_arguments_say_what_to_do(argv, says, capsys):
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_demo_then_episodes_show_and_verify_on_a_sqlite_file(tmp_path, capsys):
    store = f"sqlite:///{tmp_path / 'events.db'}"
    assert main(["demo", "--seed", "3", "--task", "purchase_order", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "outcome: success" in out
    assert main(["episodes", "--store", store]) == 0
    listed = capsys.readouterr().out
    assert "purchase" in listed and "success" in listed
    eid = re.search(r"episode=([0-9a-f-]{36})", out).group(1)
    assert main(["show", eid, "--step", "1", "--store", store]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["step"] == 1 and shown["outcome"] == "success"
    assert main(["verify", eid, "--store", store]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert main(["show", "nope", "--store", store]) == 2


def test_tools_prints_the_manifest(capsys):
    assert main(["tools"]) == 0
    tools = json.loads(capsys.readouterr().out)
    assert len(tools) >= 13
