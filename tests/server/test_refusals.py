"""`Refusals`: a connection's refused frames, rate limited by a token bucket and logged in aggregate."""

from __future__ import annotations

import logging

import pytest

from toolwire.errors import UsageError
from toolwire.server.refusals import REFUSAL_SUMMARY_SECONDS, RefusalLimit, Refusals


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def refusals(burst: int = 100, per_second: float = 10.0) -> tuple[Refusals, Clock]:
    clock = Clock()
    return Refusals(RefusalLimit(burst=burst, per_second=per_second), "conv_1", clock=clock), clock


def test_a_burst_of_refusals_is_allowed_and_one_more_is_not() -> None:
    counted, _ = refusals(burst=100)
    for _ in range(100):
        counted.refused(302, "no open request")
    assert not counted.exceeded
    counted.refused(302, "no open request")
    assert counted.exceeded


def test_the_allowance_grows_back_at_the_rate() -> None:
    counted, clock = refusals(burst=100, per_second=10)
    for _ in range(100):
        counted.refused(302, "no open request")
    clock.now += 2.0  # 20 more
    for _ in range(20):
        counted.refused(302, "no open request")
    assert not counted.exceeded
    counted.refused(302, "no open request")
    assert counted.exceeded


def test_the_allowance_never_grows_beyond_the_burst() -> None:
    counted, clock = refusals(burst=100, per_second=10)
    clock.now += 3_600.0
    for _ in range(101):
        counted.refused(302, "no open request")
    assert counted.exceeded


def test_without_a_rate_a_connection_gets_the_burst_in_its_life() -> None:
    counted, clock = refusals(burst=5, per_second=0)
    for _ in range(5):
        counted.refused(101, "not MessagePack")
        clock.now += 3_600.0
    counted.refused(101, "not MessagePack")
    assert counted.exceeded


def test_refusals_are_logged_as_the_first_then_a_count_every_period_then_at_close(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counted, clock = refusals(burst=10_000, per_second=1_000)
    with caplog.at_level(logging.WARNING, logger="toolwire.server"):
        for _ in range(1_000):  # 100 s at 10 a second
            counted.refused(302, "no open request")
            clock.now += 0.1
        counted.close()
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1 + 100 / REFUSAL_SUMMARY_SECONDS
    assert "refused a frame (302: no open request)" in lines[0]
    assert "1000 on this connection (by code 302: 1000)" in lines[-1]


def test_going_over_the_limit_is_logged_once_with_the_count(caplog: pytest.LogCaptureFixture) -> None:
    counted, _ = refusals(burst=3)
    with caplog.at_level(logging.WARNING, logger="toolwire.server"):
        for code in (302, 101, 302, 107):
            counted.refused(code, "refused")
        counted.close()
    _, closing = (record.getMessage() for record in caplog.records)
    assert "closing the connection: 4 frames refused" in closing
    assert "(by code 101: 1, 107: 1, 302: 2), more than 3 at once, 10 a second" in closing


@pytest.mark.parametrize(("burst", "per_second"), [(0, 10.0), (10, -1.0), (10, float("nan"))])
def test_a_limit_needs_a_positive_burst_and_a_rate_of_at_least_0(burst: int, per_second: float) -> None:
    with pytest.raises(UsageError):
        RefusalLimit(burst=burst, per_second=per_second)
