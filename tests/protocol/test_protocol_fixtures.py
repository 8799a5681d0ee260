"""Every protocol fixture decodes and re-encodes byte for byte; every bad frame is refused with its code;
every frame of another implementation's dialect is read as the envelope the manifest gives."""

from __future__ import annotations

import json
from typing import Any

import msgpack
import pytest
from protocol_support import BAD, DIALECT, FIXTURES, GOOD, hex_bytes, json_value, load_generate, pack

from toolwire.protocol import MessageType, ProtocolError, decode, encode


def _names(entries: list[dict[str, Any]]) -> list[Any]:
    return [pytest.param(entry, id=entry["name"]) for entry in entries]


def test_manifest_names_every_fixture_file_once():
    good, bad, dialect = ({entry["name"] for entry in entries} for entries in (GOOD, BAD, DIALECT))
    assert (len(good), len(bad), len(dialect)) == (len(GOOD), len(BAD), len(DIALECT))
    assert not good & bad and not good & dialect and not bad & dialect
    assert {path.stem for path in FIXTURES.glob("*.json")} - {"manifest"} == good
    assert {path.name.removesuffix(".msgpack.hex") for path in FIXTURES.glob("*.msgpack.hex")} == good | bad | dialect


def test_every_message_type_has_a_fixture():
    assert {entry["type"] for entry in GOOD} == set(MessageType.__members__)


@pytest.mark.parametrize("entry", _names(GOOD))
def test_fixture_decodes_and_reencodes_byte_exactly(entry: dict[str, Any]):
    data = hex_bytes(entry["name"])
    envelope = decode(data)
    assert envelope.type.name == entry["type"]
    assert encode(envelope) == data


@pytest.mark.parametrize("entry", _names(GOOD))
def test_fixture_json_is_the_wire_map(entry: dict[str, Any]):
    generate = load_generate()
    wire = msgpack.unpackb(hex_bytes(entry["name"]))
    assert wire == generate.from_json(json_value(entry["name"]))
    assert generate.to_json(wire) == json_value(entry["name"])
    assert list(wire) == list(json_value(entry["name"]))  # the key order is part of the bytes


def test_generate_check_reports_nothing_stale():
    assert load_generate().main(["--check"]) == 0


@pytest.mark.parametrize("entry", _names(BAD))
def test_bad_frame_is_refused_with_its_code(entry: dict[str, Any]):
    with pytest.raises(ProtocolError) as refused:
        decode(hex_bytes(entry["name"]))
    assert (refused.value.code, refused.value.recoverable) == (entry["code"], entry["recoverable"])


@pytest.mark.parametrize("entry", _names(DIALECT))
def test_dialect_frame_is_read_as_the_envelope_of_the_manifest(entry: dict[str, Any]):
    envelope = decode(hex_bytes(entry["name"]))
    assert envelope.type.name == entry["type"]
    assert encode(envelope) == pack(load_generate().from_json(entry["reads_as"]))


@pytest.mark.parametrize("entry", _names(DIALECT))
def test_dialect_frame_is_not_what_toolwire_writes(entry: dict[str, Any]):
    assert hex_bytes(entry["name"]) != encode(decode(hex_bytes(entry["name"])))


def test_the_example_session_in_the_docs_is_made_of_valid_frames():
    page = (FIXTURES.parent.parent.parent / "docs" / "protocol.md").read_text(encoding="utf-8")
    block = page.split("## An example session", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert len(lines) > 15
    for line in lines:
        direction, text = line.split(" ", 1)
        data = pack(load_generate().from_json(json.loads(text)))
        envelope = decode(data)
        assert encode(envelope) == data
        assert (envelope.stanza_id >= 0) is direction.startswith("C") or envelope.stanza_id == 0
