"""`toolwire doctor`: each check says how a part stands and what to do when it is not fine."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from toolwire.doctor import Check, checks, report


def everything(module: str) -> object:
    return object()


def find_all_but(*missing: str) -> Callable[[str], object | None]:
    return lambda module: None if module in missing else object()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def the(found: list[Check], start: str) -> Check:
    [check] = [check for check in found if check.what.startswith(start)]
    return check


def test_a_missing_extra_the_defaults_need_is_a_problem_with_its_fix(tmp_path: Path) -> None:
    found = checks(data_dir=tmp_path, port=free_port(), find=find_all_but("llama_cpp"))
    check = the(found, "local extra")
    assert check.status == "problem"
    assert check.fix is not None and "toolwire[local]" in check.fix


def test_a_missing_optional_extra_is_no_problem(tmp_path: Path) -> None:
    found = checks(data_dir=tmp_path, port=free_port(), find=find_all_but("mcp"))
    assert the(found, "mcp extra").status == "-"


def test_a_port_in_use_is_a_problem(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        found = checks(data_dir=tmp_path, port=holder.getsockname()[1], find=everything)
    assert the(found, "port").status == "problem"


def test_a_data_directory_that_is_a_file_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("")
    found = checks(data_dir=tmp_path / "data", port=free_port(), find=everything)
    assert the(found, "data directory").status == "problem"


def test_a_missing_test_program_is_no_problem(tmp_path: Path) -> None:
    found = checks(data_dir=tmp_path, port=free_port(), find=everything, which=lambda program: None)
    assert the(found, "node").status == "-"


def test_the_status_is_1_when_something_is_a_problem() -> None:
    assert report([Check("ok", "a"), Check("problem", "b", "do c")], io.StringIO()) == 1


def test_the_status_is_0_when_nothing_is_a_problem() -> None:
    assert report([Check("ok", "a"), Check("-", "b", "add it")], io.StringIO()) == 0


def test_each_fix_is_printed_under_its_line() -> None:
    out = io.StringIO()
    report([Check("problem", "local extra: llama_cpp is missing", "make local")], out)
    assert out.getvalue().splitlines()[1:] == ["problem  local extra: llama_cpp is missing", "         -> make local"]


def test_the_command_prints_every_check_and_a_status_to_match(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "doctor", "--data-dir", str(tmp_path), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("toolwire ")
    assert any(line.startswith("ok       Python ") for line in lines)
    assert done.returncode == (1 if any(line.startswith("problem") for line in lines) else 0)
