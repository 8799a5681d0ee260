"""Shared by the protocol tests: the fixtures on disk and a connected client/server pair."""

from __future__ import annotations

import importlib.util
import itertools
import json
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import msgpack

from toolwire.protocol import Connection, Envelope, MessageType, Received, decode

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "protocol"
MANIFEST: dict[str, list[dict[str, Any]]] = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))
GOOD = MANIFEST["fixtures"]
BAD = MANIFEST["bad_frames"]
DIALECT = MANIFEST["dialect_frames"]
CONVERSATION = "thr_6f1c2a"


def load_generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("protocol_fixtures_generate", FIXTURES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hex_bytes(name: str) -> bytes:
    return bytes.fromhex((FIXTURES / f"{name}.msgpack.hex").read_text(encoding="utf-8").strip())


def json_value(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def pack(value: Any) -> bytes:
    packed = msgpack.packb(value, use_bin_type=True)
    assert isinstance(packed, bytes)
    return packed


def counter(prefix: str = "err") -> Any:
    numbers = itertools.count(1)
    return lambda: f"{prefix}_{next(numbers)}"


def open_pair(conversation_id: str = CONVERSATION, **options: Any) -> tuple[Connection, Connection]:
    """A client and a server connection after a handshake for a new conversation."""
    client = Connection("client", new_id=counter("cerr"), **options)
    server = Connection("server", new_id=counter("serr"), **options)
    [hello] = server.receive(client.hello()).messages
    assert hello.type is MessageType.CONFIGURATION
    for frame in server.accept(conversation_id):
        client.receive(frame)
    assert client.is_open and server.is_open
    return client, server


def envelopes(frames: Iterable[bytes]) -> list[Envelope]:
    return [decode(frame) for frame in frames if frame]


def errors_in(received: Received) -> list[Envelope]:
    return [envelope for envelope in envelopes(received.replies) if envelope.type is MessageType.ERROR]
