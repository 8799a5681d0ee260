"""`Refusals`: a principal's refused frames, limited by one token bucket for its connections, logged in aggregate."""

from __future__ import annotations

import logging

import pytest

from toolwire.errors import UsageError
from toolwire.server.refusals import RefusalLimit, Refusals


class Clock:
    """A clock the test sets."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def refusals(burst: int = 100, per_second: float = 10.0) -> tuple[Refusals, Clock]:
    clock = Clock()
    return Refusals(RefusalLimit(burst=burst, per_second=per_second), clock=clock), clock


def refuse(counted: Refusals, times: int, principal: str = "alice") -> list[bool]:
    return [counted.refused(principal, "conv_1", 302, "no open request") for _ in range(times)]


def test_a_burst_of_refusals_is_allowed_and_one_more_is_not() -> None:
    counted, _ = refusals(burst=100)
    assert refuse(counted, 101) == [True] * 100 + [False]


def test_the_allowance_grows_back_at_the_rate() -> None:
    counted, clock = refusals(burst=100, per_second=10)
    refuse(counted, 100)
    clock.now += 2.0  # 20 more
    assert refuse(counted, 21) == [True] * 20 + [False]


def test_the_allowance_never_grows_beyond_the_burst() -> None:
    counted, clock = refusals(burst=100, per_second=10)
    refuse(counted, 1)
    clock.now += 3_600.0
    assert refuse(counted, 101)[-1] is False


def test_without_a_rate_a_principal_gets_the_burst_once() -> None:
    counted, clock = refusals(burst=5, per_second=0)
    refuse(counted, 5)
    clock.now += 3_600.0
    assert refuse(counted, 1) == [False]


def test_the_connections_of_a_principal_share_its_bucket_and_only_the_one_over_it_is_closed() -> None:
    counted, _ = refusals(burst=100)
    first, second = counted.connection("alice", "conv_1"), counted.connection("alice", "conv_2")
    for _ in range(60):
        first.refused(302, "no open request")
    for _ in range(41):
        second.refused(302, "no open request")
    assert (first.exceeded, second.exceeded) == (False, True)


def test_principals_have_buckets_of_their_own() -> None:
    counted, _ = refusals(burst=10)
    refuse(counted, 11, "mallory")
    assert refuse(counted, 10, "alice") == [True] * 10


def test_a_principal_over_its_limit_cannot_open_a_connection_until_the_allowance_grows_back() -> None:
    counted, clock = refusals(burst=10, per_second=10)
    refuse(counted, 11)
    assert not counted.admits("alice") and counted.admits("bob")
    clock.now += 0.2
    assert counted.admits("alice")


def test_refusals_are_logged_as_the_first_then_a_count_every_10_s_and_at_a_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counted, clock = refusals(burst=10_000, per_second=1_000)
    with caplog.at_level(logging.WARNING, logger="toolwire.server"):
        for n in range(1_000):  # 10 a second for 100 s
            clock.now = 1_000.0 + n / 10
            refuse(counted, 1)
        counted.flush()
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1 + 9 + 1  # the first, one at 10, 20 … 90 s, the rest at the stop
    assert "refused a frame (302: no open request)" in lines[0]
    assert sum(int(line.split("refused ")[1].split(" more")[0]) for line in lines[1:]) == 999


def test_reaching_the_limit_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    counted, _ = refusals(burst=3)
    with caplog.at_level(logging.WARNING, logger="toolwire.server"):
        for code in (302, 101, 302, 107):
            counted.refused("mallory", "conv_1", code, "refused")
        for _ in range(20):
            counted.admits("mallory")
    _, reached = (record.getMessage() for record in caplog.records)
    assert "principal mallory: 4 frames refused (3 more by code 101: 1, 107: 1, 302: 1)" in reached
    assert "more than 3 at once, 10 a second" in reached


@pytest.mark.parametrize(("burst", "per_second"), [(0, 10.0), (10, -1.0), (10, float("nan"))])
def test_a_limit_needs_a_positive_burst_and_a_rate_of_at_least_0(burst: int, per_second: float) -> None:
    with pytest.raises(UsageError):
        RefusalLimit(burst=burst, per_second=per_second)
