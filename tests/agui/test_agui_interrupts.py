"""`resume` entries as answers to consent questions (`toolwire.interop.agui.interrupts.approvals`): pure."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import ResumeEntry

from toolwire.interop.agui.interrupts import approvals
from toolwire.interop.frontends.answers import HistoryConflict
from toolwire.policy import ConsentAnswer


def entry(payload: Any = None, *, interrupt_id: str = "approval-c1", status: str = "resolved") -> ResumeEntry:
    return ResumeEntry.model_validate({"interruptId": interrupt_id, "status": status, "payload": payload})


def answer(*entries: ResumeEntry) -> ConsentAnswer:
    [approval] = approvals(entries)
    return approval.answer


def test_approved_is_a_yes_for_this_call_once() -> None:
    assert answer(entry({"approved": True})) == ConsentAnswer(True)


def test_approved_for_the_thread_keeps_its_scope() -> None:
    assert answer(entry({"approved": True, "scope": "thread"})).scope == "thread"


def test_edited_arguments_come_with_the_yes() -> None:
    assert answer(entry({"approved": True, "editedArgs": {"command": "pwd"}})).arguments == {"command": "pwd"}


def test_refused_carries_its_reason() -> None:
    assert answer(entry({"approved": False, "reason": "no"})) == ConsentAnswer(False, "no")


def test_cancelled_is_a_no() -> None:
    assert answer(entry(status="cancelled")).allow is False


def test_the_answer_names_the_call_of_the_interrupt() -> None:
    [approval] = approvals([entry({"approved": True}, interrupt_id="approval-call_9")])
    assert approval.call_id == "call_9"


@pytest.mark.parametrize("payload", [{"approved": "true"}, {"approved": 1}, {}, None, {"approved": True, "scope": "x"}])
def test_a_payload_that_is_not_the_schema_is_refused(payload: Any) -> None:
    with pytest.raises(HistoryConflict) as refused:
        approvals([entry(payload)])
    assert (refused.value.status, refused.value.code) == (400, "invalid_resume")


def test_an_interrupt_that_is_not_ours_is_refused() -> None:
    with pytest.raises(HistoryConflict) as refused:
        approvals([entry({"approved": True}, interrupt_id="int-c1")])
    assert refused.value.code == "unknown_interrupt"


def test_the_same_interrupt_answered_twice_is_refused() -> None:
    with pytest.raises(HistoryConflict) as refused:
        approvals([entry({"approved": True}), entry({"approved": False})])
    assert refused.value.code == "invalid_resume"
