"""The TypeScript client and the chat page shipped in `toolwire/server/static/` are the build of `web/`.

`web/build.mjs` writes `toolwire-client.sources` next to the bundle: the sha256 of every input of
the build and of every output. Checking it needs no Node.js, so it always runs and fails when
someone edits `web/` (or the bundle) without rebuilding. With npm on PATH (CI has it), the bundle
is also rebuilt in a copy of `web/` from `package-lock.json` and compared byte for byte, and
`npm test` runs the library's own tests there, the ones against a live `toolwire serve` included.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "web"
STATIC = ROOT / "src" / "toolwire" / "server" / "static"
MANIFEST = STATIC / "toolwire-client.sources"
# The manifest last: every other output is hashed in it.
BUNDLE = (
    "toolwire-client.js",
    "toolwire-client.js.map",
    "toolwire-client.d.ts",
    "toolwire-otel.js",
    "toolwire-otel.js.map",
    "toolwire-otel.d.ts",
    "index.html",
    "page.css",
    "page.js",
    "page.js.map",
    "toolwire-client.sources",
)
INPUTS = (
    "build.mjs",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "tsconfig.lib.json",
    "tsconfig.page.json",
    "src",
    "page",
)
REBUILD = "run `cd web && npm ci && npm run build` (or `make web`) and commit the result"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _recorded() -> dict[str, str]:
    """Path → sha256, as the last build recorded them."""
    lines = MANIFEST.read_text(encoding="utf-8").splitlines()
    return {path: digest for digest, path in (line.split("  ", 1) for line in lines)}


def _current() -> dict[str, str]:
    """Path → sha256 of what the build would read and of what is shipped, now."""
    found: dict[str, str] = {}
    for name in INPUTS:
        top = WEB / name
        for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
            if path.is_file():
                found[path.relative_to(WEB).as_posix()] = _sha256(path)
    for name in BUNDLE[:-1]:
        found[f"out/{name}"] = _sha256(STATIC / name)
    return found


def test_the_bundle_is_shipped_in_the_package_directory() -> None:
    missing = [name for name in BUNDLE if not (STATIC / name).is_file()]
    assert not missing, f"{missing} missing from {STATIC}: {REBUILD}"


def test_the_shipped_bundle_was_built_from_the_sources_in_web() -> None:
    recorded, current = _recorded(), _current()
    changed = sorted(path for path in recorded.keys() | current.keys() if recorded.get(path) != current.get(path))
    assert not changed, f"changed since the bundle was built: {', '.join(changed)}; {REBUILD}"


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of web/ with exactly the lockfile's packages installed (`npm ci`).

    A copy, so that a developer's web/node_modules is left alone and two runs do not collide.
    """
    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH: the fresh build and the TypeScript tests need Node.js 20+ and npm")
    copy = tmp_path_factory.mktemp("checkout") / "web"
    shutil.copytree(WEB, copy, ignore=shutil.ignore_patterns("node_modules", ".test-build", "dist"))
    _run(copy, "ci", "--no-audit", "--no-fund", "--prefer-offline")
    return copy


def _run(web: Path, *arguments: str, **env: str) -> None:
    command = [shutil.which("npm") or "npm", *arguments]
    done = subprocess.run(
        command,
        cwd=web,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"


def test_a_fresh_build_gives_the_shipped_bytes(web: Path, tmp_path: Path) -> None:
    _run(web, "run", "build", "--", "--out", str(tmp_path))
    different = [name for name in BUNDLE if (tmp_path / name).read_bytes() != (STATIC / name).read_bytes()]
    assert not different, f"a fresh build of web/ differs from the shipped {different}: {REBUILD}"


def test_the_typescript_library_tests_pass(web: Path) -> None:
    # The fixtures are the repository's; the live tests start `toolwire serve` with this interpreter.
    _run(web, "test", TOOLWIRE_ROOT=str(ROOT), TOOLWIRE_PYTHON=sys.executable)
