"""The packages work once installed: the wheel in a fresh venv, away from the source tree.

What `make dist` does, once per session: `python -m build` (the sdist, then the wheel built from
the sdist, so a file missing from the sdist fails here too) and `twine check`. The wheel is then
installed with its `server` extra in a new venv (pip's cache makes that quick after the first
time), and everything below runs with that venv's interpreter from a temporary folder: nothing
can be imported from src/. The version has one source, `__version__` in src/toolwire/__init__.py:
pyproject.toml reads it (hatch's dynamic version) and the TypeScript client's is checked against it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import toolwire
from installed import ANSWER, IDE_GROUP, TOKEN, outside_env, serve_installed

ROOT = Path(__file__).resolve().parent.parent


def test_versions_come_from_one_place() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/toolwire/__init__.py"
    package = json.loads((ROOT / "web" / "package.json").read_text())
    lock = json.loads((ROOT / "web" / "package-lock.json").read_text())
    [client_version] = re.findall(r'CLIENT_VERSION = "toolwire-web/(.+)"', (ROOT / "web/src/client.ts").read_text())
    found = {
        "web/package.json": package["version"],
        "web/package-lock.json": lock["version"],
        "web/package-lock.json (root package)": lock["packages"][""]["version"],
        "web/src/client.ts CLIENT_VERSION": client_version,
    }
    assert found == dict.fromkeys(found, toolwire.__version__), f"set them to {toolwire.__version__}"


@dataclass(frozen=True)
class Installed:
    """A fresh venv with the wheel installed, and a folder outside the repository to run things in."""

    python: Path
    toolwire: Path
    folder: Path

    def run(self, *command: str | Path, timeout: float = 60) -> str:
        done = subprocess.run(
            [str(part) for part in command],
            cwd=self.folder,
            env=outside_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"{command} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        return done.stdout


def _run(*command: str | Path, timeout: float = 240) -> None:
    done = subprocess.run(
        [str(part) for part in command], env=outside_env(), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{command} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    dist = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--outdir", dist, ROOT)
    [wheel] = dist.glob("toolwire-*.whl")
    [sdist] = dist.glob("toolwire-*.tar.gz")
    _run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist)
    venv = tmp_path_factory.mktemp("venv")
    try:
        # Without pip: this pip installs into it (`--python`), which saves the venv its own copy.
        _run(sys.executable, "-m", "venv", "--without-pip", venv)
    except (AssertionError, OSError) as error:  # pragma: no cover - an interpreter built without venv
        pytest.skip(f"python -m venv is not available here: {error}")
    python = venv / "bin" / "python"
    pip = (sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check")
    _run(*pip, "install", "--quiet", wheel, "toolwire[server]")  # README.md's line
    return Installed(python, venv / "bin" / "toolwire", tmp_path_factory.mktemp("elsewhere"))


@pytest.mark.dist
@pytest.mark.timeout(300)
def test_the_installed_command_tells_the_one_version(installed: Installed) -> None:
    assert installed.run(installed.toolwire, "--version") == f"toolwire {toolwire.__version__}\n"
    where = installed.run(installed.python, "-c", "import toolwire; print(toolwire.__file__, toolwire.__version__)")
    path, version = where.split()
    assert Path(path).is_relative_to(installed.python.parent.parent) and version == toolwire.__version__


@pytest.mark.dist
@pytest.mark.timeout(300)
def test_the_quickstart_runs_on_the_installed_package(installed: Installed) -> None:
    example = shutil.copy(ROOT / "examples" / "quickstart.py", installed.folder / "quickstart.py")
    printed = installed.run(installed.python, example)
    for outcome in ("SUCCESS", "ERROR", "TIMEOUT", "DENIED"):
        assert outcome in printed


CLIENT = textwrap.dedent(
    """
    import json
    import sys

    import anyio

    import toolwire
    from toolwire.client import connect


    async def open_file(path: str) -> str:
        return f"opened {path}"


    async def main() -> None:
        url, token, group = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
        handlers = {"OpenFile": open_file}
        async with connect(url, token=token, groups=[group], expanded_containers=["IDE"], handlers=handlers) as client:
            print(await client.ask("Open the config file"))
        print(toolwire.__file__)


    anyio.run(main)
    """
)


FETCH = """
import sys, urllib.request
for url in sys.argv[1:]:
    with urllib.request.urlopen(url) as response:
        print(response.status, response.headers.get_content_type())
"""


@pytest.mark.dist
@pytest.mark.timeout(300)
def test_the_installed_server_and_client_do_a_round_trip(installed: Installed) -> None:
    (installed.folder / "client.py").write_text(CLIENT)
    with serve_installed(installed.toolwire, installed.folder) as server:
        printed = installed.run(installed.python, "client.py", server.url, TOKEN, json.dumps(IDE_GROUP))
        site = server.url.replace("ws://", "http://").removesuffix("/ws")
        fetched = installed.run(installed.python, "-c", FETCH, f"{site}/", f"{site}/static/toolwire-client.js")
    answer, module = printed.splitlines()
    assert answer == ANSWER
    assert Path(module).is_relative_to(installed.python.parent.parent)
    assert fetched == "200 text/html\n200 text/javascript\n"  # the page and its files are in the wheel
