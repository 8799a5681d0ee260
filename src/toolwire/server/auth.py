"""Who is connecting: bearer tokens mapped to principals, compared in constant time.

A token travels as `Authorization: Bearer <token>` or, for browsers (which cannot set headers on a
WebSocket), as the `token` query parameter. Tokens never reach logs: see `redact`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from ..errors import UsageError

__all__ = ["TokenAuth", "new_token", "redact"]

_TOKEN_QUERY: Final = re.compile(r"(?i)((?:^|[?&])token=)[^&\s]*")
_MIN_TOKEN_LENGTH: Final = 16


def new_token() -> str:
    """A fresh token with 256 random bits."""
    return secrets.token_urlsafe(32)


def redact(text: str) -> str:
    """Replace the value of any `token` query parameter in `text` (a path, a URL, a log line)."""
    return _TOKEN_QUERY.sub(r"\1[redacted]", text)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenAuth:
    """Tokens and the principal each stands for.

    Args:
        tokens: token → principal name.

    Raises:
        UsageError: No token, a token shorter than 16 characters, or an empty principal.
    """

    def __init__(self, tokens: Mapping[str, str]) -> None:
        if not tokens:
            raise UsageError("TokenAuth needs at least one token")
        for token, principal in tokens.items():
            if len(token) < _MIN_TOKEN_LENGTH or not principal:
                raise UsageError(
                    f"every token needs {_MIN_TOKEN_LENGTH}+ characters and a principal name "
                    f"(principal {principal!r} has a {len(token)}-character token)"
                )
        self._digests = [(_digest(token), principal) for token, principal in tokens.items()]

    @classmethod
    def single(cls, token: str, principal: str = "default") -> TokenAuth:
        """One token for one principal (what `toolwire serve --token` uses)."""
        return cls({token: principal})

    @classmethod
    def from_file(cls, path: str | Path) -> TokenAuth:
        """Read `PRINCIPAL TOKEN` lines (blank lines and `#` comments are skipped).

        Raises:
            UsageError: The file cannot be read or a line is malformed (the token is not shown).
        """
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(f"cannot read the tokens file {path}: {exc.strerror}") from None
        tokens: dict[str, str] = {}
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 2:
                raise UsageError(f"{path}, line {number}: expected 'PRINCIPAL TOKEN'")
            principal, token = parts
            if token in tokens:
                raise UsageError(f"{path}, line {number}: this token is already given to '{tokens[token]}'")
            tokens[token] = principal
        return cls(tokens)

    def authenticate(self, token: str | None) -> str | None:
        """The principal `token` stands for, or None; every token is compared, in constant time."""
        if not token:
            return None
        presented = _digest(token)
        found: str | None = None
        for digest, principal in self._digests:
            if hmac.compare_digest(presented, digest):
                found = principal
        return found

    @staticmethod
    def token_from(headers: Mapping[str, str], query: Mapping[str, str]) -> str | None:
        """The token a request presents: the `Authorization: Bearer` header, else `?token=`."""
        authorization = headers.get("authorization", "")
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        return query.get("token") or None
