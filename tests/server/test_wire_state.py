"""`WireForm`: the server hands its store `Sequencing.to_dict()`'s form, encoding each frame once."""

from __future__ import annotations

from toolwire.protocol import Sequencing
from toolwire.server.wire_state import WireForm


def state(next_stanza: int, first: int, *, frames: dict[int, bytes] | None = None) -> Sequencing:
    outbox = tuple((stanza, (frames or {}).get(stanza, FRAMES[stanza])) for stanza in range(first, next_stanza))
    return Sequencing(role="server", conversation_id="t1", next_stanza=next_stanza, last_seen=first, outbox=outbox)


FRAMES = {stanza: f"frame {stanza}".encode() * stanza for stanza in range(1, 10)}


def test_each_state_is_its_dict_form() -> None:
    form = WireForm()
    states = [
        state(1, 1),
        state(2, 1),
        state(4, 1),
        state(4, 3),
        state(6, 5),
        state(6, 5, frames={5: b"rewritten"}),  # another frame under a stanza seen before
        state(6, 5, frames={5: b"rewritten"[:]}),  # equal, not the same object
        state(3, 1),  # an older state again
    ]
    for each in states:
        assert form.of(each) == each.to_dict()


def test_none_is_none() -> None:
    assert WireForm().of(None) is None


def test_a_frame_still_in_the_outbox_is_not_encoded_again() -> None:
    form = WireForm()
    first = form.of(state(3, 1))
    second = form.of(state(4, 2))
    assert first is not None and second is not None
    assert second["outbox"][0][1] is first["outbox"][1][1]  # stanza 2's text, made once


def test_a_long_conversation_keeps_its_dict_form_as_acknowledged_frames_are_forgotten() -> None:
    form = WireForm()
    frames = {stanza: f"frame {stanza}".encode() for stanza in range(1, 200)}
    for last in range(1, 200):
        outbox = tuple((stanza, frames[stanza]) for stanza in range(max(1, last - 2), last))
        each = Sequencing(role="server", conversation_id="t1", next_stanza=last, last_seen=last, outbox=outbox)
        assert form.of(each) == each.to_dict()
