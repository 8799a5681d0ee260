from __future__ import annotations

from pathlib import Path

import pytest

from toolwire.errors import UsageError
from toolwire.server.auth import TokenAuth, new_token, redact

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"


def test_a_known_token_gives_its_principal() -> None:
    assert TokenAuth({ALICE: "alice", BOB: "bob"}).authenticate(BOB) == "bob"


@pytest.mark.parametrize("token", [None, "", "alice-token-012345678", ALICE + "x"])
def test_anything_else_gives_no_principal(token: str | None) -> None:
    assert TokenAuth({ALICE: "alice"}).authenticate(token) is None


def test_short_tokens_are_refused() -> None:
    with pytest.raises(UsageError, match="16"):
        TokenAuth({"short": "alice"})


def test_the_header_wins_over_the_query() -> None:
    token = TokenAuth.token_from({"authorization": f"Bearer {ALICE}"}, {"token": BOB})
    assert token == ALICE


def test_the_query_parameter_serves_browsers() -> None:
    assert TokenAuth.token_from({}, {"token": BOB}) == BOB


def test_a_tokens_file_maps_principals(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# who\nalice {ALICE}\n\nbob {BOB}\n")
    auth = TokenAuth.from_file(path)
    assert (auth.authenticate(ALICE), auth.authenticate(BOB)) == ("alice", "bob")


def test_a_malformed_tokens_file_names_the_line_not_the_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"alice {ALICE} extra\n")
    with pytest.raises(UsageError, match="line 1") as refused:
        TokenAuth.from_file(path)
    assert ALICE not in str(refused.value)


def test_redact_hides_the_token_query_parameter() -> None:
    assert (
        redact(f"GET /ws?conversation=c1&token={ALICE} HTTP/1.1") == "GET /ws?conversation=c1&token=[redacted] HTTP/1.1"
    )


def test_new_tokens_are_long_and_unique() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50 and min(map(len, tokens)) >= 40
