from __future__ import annotations

import logging
from collections.abc import Awaitable

import anyio
import pytest

from toolwire import (
    Cancellation,
    ConsentAnswer,
    ConsentRequest,
    PermissionPolicy,
    ToolCall,
    ToolMode,
    UsageError,
    tool,
)
from toolwire.errors import CallCanceled
from toolwire.policy import Decision


@tool
def get_note(note_id: str) -> str:
    return note_id


@tool
def update_note(note_id: str, text: str) -> str:
    return text


@tool
def delete_note(note_id: str) -> str:
    return note_id


@tool
def shell_run(command: str) -> str:
    return command


@tool
def send_email(to: str) -> str:
    return to


@tool(requires_permission=True)
def get_secret(name: str) -> str:
    return name


class ClientTool:
    """Stands in for a tool a client registered (only the attributes the policy reads)."""

    name = "GetSelection"
    mode = ToolMode.READ
    requires_permission = False
    is_client = True
    description = "The user's selection."


def call_of(tool_name: str, call_id: str = "c1", **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=tool_name, arguments=dict(arguments))


class Recorder:
    """A consent handler that answers from a script and records what it was asked."""

    def __init__(self, *answers: bool | ConsentAnswer) -> None:
        self.answers = list(answers)
        self.requests: list[ConsentRequest] = []

    async def __call__(self, request: ConsentRequest) -> bool | ConsentAnswer:
        self.requests.append(request)
        return self.answers.pop(0)


@pytest.mark.parametrize(
    ("tool_", "decision"),
    [
        (get_note, Decision.ALLOW),
        (update_note, Decision.ALLOW),
        (delete_note, Decision.ALLOW),
        (send_email, Decision.ALLOW),
        (shell_run, Decision.ASK),
    ],
    ids=["read", "safe_write", "destructive", "external", "local"],
)
def test_default_preset_follows_the_mode_table(tool_, decision):
    assert PermissionPolicy().decide(tool_).decision is decision


@pytest.mark.parametrize(
    ("tool_", "decision", "allow_always"),
    [
        (get_note, Decision.ALLOW, True),
        (update_note, Decision.ALLOW, True),
        (delete_note, Decision.ASK, False),
        (shell_run, Decision.ASK, False),
        (send_email, Decision.ASK, True),
        (ClientTool(), Decision.ASK, True),
    ],
    ids=["read", "safe_write", "destructive", "local", "external", "client"],
)
def test_strict_preset(tool_, decision, allow_always):
    permission = PermissionPolicy(preset="strict").decide(tool_)
    assert permission.decision is decision
    assert permission.allow_always is allow_always


def test_requires_permission_asks_even_for_read_tools():
    assert PermissionPolicy().decide(get_secret).decision is Decision.ASK


def test_deny_rule_by_glob_wins_over_allow():
    policy = PermissionPolicy(allow=["*"], deny=["delete_*"])
    permission = policy.decide(delete_note)
    assert permission.decision is Decision.DENY
    assert permission.reason == "the policy denies tools matching 'delete_*'"


def test_deny_rule_by_mode():
    assert PermissionPolicy(deny=[ToolMode.EXTERNAL]).decide(send_email).decision is Decision.DENY


def test_ask_rule_by_mode():
    assert PermissionPolicy(ask=[ToolMode.DESTRUCTIVE]).decide(delete_note).decision is Decision.ASK


def test_allow_rule_lifts_the_local_default():
    assert PermissionPolicy(allow=["shell_*"]).decide(shell_run).decision is Decision.ALLOW


def test_allow_rule_does_not_lift_requires_permission():
    assert PermissionPolicy(allow=["*"]).decide(get_secret).decision is Decision.ASK


def test_unknown_preset_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown permission preset"):
        PermissionPolicy(preset="lenient")  # type: ignore[arg-type]


def test_bad_rule_is_a_usage_error():
    with pytest.raises(UsageError, match="neither a tool-name glob nor a ToolMode"):
        PermissionPolicy(allow=[3])  # type: ignore[list-item]


async def test_ask_without_handler_is_denied():
    permission = await PermissionPolicy().check(call_of("shell_run", command="ls"), shell_run)
    assert (permission.decision, permission.source) == (Decision.DENY, "no_approver")


async def test_consent_request_carries_call_tool_mode_and_reason():
    handler = Recorder(True)
    call = call_of("shell_run", command="ls")
    await PermissionPolicy(consent=handler).check(call, shell_run, "t1")
    [request] = handler.requests
    assert (request.call, request.tool, request.mode, request.thread_id) == (call, "shell_run", ToolMode.LOCAL, "t1")
    assert request.reason == "local tools ask for consent"


async def test_consent_false_denies_and_is_remembered_for_identical_calls():
    handler = Recorder(False)
    policy = PermissionPolicy(consent=handler)
    first = await policy.check(call_of("shell_run", "c1", command="ls"), shell_run, "t1")
    again = await policy.check(call_of("shell_run", "c2", command="ls"), shell_run, "t1")
    assert (first.source, again.source) == ("consent", "denial_memory")
    assert again.decision is Decision.DENY
    assert len(handler.requests) == 1


async def test_denial_memory_is_per_thread_and_per_arguments():
    handler = Recorder(False, True, True)
    policy = PermissionPolicy(consent=handler)
    await policy.check(call_of("shell_run", "c1", command="ls"), shell_run, "t1")
    other_args = await policy.check(call_of("shell_run", "c2", command="pwd"), shell_run, "t1")
    other_thread = await policy.check(call_of("shell_run", "c3", command="ls"), shell_run, "t2")
    assert other_args.allowed and other_thread.allowed
    assert len(handler.requests) == 3


async def test_consent_answer_with_reason():
    policy = PermissionPolicy(consent=Recorder(ConsentAnswer(False, reason="not on Fridays")))
    permission = await policy.check(call_of("shell_run", command="ls"), shell_run)
    assert permission.reason == "not on Fridays"


async def test_once_approval_asks_again_next_call():
    handler = Recorder(True, True)
    policy = PermissionPolicy(consent=handler)
    await policy.check(call_of("shell_run", "c1", command="ls"), shell_run, "t1")
    await policy.check(call_of("shell_run", "c2", command="ls"), shell_run, "t1")
    assert len(handler.requests) == 2


async def test_always_answer_grants_the_thread():
    handler = Recorder(ConsentAnswer(True, scope="thread"))
    policy = PermissionPolicy(consent=handler)
    await policy.check(call_of("shell_run", "c1", command="ls"), shell_run, "t1")
    second = await policy.check(call_of("shell_run", "c2", command="pwd"), shell_run, "t1")
    assert second.source == "grant"
    assert [(grant.tool, grant.explicit) for grant in await policy.grants("t1")] == [("shell_run", True)]
    assert len(handler.requests) == 1


async def test_grant_does_not_cross_threads():
    policy = PermissionPolicy()
    await policy.grant("shell_run", "t1")
    permission = await policy.check(call_of("shell_run", command="ls"), shell_run, "t2")
    assert permission.decision is Decision.DENY


async def test_revoked_grant_asks_again():
    handler = Recorder(False)
    policy = PermissionPolicy(consent=handler)
    await policy.grant("shell_run", "t1")
    assert await policy.revoke("shell_run", "t1") is True
    await policy.check(call_of("shell_run", command="ls"), shell_run, "t1")
    assert len(handler.requests) == 1
    assert await policy.grants("t1") == []


async def test_revoke_without_grant_returns_false():
    assert await PermissionPolicy().revoke("shell_run", "t1") is False


async def test_one_time_approval_is_bound_to_call_id_and_arguments():
    policy = PermissionPolicy()
    await policy.approve(call_of("shell_run", "c1", command="ls"), "t1")
    other_args = await policy.check(call_of("shell_run", "c1", command="rm"), shell_run, "t1")
    other_id = await policy.check(call_of("shell_run", "c2", command="ls"), shell_run, "t1")
    exact = await policy.check(call_of("shell_run", "c1", command="ls"), shell_run, "t1")
    assert (other_args.allowed, other_id.allowed, exact.allowed) == (False, False, True)
    assert exact.source == "approval"


async def test_one_time_approval_is_used_once():
    policy = PermissionPolicy()
    call = call_of("shell_run", "c1", command="ls")
    await policy.approve(call, "t1")
    await policy.check(call, shell_run, "t1")
    assert not (await policy.check(call, shell_run, "t1")).allowed


async def test_strict_external_asks_once_per_thread():
    handler = Recorder(True)
    policy = PermissionPolicy(preset="strict", consent=handler)
    await policy.check(call_of("send_email", "c1", to="a@example.com"), send_email, "t1")
    second = await policy.check(call_of("send_email", "c2", to="b@example.com"), send_email, "t1")
    assert second.source == "grant" and len(handler.requests) == 1
    assert [grant.explicit for grant in await policy.grants("t1")] == [False]


async def test_strict_destructive_asks_every_time_even_after_always():
    handler = Recorder(ConsentAnswer(True, scope="thread"), True)
    policy = PermissionPolicy(preset="strict", consent=handler)
    await policy.check(call_of("delete_note", "c1", note_id="1"), delete_note, "t1")
    await policy.check(call_of("delete_note", "c2", note_id="2"), delete_note, "t1")
    assert len(handler.requests) == 2
    assert handler.requests[0].allow_always is False


async def test_failing_handler_denies():
    async def broken(request: ConsentRequest) -> bool:
        raise RuntimeError("dialog crashed")

    policy = PermissionPolicy(consent=broken)
    permission = await policy.check(call_of("shell_run", command="ls"), shell_run)
    assert (permission.decision, permission.reason) == (Decision.DENY, "asking for consent failed (RuntimeError)")


async def test_unanswered_consent_is_denied_after_timeout():
    async def never(request: ConsentRequest) -> bool:
        await anyio.sleep_forever()
        return True

    policy = PermissionPolicy(consent=never, consent_timeout=0.01)
    permission = await policy.check(call_of("shell_run", command="ls"), shell_run)
    assert (permission.decision, permission.reason) == (Decision.DENY, "no answer within 0.01 s")


async def test_a_cancellation_ends_the_wait_for_consent():
    cancellation = Cancellation()

    async def cancelled_while_asking(request: ConsentRequest) -> bool:
        cancellation.cancel()
        await anyio.sleep_forever()
        return True

    policy = PermissionPolicy(consent=cancelled_while_asking)
    with anyio.fail_after(5), pytest.raises(CallCanceled):
        await policy.check(call_of("shell_run", command="ls"), shell_run, cancellation=cancellation)


@pytest.mark.asyncio_only
async def test_a_consent_handler_may_return_any_awaitable():
    def answers_with_a_future(request: ConsentRequest) -> Awaitable[bool]:
        import asyncio

        future = asyncio.get_running_loop().create_future()
        future.set_result(True)
        return future

    permission = await PermissionPolicy(consent=answers_with_a_future).check(
        call_of("shell_run", command="ls"), shell_run
    )
    assert permission.decision is Decision.ALLOW


async def test_denials_and_consent_are_audited_without_arguments(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="toolwire.audit")
    policy = PermissionPolicy(deny=["delete_*"], consent=Recorder(True))
    await policy.check(call_of("delete_note", note_id="secret-id"), delete_note, "t1")
    await policy.check(call_of("shell_run", command="cat secret"), shell_run, "t1")
    events = [record.toolwire["event"] for record in caplog.records]  # type: ignore[attr-defined]
    assert events == ["denied", "consent"]
    assert "secret" not in caplog.text


# -- who answers an Ask: the application's handler first, the client when it is given the call -------

CALL = ToolCall(id="c1", name="get_secret", arguments={"name": "db"})
ASKING_TOOL = get_secret


async def test_the_applications_handler_answers_before_the_client() -> None:
    asked: list[str] = []

    async def client(request: ConsentRequest) -> bool:
        asked.append("client")
        return True

    async def application(request: ConsentRequest) -> ConsentAnswer:
        asked.append("application")
        return ConsentAnswer(False, "not on this server")

    policy = PermissionPolicy(consent=application)
    permission = await policy.check(CALL, ASKING_TOOL, "t1", client=client)
    assert (permission.allowed, asked) == (False, ["application"])


async def test_an_application_can_leave_the_decision_to_the_client() -> None:
    async def client(request: ConsentRequest) -> bool:
        return True

    async def application(request: ConsentRequest) -> bool | ConsentAnswer:
        return await request.ask_client()

    permission = await PermissionPolicy(consent=application).check(CALL, ASKING_TOOL, "t1", client=client)
    assert permission.allowed


async def test_without_an_application_handler_the_client_decides() -> None:
    async def client(request: ConsentRequest) -> bool:
        return True

    assert (await PermissionPolicy().check(CALL, ASKING_TOOL, "t1", client=client)).allowed


async def test_asking_a_client_that_is_not_there_refuses() -> None:
    async def application(request: ConsentRequest) -> bool | ConsentAnswer:
        return await request.ask_client()

    permission = await PermissionPolicy(consent=application).check(CALL, ASKING_TOOL, "t1")
    assert not permission.allowed and permission.reason == "no one at the client can answer"
