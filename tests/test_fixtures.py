"""Every example of seeds 000, 001 and 002 decodes and re-encodes to the same JSON and the same bytes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import msgpack
import pytest

from toolwire.envelopes import ResultType, ToolCall, ToolResult, is_terminal_result
from toolwire.errors import EnvelopeError
from toolwire.protocol import ToolUseResult, result_message, tool_result

FIXTURES = Path(__file__).parent / "fixtures"
MANIFEST: list[dict[str, Any]] = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))["fixtures"]
KINDS = {"payload", "wire_result", "tool_call", "tool_result"}
CALL_ID = "call_fixture"


def _load_generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fixtures_generate", FIXTURES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _params(*kinds: str, failures_only: bool = False) -> list[Any]:
    return [
        pytest.param(entry, id=entry["name"])
        for entry in MANIFEST
        if entry["kind"] in kinds and not (failures_only and entry["result_type"] == "SUCCESS")
    ]


def _json_value(entry: dict[str, Any]) -> Any:
    return json.loads((FIXTURES / f"{entry['name']}.json").read_text(encoding="utf-8"))


def _msgpack_bytes(entry: dict[str, Any]) -> bytes:
    return bytes.fromhex((FIXTURES / f"{entry['name']}.msgpack.hex").read_text(encoding="utf-8").strip())


def _sources(entry: dict[str, Any]) -> list[Any]:
    """The fixture's value decoded from JSON and, separately, from MessagePack."""
    return [_json_value(entry), msgpack.unpackb(_msgpack_bytes(entry))]


def _expected_type(entry: dict[str, Any]) -> ResultType:
    return ResultType[entry["result_type"]]


# -- the fixture set itself -------------------------------------------------------------------------


def test_manifest_names_every_fixture_file_once():
    names = [entry["name"] for entry in MANIFEST]
    assert len(names) == len(set(names))
    on_disk = {path.name.removesuffix(".json") for path in FIXTURES.glob("*.json")} - {"manifest"}
    assert on_disk == set(names)
    hex_on_disk = {path.name.removesuffix(".msgpack.hex") for path in FIXTURES.glob("*.msgpack.hex")}
    assert hex_on_disk == set(names)


@pytest.mark.parametrize("entry", _params(*KINDS))
def test_manifest_entry_is_well_formed(entry: dict[str, Any]):
    assert entry["kind"] in KINDS
    assert entry["seed"] in {"000_bd97322be71e62f8", "001_b19376be01b834f8", "002_bb50794cfc51e9b8"}
    if entry["kind"] == "tool_call":
        assert entry["result_type"] is None
    else:
        assert entry["result_type"] in ResultType.__members__


def test_manifest_covers_every_seed_example():
    counts: dict[tuple[str, str], int] = {}
    for entry in MANIFEST:
        key = (entry["seed"][:3], entry["kind"])
        counts[key] = counts.get(key, 0) + 1
    assert counts[("001", "wire_result")] == 3
    assert counts[("002", "tool_call")] == 1
    assert counts[("002", "tool_result")] == 3
    seed_000 = {(entry["result_type"], entry["name"]) for entry in MANIFEST if entry["seed"].startswith("000")}
    assert {result_type for result_type, _ in seed_000} == {"ERROR", "CANCELED", "TIMEOUT", "DENIED"}
    canceled_by = {_json_value(entry)["canceled"]["by"] for entry in MANIFEST if entry["result_type"] == "CANCELED"}
    assert canceled_by == {"user", "policy", "system"}
    assert any(entry["kind"] == "payload" and entry["result_type"] == "SUCCESS" for entry in MANIFEST)


@pytest.mark.parametrize("entry", _params(*KINDS))
def test_committed_hex_is_what_generate_writes(entry: dict[str, Any]):
    generate = _load_generate()
    text = (FIXTURES / f"{entry['name']}.json").read_text(encoding="utf-8")
    committed = (FIXTURES / f"{entry['name']}.msgpack.hex").read_text(encoding="utf-8")
    assert committed == generate.msgpack_hex(text)


def test_generate_check_reports_nothing_stale():
    assert _load_generate().main(["--check"]) == 0


def test_hex_keeps_the_seeds_key_order():
    # Written out by hand so a generator that sorted keys would not agree with itself here.
    timeout = next(entry for entry in MANIFEST if entry["name"] == "payload_timeout")
    assert _msgpack_bytes(timeout) == bytes.fromhex("81a774696d656f757481aa6475726174696f6e4d73cd7530")
    wire = next(entry for entry in MANIFEST if entry["name"] == "wire_result_error")
    assert list(msgpack.unpackb(_msgpack_bytes(wire))) == ["id", "success", "errorCode", "errorMessage"]


# -- decode, re-encode, compare ---------------------------------------------------------------------


def _assert_same_value_and_bytes(entry: dict[str, Any], reencoded: Any) -> None:
    assert reencoded == _json_value(entry)
    assert msgpack.packb(reencoded) == _msgpack_bytes(entry)


@pytest.mark.parametrize("source", ["json", "msgpack"])
@pytest.mark.parametrize("entry", _params("payload"))
def test_payload_round_trips(entry: dict[str, Any], source: str):
    value = _sources(entry)[source == "msgpack"]
    expected = _expected_type(entry)
    result = ToolResult.from_payload(CALL_ID, expected, value)
    _assert_same_value_and_bytes(entry, result.payload())
    assert result.success is (expected is ResultType.SUCCESS)
    # The envelope carries the outcome type on its own, so decoding it again finds the same type.
    again = ToolResult.from_dict(result.to_dict())
    assert again.type is expected
    assert again.payload() == value


@pytest.mark.parametrize("entry", _params("payload", failures_only=True))
def test_failure_payload_is_refused_under_another_failure_type(entry: dict[str, Any]):
    expected = _expected_type(entry)
    for other in (ResultType.ERROR, ResultType.CANCELED, ResultType.TIMEOUT, ResultType.DENIED):
        if other is not expected:
            with pytest.raises(EnvelopeError):
                ToolResult.from_payload(CALL_ID, other, _json_value(entry))


@pytest.mark.parametrize("source", ["json", "msgpack"])
@pytest.mark.parametrize("entry", _params("wire_result"))
def test_wire_result_round_trips(entry: dict[str, Any], source: str):
    body = _sources(entry)[source == "msgpack"]
    result = tool_result(ToolUseResult.from_body(body))
    again = result_message(result, body["id"]).to_body()
    if result.type in (ResultType.CANCELED, ResultType.TIMEOUT, ResultType.DENIED):
        # toolwire adds the outcome's details as structured fields: seed 000's payload in `result`.
        assert again.pop("result") == result.payload()
    _assert_same_value_and_bytes(entry, again)
    assert result.type is _expected_type(entry)
    assert result.call_id == body["id"]


@pytest.mark.parametrize("source", ["json", "msgpack"])
@pytest.mark.parametrize("entry", _params("tool_call"))
def test_tool_call_round_trips(entry: dict[str, Any], source: str):
    value = _sources(entry)[source == "msgpack"]
    call = ToolCall.from_dict(value)
    _assert_same_value_and_bytes(entry, call.to_dict())
    assert (call.id, call.name) == (value["id"], value["name"])


@pytest.mark.parametrize("source", ["json", "msgpack"])
@pytest.mark.parametrize("entry", _params("tool_result"))
def test_tool_result_round_trips(entry: dict[str, Any], source: str):
    value = _sources(entry)[source == "msgpack"]
    result = ToolResult.from_dict(value)
    _assert_same_value_and_bytes(entry, result.to_dict())
    assert result.type is _expected_type(entry)


@pytest.mark.parametrize("entry", _params("tool_result"))
def test_tool_result_terminality_follows_seed_002(entry: dict[str, Any]):
    value = _json_value(entry)
    assert is_terminal_result(ToolResult.from_dict(value)) is entry["terminal"]
    assert is_terminal_result(value) is entry["terminal"]
