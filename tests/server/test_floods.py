"""Floods against a live `toolwire serve`: refusals are rate limited and logged in aggregate, memory returns.

Memory is read two ways. `sys.getallocatedblocks()` of the server process (asked through a tool of
the test's own agent, after a garbage collection) counts live Python objects: a leak of one object
per conversation shows as 1,000 blocks after 1,000 conversations, while the noise is a few dozen.
RSS (`/proc/PID/status`) also counts what the allocator keeps for reuse after a peak (arenas that
one long-lived object pins): it is asserted loosely, against a baseline taken after a first round
of the same load, because the first round grows the caches and pools that later rounds reuse.
"""

from __future__ import annotations

import re
import secrets
import signal
import textwrap
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from server_support import IDE_GROUP, OTHER_TOKEN, TOKEN, Peer, Server, peer
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from serving import serve_app
from toolwire.conversations import summarize
from toolwire.protocol import (
    Connection,
    ErrorCode,
    ErrorMessage,
    MessageType,
    RegisterTools,
    RunStatus,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)
from toolwire.store.sqlite import SqliteStore

# The agent of these tests: "open" calls the client's OpenFile; "blocks?" answers with the number of
# memory blocks the server process holds. A client gone during its call is waited for 0.05 s.
APP_SOURCE = textwrap.dedent(
    '''
    import gc
    import sys

    from toolwire import Agent, ToolCall, tool
    from toolwire.client_tools import ClientToolsConfig, RetryWithBackoff
    from toolwire.messages import ToolResultMessage, UserMessage
    from toolwire.testing import FunctionModel

    @tool
    async def allocated_blocks() -> int:
        """The memory blocks this process holds, after a garbage collection."""
        gc.collect()
        return sys.getallocatedblocks()

    def script(request):
        asked = max(n for n, m in enumerate(request.messages) if isinstance(m, UserMessage))
        prompt = request.messages[asked].content
        done = [m for m in request.messages[asked:] if isinstance(m, ToolResultMessage)]
        if done:
            return str(done[-1].result.data)
        if prompt == "blocks?":
            return [ToolCall(id="c_blocks", name="allocated_blocks", arguments={})]
        return [ToolCall(id="c_open", name="OpenFile", arguments={"path": "config.toml"})]

    class Forgetful(list):
        """FunctionModel keeps every request it was sent; a server under load must not."""

        def append(self, item):
            pass

    def make_agent(store):
        model = FunctionModel(script)
        model.requests = Forgetful()
        retry = RetryWithBackoff(max_retries=1, initial_delay=0.05, max_delay=0.05)
        config = ClientToolsConfig(invoke_timeout=20, disconnection=retry)
        return Agent(model, tools=[allocated_blocks], store=store, client_tools=config)
    '''
)
OPEN_GROUP = {**IDE_GROUP, "startCollapsed": False}
MIB = 1024 * 1024
BURST, PER_SECOND = 100, 10.0  # the defaults of `RefusalLimit`


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN}\nbob {OTHER_TOKEN}\n")
    options = ("--tokens", str(tokens), "--max-conversations", "5000")
    with serve_app(tmp_path, APP_SOURCE, "floodapp", *options, token=TOKEN) as server:
        yield server  # it prints as it serves (1,000 connections print more than a pipe holds): read as it prints


@dataclass
class Flood:
    """What a flooding client saw."""

    errors: list[ErrorMessage] = field(default_factory=list[ErrorMessage])
    close_code: int | None = None
    seconds: float = 0.0
    sent: int = 0


async def flood(client: Peer, count: int, request_id: str | None = None) -> Flood:
    """Send `count` ToolUseResults as fast as the socket takes them (random ids unless one is
    given), reading the server's answers meanwhile (acknowledging nothing, as a flooder would not),
    until all are answered or the server closes."""
    seen = Flood()

    async def read() -> None:
        try:
            while len(seen.errors) < count:
                data = await client.socket.recv()
                assert isinstance(data, bytes)
                for envelope in client.connection.receive(data).messages:
                    if isinstance(envelope.message, ErrorMessage):
                        seen.errors.append(envelope.message)
        except ConnectionClosed:
            seen.close_code = client.socket.close_code

    started = time.perf_counter()
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            try:
                for _ in range(count):
                    answer = request_id or "req_" + secrets.token_hex(16)
                    await client.send(ToolUseResult(id=answer, success=True, result={"value": "forged"}))
                    seen.sent += 1
            except ConnectionClosed:
                pass
    seen.seconds = time.perf_counter() - started
    return seen


async def flood_anew(url: str, count: int, token: str = TOKEN, request_id: str | None = None) -> Flood:
    """Connect and flood; a connection refused at the handshake is a `Flood` of that one ErrorMessage."""
    connection = Connection("client")
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as socket:
        await socket.send(connection.hello())
        data = await socket.recv()
        assert isinstance(data, bytes)
        received = connection.receive(data)
        if not connection.is_open:
            refused = [e.message for e in received.messages if isinstance(e.message, ErrorMessage)]
            with pytest.raises(ConnectionClosed):
                await socket.recv()
            return Flood(errors=refused, close_code=socket.close_code)
        return await flood(Peer(socket, connection), count, request_id)


async def test_a_flood_of_results_for_unknown_requests_is_cut_off_with_108_then_close_1008(served: Server) -> None:
    async with peer(served.url) as mallory:
        seen = await flood(mallory, 10_000)
    *refused, last = seen.errors
    assert {error.code for error in refused} == {ErrorCode.RESULT_REFUSED}
    assert (last.code, last.recoverable, seen.close_code) == (ErrorCode.TOO_MANY_REFUSALS, False, 1008)
    assert BURST < len(refused) <= BURST + PER_SECOND * seen.seconds + 1  # the bucket: a burst, then a rate


async def test_refused_results_are_logged_in_a_few_lines_not_one_each(served: Server) -> None:
    server = served
    async with peer(server.url) as alice:
        await alice.send(RegisterTools(groups=(OPEN_GROUP,)))
        await alice.until(MessageType.REGISTER_TOOLS_RESULT)
        await alice.send(UserMessageBody(id="u1", content="open"))
        request = (await alice.until(MessageType.TOOL_USE_REQUEST, execution="client")).message
        assert isinstance(request, ToolUseRequest)
        # Results for alice's request from bob: foreign. Cut off, bob comes back for more, five times.
        floods = [await flood_anew(server.url, 1_000, OTHER_TOKEN, request.id) for _ in range(6)]
    served.stop(signal.SIGINT)
    refusal_lines = [line for line in served.printed if "refused" in line]
    assert {seen.close_code for seen in floods} == {1008}
    # Per conversation bob got (one, or more when the allowance grew back between floods on a slow
    # machine): the client hub's first refusal and count. Per principal: the server's first refusal,
    # limit reached and count at the stop. Never a line per refused frame (6,000 were sent or refused).
    conversations = sum(1 for seen in floods if seen.sent)
    assert len(refusal_lines) <= 3 + 2 * conversations, "\n".join(refusal_lines[:10])


async def test_a_principal_cut_off_is_refused_new_connections_while_others_connect(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN}\nbob {OTHER_TOKEN}\n")
    options = ("--tokens", str(tokens), "--refusal-rate", "0")  # no allowance grows back: no race with the clock
    with serve_app(tmp_path, APP_SOURCE, "floodapp", *options, token=TOKEN) as server:
        cut = await flood_anew(server.url, 1_000)
        again = await flood_anew(server.url, 1_000)
        async with peer(server.url, token=OTHER_TOKEN) as bob:
            other = bob.connection.is_open
    assert cut.close_code == 1008
    [refused] = again.errors
    assert (refused.code, refused.recoverable, again.close_code, again.sent) == (108, False, 1008, 0)
    assert other


async def test_a_neighbour_is_served_throughout_a_flood(served: Server) -> None:
    server, answers = served, list[str]()
    async with peer(server.url) as mallory, peer(server.url, token=OTHER_TOKEN) as neighbour:
        async with anyio.create_task_group() as group:
            group.start_soon(flood, mallory, 10_000)
            for n in range(5):
                await neighbour.send(UserMessageBody(id=f"u{n}", content="blocks?"))
                finished = (await neighbour.until(MessageType.RUN_STATUS, status="finished")).message
                assert isinstance(finished, RunStatus)
                answers.append(finished.output or "")
    assert all(answer.isdigit() for answer in answers) and len(answers) == 5


async def allocated_blocks(server: Server, conversation: str | None) -> tuple[int, str]:
    """The server's memory blocks, asked in `conversation` (a new one when None), and that conversation.

    Asked as bob: the flooders of these tests are alice, who may be over her refusal limit.
    """
    async with peer(server.url, token=OTHER_TOKEN, conversation=conversation) as client:
        await client.send(UserMessageBody(id="m" + secrets.token_hex(4), content="blocks?"))
        finished = (await client.until(MessageType.RUN_STATUS, status="finished")).message
        assert isinstance(finished, RunStatus) and finished.output is not None
        return int(finished.output), client.connection.conversation_id or ""


def rss_mib(server: Server, field: str = "VmRSS") -> float:
    """The server's resident memory now (`VmRSS`), or its peak so far (`VmHWM`), in MiB."""
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    match = re.search(rf"{field}:\s+(\d+) kB", status)
    assert match is not None
    return int(match.group(1)) / 1024


async def test_memory_returns_to_its_baseline_after_floods(served: Server) -> None:
    server = served

    async def floods() -> None:
        for _ in range(5):  # the flooder comes back each time it is cut off (refused at once, or a few more)
            await flood_anew(server.url, 3_000)

    await floods()  # a first round: the code paths' first allocations
    blocks, measuring = await allocated_blocks(server, None)
    await allocated_blocks(server, measuring)  # the measuring conversation's own
    blocks, _ = await allocated_blocks(server, measuring)
    rss = rss_mib(server)
    await floods()
    after, _ = await allocated_blocks(server, measuring)
    assert after - blocks < 500, f"{after - blocks} more memory blocks after 5 floods"
    assert rss_mib(server) - rss < 8, f"RSS {rss:.1f} -> {rss_mib(server):.1f} MiB"


async def calls_whose_clients_leave(server: Server, count: int) -> None:
    """`count` client calls in flight at once, then every client gone at once.

    Each client registers OpenFile, asks, and holds on to the request until all `count` requests
    are out; then they all disconnect. At most 50 open their connections at a time (a burst of
    1,000 handshakes would only test the listen backlog).
    """
    opening, asked, all_asked = anyio.Semaphore(50), [0], anyio.Event()

    async def one() -> None:
        async with AsyncExitStack() as stack:
            async with opening:
                client = await stack.enter_async_context(peer(server.url, open_timeout=60))
                await client.send(RegisterTools(groups=(OPEN_GROUP,)))
                await client.until(MessageType.REGISTER_TOOLS_RESULT)
                await client.send(UserMessageBody(id="u1", content="open"))
                await client.until(MessageType.TOOL_USE_REQUEST, execution="client")
            asked[0] += 1
            if asked[0] == count:
                all_asked.set()
            await all_asked.wait()

    with anyio.fail_after(150):
        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(one)


async def wait_all_runs_finished(server: Server) -> None:
    """Until every conversation's run ended (its call given up: the client is gone), as the store says."""
    with anyio.fail_after(120):
        while True:
            async with SqliteStore.in_directory(server.data_dir) as store:
                summaries = await summarize(store)
            if all(item.run != "unfinished" and item.open_calls == 0 for item in summaries):
                return
            await anyio.sleep(0.5)


@pytest.mark.timeout(400)  # two rounds of 1,000 conversations on a loaded 2-core machine
async def test_memory_returns_to_its_baseline_after_2000_concurrent_calls_whose_clients_left(served: Server) -> None:
    server = served
    # A first round fills the caches and pools and sets the high-water mark the RSS of the second
    # round stays under. (The store's memory of each thread's last outbox is dropped when the
    # server releases the conversation: before, its last 1,024 threads' varied in size.)
    await calls_whose_clients_leave(server, 2_100)
    await wait_all_runs_finished(server)
    _, measuring = await allocated_blocks(server, None)
    blocks, _ = await allocated_blocks(server, measuring)
    peak = rss_mib(server, "VmHWM")
    # Half a memory block per conversation, over enough of them that the allocator's own noise
    # (a few hundred blocks either way, seen here) cannot pass for it, nor hide a leak.
    await calls_whose_clients_leave(server, 2_000)
    await wait_all_runs_finished(server)
    after, _ = await allocated_blocks(server, measuring)
    assert after - blocks < 1_000, f"{after - blocks} more memory blocks after 2,000 more conversations"
    # RSS after a round depends on how the allocator's arenas happened to empty (the freer the
    # first round left them, the lower that baseline): the second round is held to the first
    # round's peak instead. That peak itself moves with the allocator (18 MiB above the first
    # round's, with 100 conversations fewer, seen once under CI load; and the RSS left after the
    # second round 14 MiB above it): the bound is 16 KiB kept per conversation (32 MiB) on the
    # high-water mark, which bounds the RSS left too; smaller leaks of Python objects are what the
    # blocks count is for.
    assert rss_mib(server, "VmHWM") - peak < 32, f"peak RSS {peak:.1f} -> {rss_mib(server, 'VmHWM'):.1f} MiB"
