"""The connection state machine: handshake, stanza ids, duplicates, acknowledgements, resume."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from protocol_support import CONVERSATION, counter, envelopes, errors_in, open_pair, pack

from toolwire.errors import UsageError
from toolwire.protocol import (
    ACK_IN_META,
    META_ACK,
    Acknowledgement,
    AssistantMessageBody,
    Configuration,
    Connection,
    ControlStop,
    Envelope,
    ErrorCode,
    ErrorMessage,
    Limits,
    MessageType,
    ProtocolError,
    Sequencing,
    ToolUseResult,
    UserMessageBody,
    decode,
    encode,
)


def _user(n: int) -> UserMessageBody:
    return UserMessageBody(id=f"m{n}", content=f"message {n}")


def _answer(n: int) -> AssistantMessageBody:
    return AssistantMessageBody(id=f"a{n}", content=f"answer {n}")


def _codes(received: object) -> list[int]:
    from toolwire.protocol import Received

    assert isinstance(received, Received)
    return [envelope.message.code for envelope in errors_in(received) if isinstance(envelope.message, ErrorMessage)]


# -- stanza ids -----------------------------------------------------------------------------------


def test_client_stanzas_count_up_and_server_stanzas_count_down():
    client, server = open_pair()
    assert [decode(client.send(_user(n))).stanza_id for n in range(3)] == [1, 2, 3]
    assert [decode(server.send(_answer(n))).stanza_id for n in range(3)] == [-1, -2, -3]


def test_handshake_and_acknowledgement_frames_are_not_numbered():
    client, server = open_pair()
    server.receive(client.send(_user(1)))
    ack = server.ack()
    assert ack is not None and decode(ack) == Envelope(0, CONVERSATION, Acknowledgement(acknowledged_stanza_id=1))
    assert decode(client.send(_user(2))).stanza_id == 2


def test_received_messages_are_delivered_in_order():
    client, server = open_pair()
    delivered = [server.receive(client.send(_user(n))).messages for n in range(3)]
    assert [[envelope.message for envelope in batch] for batch in delivered] == [[_user(n)] for n in range(3)]


# -- handshake ------------------------------------------------------------------------------------


def test_a_message_before_configuration_is_refused_with_103_and_closes():
    server = Connection("server", new_id=counter())
    received = server.receive(encode(Envelope(1, "", _user(1))))
    assert received.messages == () and received.close and server.closed
    [error] = errors_in(received)
    assert error.message == ErrorMessage(
        id="err_1", code=103, message="the first message must be a Configuration", severity=3, recoverable=False
    )
    assert server.receive(Connection("client").hello()) == type(received)()  # closed: ignored


def test_garbage_before_the_handshake_closes_with_its_own_code():
    received = Connection("server").receive(b"\xc1")
    assert _codes(received) == [ErrorCode.MALFORMED_FRAME] and received.close


def test_the_server_surfaces_the_configuration_and_the_io_layer_accepts():
    client, server = Connection("client"), Connection("server")
    [hello] = server.receive(client.hello(client_version="cli/1", features=("consent",))).messages
    assert hello.message == Configuration(client_version="cli/1", features=("consent", ACK_IN_META))
    assert not server.is_open
    [answer] = server.accept("thr_new", features=("runStatus",))
    expected = Configuration(conversation_id="thr_new", features=("runStatus", ACK_IN_META))
    assert decode(answer) == Envelope(0, "thr_new", expected)
    assert client.receive(answer).messages[0].message == decode(answer).message
    assert client.conversation_id == server.conversation_id == "thr_new"


def test_each_end_knows_the_features_its_peer_listed():
    client, server = Connection("client"), Connection("server")
    server.receive(client.hello(features=("wholeAnswers",)))
    [answer] = server.accept("thr_new", features=("runStatus",))
    client.receive(answer)
    assert server.peer_features == ("wholeAnswers", ACK_IN_META)
    assert client.peer_features == ("runStatus", ACK_IN_META)


def test_a_frame_between_configuration_and_accept_is_refused_with_103():
    client, server = Connection("client"), Connection("server")
    server.receive(client.hello())
    received = server.receive(encode(Envelope(1, "", _user(1))))
    assert _codes(received) == [ErrorCode.HANDSHAKE_REQUIRED] and received.close


def test_refuse_answers_a_configuration_with_a_final_error():
    client, server = Connection("client"), Connection("server", new_id=counter())
    server.receive(client.hello("thr_gone"))
    frame = server.refuse(ErrorCode.CONVERSATION_NOT_FOUND, "no conversation thr_gone")
    assert server.closed
    received = client.receive(frame)
    [error] = received.messages
    assert isinstance(error.message, ErrorMessage) and error.message.code == 201 and received.close


def test_switching_conversation_on_a_live_connection_is_refused_with_107():
    client, server = open_pair()
    received = server.receive(Connection("client").hello("thr_other"))
    assert _codes(received) == [ErrorCode.CONVERSATION_SWITCH_REFUSED] and not received.close
    assert server.receive(client.send(_user(1))).messages[0].message == _user(1)


def test_a_frame_naming_another_conversation_is_refused_with_107():
    _, server = open_pair()
    received = server.receive(encode(Envelope(1, "thr_other", _user(1))))
    assert received.messages == () and _codes(received) == [ErrorCode.CONVERSATION_SWITCH_REFUSED]
    assert not received.close


def test_a_frame_naming_another_conversation_is_not_counted_as_seen():
    client, server = open_pair()
    server.receive(encode(Envelope(1, "thr_other", _user(99))))
    assert server.receive(client.send(_user(1))).messages[0].message == _user(1)  # stanza 1 is new
    assert server.ack() == encode(Envelope(0, CONVERSATION, Acknowledgement(acknowledged_stanza_id=1)))


def test_a_dialect_body_naming_another_conversation_is_refused_with_107():
    _, server = open_pair()
    frame = pack({"type": 2, "body": {"id": "m1", "conversationId": "thr_other", "content": "hi"}})
    assert _codes(server.receive(frame)) == [ErrorCode.CONVERSATION_SWITCH_REFUSED]


def test_a_frame_naming_no_conversation_is_taken_for_the_connections():
    _, server = open_pair()
    [envelope] = server.receive(pack({"stanzaId": 1, "type": 2, "body": {"id": "m1", "content": "hi"}})).messages
    assert envelope.message == UserMessageBody(id="m1", content="hi")


def test_a_client_refuses_a_server_frame_naming_another_conversation():
    client, _ = open_pair()
    received = client.receive(encode(Envelope(-1, "thr_other", _answer(1))))
    assert received.messages == () and _codes(received) == [ErrorCode.CONVERSATION_SWITCH_REFUSED]


def test_a_client_refuses_a_server_that_binds_another_conversation():
    client, server = Connection("client"), Connection("server")
    server.receive(client.hello("thr_a"))
    received = client.receive(server.accept("thr_b")[0])
    assert _codes(received) == [ErrorCode.CONVERSATION_SWITCH_REFUSED] and received.close


def test_handshake_methods_belong_to_their_role():
    with pytest.raises(UsageError):
        Connection("server").hello()
    with pytest.raises(UsageError):
        Connection("client").accept("c")
    with pytest.raises(UsageError):
        Connection("server").accept("c")  # no Configuration received


# -- duplicates, refusals -------------------------------------------------------------------------


def test_a_duplicate_stanza_is_dropped_silently():
    client, server = open_pair()
    frame = client.send(_user(1))
    assert len(server.receive(frame).messages) == 1
    assert server.receive(frame) == type(server.receive(frame))()
    assert server.receive(client.send(_user(2))).messages[0].stanza_id == 2


def test_unknown_type_is_skipped_with_a_recoverable_102_and_counts_as_seen():
    client, server = open_pair()
    unknown = pack({"stanzaId": 1, "conversationId": CONVERSATION, "type": 4242, "body": {}})
    received = server.receive(unknown)
    assert received.messages == () and _codes(received) == [ErrorCode.UNKNOWN_TYPE] and not received.close
    assert server.receive(unknown).replies == ()  # seen: a replay of it is a duplicate
    assert server.ack() == encode(Envelope(0, CONVERSATION, Acknowledgement(acknowledged_stanza_id=1)))


def _result(body: dict[str, object]) -> bytes:
    return pack({"stanzaId": 1, "conversationId": CONVERSATION, "type": 7, "body": body})


@pytest.mark.parametrize(
    "body",
    [
        {"id": "req_1", "success": False, "errorCode": "policy_x", "resultType": 9},
        {"id": "req_1", "success": True, "result": "not a map"},
        {"id": "req_1", "success": True, "resultType": 4},
        {"requestId": "req_1", "success": "yes"},
    ],
    ids=["result-type-out-of-range", "result-not-a-map", "result-type-contradicts-success", "dialect-id"],
)
def test_an_unreadable_result_with_a_readable_id_is_refused_and_delivered_as_invalid_result(body: dict[str, object]):
    client, server = open_pair()
    received = server.receive(_result(body))
    [answer] = [envelope.message for envelope in received.messages]
    assert _codes(received) == [ErrorCode.INVALID_MESSAGE]
    assert isinstance(answer, ToolUseResult)
    assert (answer.id, answer.success, answer.error_code) == ("req_1", False, "invalid_result")


def test_an_invalid_result_says_why_in_its_message_and_its_problem():
    client, server = open_pair()
    received = server.receive(_result({"id": "req_1", "success": True, "result": [1]}))
    [answer] = [envelope.message for envelope in received.messages]
    [error] = [envelope.message for envelope in errors_in(received)]
    assert isinstance(answer, ToolUseResult) and isinstance(error, ErrorMessage)
    assert answer.problem == error.message == "ToolUseResult.result must be a map, got an array"
    assert answer.error_message == f"The tool's result could not be read: {answer.problem}"


def test_an_invalid_result_is_never_sent_with_its_problem():
    answer = ToolUseResult.invalid({"id": "req_1"}, "ToolUseResult.success must be a boolean, missing")
    assert answer is not None
    assert decode(encode(Envelope(1, CONVERSATION, answer))).message == replace(answer, problem=None)


def test_an_unreadable_result_without_a_readable_id_is_only_refused():
    client, server = open_pair()
    received = server.receive(_result({"id": 42, "success": True}))
    assert received.messages == () and _codes(received) == [ErrorCode.INVALID_MESSAGE]


def test_a_stanza_with_the_peers_sign_is_refused_with_105():
    client, server = open_pair()
    received = server.receive(encode(Envelope(-1, CONVERSATION, _user(1))))
    assert _codes(received) == [ErrorCode.INVALID_MESSAGE]
    assert server.receive(client.send(_user(1))).messages[0].stanza_id == 1


def test_a_peers_final_error_closes_the_connection():
    client, server = open_pair()
    received = client.receive(server.send(ErrorMessage(id="e", code=501, message="down", recoverable=False)))
    assert received.close and client.closed and received.messages[0].type is MessageType.ERROR


def test_unnumbered_messages_of_a_dialect_peer_are_always_delivered():
    _, server = open_pair()
    frame = pack({"conversationId": CONVERSATION, "type": 10, "body": {}})
    assert [len(server.receive(frame).messages) for _ in range(2)] == [1, 1]


# -- acknowledgements -----------------------------------------------------------------------------


def test_a_cumulative_acknowledgement_clears_the_outbox_up_to_it():
    client, server = open_pair()
    frames = [server.send(_answer(n)) for n in range(4)]
    for frame in frames[:2]:
        client.receive(frame)
    ack = client.ack()
    assert ack is not None and decode(ack).message == Acknowledgement(acknowledged_stanza_id=-2)
    assert server.receive(ack) == type(server.receive(ack))()
    state = server.state()
    assert state is not None and state.outbox == ((3, frames[2]), (4, frames[3]))


def test_ack_returns_none_when_nothing_new_was_seen():
    client, server = open_pair()
    assert client.ack() is None
    client.receive(server.send(_answer(1)))
    assert client.ack() is not None and client.ack() is None


def test_unacknowledged_counts_what_was_seen_since_the_last_acknowledgement():
    client, server = open_pair()
    assert server.unacknowledged == 0
    for n in range(3):
        server.receive(client.send(_user(n)))
    assert server.unacknowledged == 3
    server.ack()
    assert server.unacknowledged == 0


def test_ack_upto_acknowledges_only_as_far_as_asked():
    client, server = open_pair()
    frames = [client.send(_user(n)) for n in range(4)]
    for frame in frames:
        server.receive(frame)
    ack = server.ack(upto=2)  # e.g. what the server has persisted so far
    assert ack is not None and decode(ack).message == Acknowledgement(acknowledged_stanza_id=2)
    assert server.unacknowledged == 2
    assert server.ack(upto=1) is None  # nothing beyond what was acknowledged already
    assert server.ack(upto=99) is not None and server.unacknowledged == 0  # never beyond what was seen
    client.receive(encode(Envelope(0, CONVERSATION, Acknowledgement(acknowledged_stanza_id=2))))
    state = client.state()
    assert state is not None and [stanza for stanza, _ in state.outbox] == [3, 4]


def test_an_acknowledgement_of_a_stanza_never_sent_is_refused_with_105():
    client, server = open_pair()
    received = server.receive(encode(Envelope(0, CONVERSATION, Acknowledgement(acknowledged_stanza_id=-5))))
    assert _codes(received) == [ErrorCode.INVALID_MESSAGE] and not received.close


def test_receive_acknowledges_by_itself_what_earlier_calls_delivered():
    client, server = open_pair(ack_every=3)
    replies = [server.receive(client.send(_user(n))).replies for n in range(5)]
    # The 4th receive acknowledges the 3 stanzas the I/O layer acted on; the 4th is not done yet.
    assert [len(batch) for batch in replies] == [0, 0, 0, 1, 0]
    assert decode(replies[3][0]).message == Acknowledgement(acknowledged_stanza_id=3)


# -- acknowledgements inside numbered frames (ackInMeta) ------------------------------------------


def test_a_frame_sent_after_receiving_acknowledges_in_its_meta():
    client, server = open_pair()
    assert client.piggybacking and server.piggybacking
    server.receive(client.send(_user(1)))
    server.receive(client.send(_user(2)))
    answer = server.send(_answer(1))
    assert decode(answer).meta == {META_ACK: 2}
    assert server.unacknowledged == 0 and server.ack() is None


def test_a_piggybacked_acknowledgement_clears_the_peers_outbox():
    client, server = open_pair()
    server.receive(client.send(_user(1)))
    client.receive(server.send(_answer(1)))
    state = client.state()
    assert state is not None and state.outbox == ()


def test_nothing_new_seen_means_no_acknowledgement_in_meta():
    client, server = open_pair()
    server.receive(client.send(_user(1)))
    server.send(_answer(1))
    assert decode(server.send(_answer(2))).meta == {}


def test_the_callers_meta_is_kept_beside_the_acknowledgement():
    client, server = open_pair()
    server.receive(client.send(_user(1)))
    assert decode(server.send(_answer(1), meta={"traceId": "t"})).meta == {"traceId": "t", META_ACK: 1}


@pytest.mark.parametrize("side", ["client", "server"])
def test_without_the_peers_consent_acknowledgements_stay_messages(side: str):
    client = Connection("client", piggyback=side != "client")
    server = Connection("server", piggyback=side != "server")
    server.receive(client.hello())
    for frame in server.accept(CONVERSATION):
        client.receive(frame)
    assert not client.piggybacking and not server.piggybacking
    server.receive(client.send(_user(1)))
    assert decode(server.send(_answer(1))).meta == {}
    assert server.unacknowledged == 1


@pytest.mark.parametrize("value", [1, -5, True, "-1", -1.0])  # wrong sign, never sent, not an int
def test_a_piggybacked_acknowledgement_naming_no_sent_stanza_is_ignored(value: object):
    _, server = open_pair()
    kept = server.send(_answer(1))  # stanza -1: a client acknowledges it as -1
    meta = {META_ACK: value}
    received = server.receive(
        pack({"stanzaId": 1, "conversationId": CONVERSATION, "type": 10, "meta": meta, "body": {}})
    )
    assert [envelope.message for envelope in received.messages] == [ControlStop()] and not received.replies
    state = server.state()
    assert state is not None and state.outbox == ((1, kept),)


def test_a_frame_too_large_to_send_acknowledges_nothing():
    client, server = open_pair(limits=Limits(max_frame_bytes=200))
    server.receive(client.send(_user(1)))
    with pytest.raises(ProtocolError):
        server.send(AssistantMessageBody(id="a", content="x" * 500))
    assert server.unacknowledged == 1


# -- resume ---------------------------------------------------------------------------------------


def test_accept_replays_what_the_client_missed_with_the_original_ids():
    client, server = open_pair()
    frames = [server.send(_answer(n)) for n in range(4)]
    client.receive(frames[0])
    client.receive(frames[1])  # the connection drops: -3 and -4 never arrive, nothing was acked
    saved_client, saved_server = client.state(), server.state()
    assert saved_client is not None and saved_server is not None

    client = Connection.resume(saved_client)
    server = Connection("server")
    [hello] = server.receive(client.hello()).messages
    assert hello.message == Configuration(conversation_id=CONVERSATION, last_sequence_seen=2, features=(ACK_IN_META,))
    answer, *replay = server.accept(CONVERSATION, state=saved_server)
    assert replay == frames[2:]
    client.receive(answer)
    assert [envelope.message for frame in replay for envelope in client.receive(frame).messages] == [
        _answer(2),
        _answer(3),
    ]
    assert server.state() == Sequencing(
        role="server", conversation_id=CONVERSATION, next_stanza=5, last_seen=0, outbox=((3, frames[2]), (4, frames[3]))
    )


def test_the_client_replays_what_the_server_missed():
    client, server = open_pair()
    server.receive(client.send(_user(1)))
    lost = client.send(_user(2))  # never arrives
    saved_client, saved_server = client.state(), server.state()
    assert saved_client is not None and saved_server is not None
    client, server = Connection.resume(saved_client), Connection("server")
    server.receive(client.hello())
    [answer] = server.accept(CONVERSATION, state=saved_server)
    assert decode(answer).message == Configuration(
        conversation_id=CONVERSATION, last_sequence_seen=1, features=(ACK_IN_META,)
    )
    received = client.receive(answer)
    assert received.replies == (lost,)
    assert [envelope.message for envelope in server.receive(lost).messages] == [_user(2)]


def test_state_survives_json_and_a_restart_and_numbering_continues():
    client, server = open_pair()
    first = client.send(_user(1))
    server.receive(first)
    server.send(_answer(1))
    saved = server.state()
    assert saved is not None
    restored = Sequencing.from_dict(json.loads(json.dumps(saved.to_dict())))
    assert restored == saved
    detached = Connection.resume(restored)
    assert detached.send(_answer(2)) == b""  # no client connected: kept for the replay
    server = Connection("server")
    server.receive(Connection.resume(client.state() or restored).hello())
    _, *replay = server.accept(CONVERSATION, state=detached.state())
    assert [decode(frame).stanza_id for frame in replay] == [-1, -2]
    assert decode(server.send(_answer(3))).stanza_id == -3
    assert server.receive(first).messages == ()  # seen before the restart: a duplicate


def test_a_resumed_client_queues_sends_until_the_handshake():
    client, server = open_pair()
    state = client.state()
    assert state is not None
    client, server2 = Connection.resume(state), Connection("server")
    assert client.send(_user(1)) == b""
    server2.receive(client.hello())
    [answer] = server2.accept(CONVERSATION, state=server.state())
    [queued] = client.receive(answer).replies
    assert decode(queued) == Envelope(1, CONVERSATION, _user(1))


def test_a_peer_that_saw_more_than_this_end_remembers_moves_numbering_past_it():
    client = Connection("client")
    server = Connection("server")
    server.receive(client.hello(CONVERSATION))
    for frame in server.accept(
        CONVERSATION, state=Sequencing(role="server", conversation_id=CONVERSATION, last_seen=7)
    ):
        client.receive(frame)
    assert decode(client.send(_user(1))).stanza_id == 8


def test_a_new_client_without_state_asking_to_resume_gets_everything_replayed():
    client, server = open_pair()
    sent = [server.send(_answer(n)) for n in range(2)]
    fresh, server2 = Connection("client"), Connection("server")
    server2.receive(fresh.hello(CONVERSATION))
    _, *replay = server2.accept(CONVERSATION, state=server.state())
    assert replay == sent


# -- sending --------------------------------------------------------------------------------------


def test_send_needs_a_conversation_and_refuses_connection_frames():
    with pytest.raises(UsageError):
        Connection("client").send(_user(1))
    client, _ = open_pair()
    with pytest.raises(UsageError):
        client.send(Acknowledgement(acknowledged_stanza_id=1))
    with pytest.raises(UsageError):
        client.send(Configuration())


def test_a_frame_over_the_limit_is_not_sent_and_uses_no_stanza_id():
    client, _ = open_pair(limits=Limits(max_frame_bytes=200))
    with pytest.raises(ProtocolError) as refused:
        client.send(UserMessageBody(id="m", content="x" * 300))
    assert refused.value.code == ErrorCode.FRAME_TOO_LARGE
    assert decode(client.send(ControlStop())).stanza_id == 1


def test_the_outbox_keeps_the_newest_frames_up_to_its_bound():
    client, _ = open_pair(max_outbox=2)
    for n in range(3):
        client.send(_user(n))
    state = client.state()
    assert state is not None and [stanza for stanza, _ in state.outbox] == [2, 3]


def test_a_state_of_the_other_role_is_refused():
    with pytest.raises(UsageError):
        Connection("client", state=Sequencing(role="server", conversation_id="c"))


def test_the_error_replies_are_unnumbered_and_name_the_conversation():
    _, server = open_pair()
    [reply] = envelopes(server.receive(b"\xc1").replies)
    assert (reply.stanza_id, reply.conversation_id, reply.type) == (0, CONVERSATION, MessageType.ERROR)


def test_revision_changes_exactly_when_the_state_does():
    client, server = open_pair()
    revisions = [server.revision]
    server.receive(client.send(_user(1)))  # seen
    revisions.append(server.revision)
    client.receive(server.send(_answer(1)))  # outbox grows
    revisions.append(server.revision)
    second = client.send(_user(2))
    server.receive(second)  # its piggybacked acknowledgement empties the outbox
    revisions.append(server.revision)
    assert len(set(revisions)) == len(revisions)
    server.receive(second)  # a duplicate: nothing changes
    assert server.revision == revisions[-1]
    assert Connection("server").revision is None
