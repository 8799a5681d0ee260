"""1,000 bad frames through a live connection to a real server: one ErrorMessage each, nothing else breaks."""

from __future__ import annotations

import json
import random
from pathlib import Path

import anyio
from server_support import IDE_GROUP, peer, serve

from toolwire.protocol import (
    Connection,
    Envelope,
    ErrorMessage,
    MessageType,
    ProtocolError,
    RegisterTools,
    RegisterToolsResult,
    decode,
    encode,
    read_frame,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "protocol"
FRAMES = [
    bytes.fromhex((FIXTURES / f"{entry['name']}.msgpack.hex").read_text().strip())
    for entry in json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]
]
COUNT = 1_000


def bad_frames(count: int, seed: int = 20261122) -> list[bytes]:
    """Random bytes and mutated fixture frames that `decode()` refuses, deterministically."""
    rng, found = random.Random(seed), list[bytes]()
    while len(found) < count:
        if rng.random() < 0.3:
            data = rng.randbytes(rng.randint(1, 64))
        else:
            frame = bytearray(rng.choice(FRAMES))
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(frame))
                if rng.random() < 0.5:
                    frame[at] ^= 1 << rng.randint(0, 7)
                else:
                    del frame[at:]
                    break
            data = bytes(frame)
        try:
            decode(data)
        except ProtocolError:
            found.append(data)
    return found


def refused_once(frames: list[bytes], conversation: str) -> list[bytes]:
    """The frames a server end refuses with exactly one ErrorMessage, in order.

    A frame whose envelope reads but repeats a stanza id already seen is a duplicate, dropped
    silently by the protocol's rule; a replica of the server's end, fed the same frames, tells.
    """
    replica = Connection("server")
    replica.receive(Connection("client").hello())
    replica.accept(conversation)
    kept: list[bytes] = []
    for data in frames:
        if len([reply for reply in replica.receive(data).replies if decode(reply).type == MessageType.ERROR]) == 1:
            kept.append(data)
    return kept


def highest_stanza(frames: list[bytes]) -> int:
    """The largest stanza id among frames whose envelope reads (the server counts those as seen)."""
    highest = 0
    for data in frames:
        try:
            highest = max(highest, abs(read_frame(data).stanza_id))
        except ProtocolError:
            pass
    return highest


async def test_every_bad_frame_gets_exactly_one_error_and_the_connection_stays_usable(tmp_path: Path) -> None:
    # A connection refused 1,000 frames in a row is closed by default (100 at once: test_floods.py).
    with serve(tmp_path, "--refusal-burst", str(2 * COUNT)) as server:
        async with peer(server.url) as client:
            frames = refused_once(bad_frames(COUNT + COUNT // 10), client.connection.conversation_id or "")[:COUNT]
            errors: list[ErrorMessage] = []
            with anyio.fail_after(120):
                for data in frames:
                    await client.socket.send(data)
                    envelope = await client.receive()
                    assert isinstance(envelope.message, ErrorMessage), envelope
                    errors.append(envelope.message)
                # Usable afterwards: a valid message numbered past everything the server saw.
                stanza = max(highest_stanza(frames), client.connection.state().next_stanza) + 1  # type: ignore[union-attr]
                conversation = client.connection.conversation_id or ""
                await client.socket.send(encode(Envelope(stanza, conversation, RegisterTools(groups=(IDE_GROUP,)))))
                registered = (await client.until(MessageType.REGISTER_TOOLS_RESULT)).message
        alive = server.process.poll() is None
    assert alive
    assert len(errors) == COUNT
    assert all(error.recoverable for error in errors)
    assert isinstance(registered, RegisterToolsResult) and registered.ok
