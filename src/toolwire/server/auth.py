"""Who is connecting: bearer tokens mapped to principals, compared in constant time.

A token travels as `Authorization: Bearer <token>` or, for browsers (which cannot set headers on a
WebSocket), as the `token` query parameter. Tokens never reach logs: see `redact`. `kept_token`
gives `toolwire serve` the same generated token at every start, from a file only its owner reads.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from ..errors import UsageError

__all__ = ["TokenAuth", "kept_token", "new_token", "redact"]

_TOKEN_QUERY: Final = re.compile(r"(?i)((?:^|[?&])token=)[^&\s]*")
_MIN_TOKEN_LENGTH: Final = 16


def new_token() -> str:
    """A fresh token with 256 random bits."""
    return secrets.token_urlsafe(32)


def kept_token(path: Path) -> str:
    """The token kept in `path`; a new one, written there first, when the file does not exist.

    `toolwire serve` calls it when no token was given, so that a restart keeps its clients. The
    file is created atomically with mode 0600 (written under a temporary name, then linked into
    place): two servers starting at once share the token of whichever linked it first.

    Raises:
        UsageError: The file is not this user's own, others may read it, or it holds no token;
            the message says what to do (the token is never shown).
    """
    try:
        return _read_token(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    token = new_token()
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".token-")  # mode 0600, O_EXCL
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(token + "\n")
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(temporary, path)  # never replaces a file another server wrote meanwhile
        except FileExistsError:
            return _read_token(path)
    finally:
        os.unlink(temporary)
    return token


def _read_token(path: Path) -> str:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)  # a symlink planted in its place is refused
    try:
        handle = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UsageError(f"cannot read the token file {path}: {exc.strerror}") from None
    with os.fdopen(handle, encoding="utf-8") as file:
        if os.name == "posix":
            status = os.fstat(file.fileno())
            if status.st_uid != os.getuid():
                raise UsageError(f"the token file {path} belongs to another user: delete it to get a new token")
            if status.st_mode & 0o077:
                mode = stat.filemode(status.st_mode)
                raise UsageError(
                    f"the token file {path} is readable by other users ({mode}), so its token may be known: "
                    f"delete it to get a new token (or, if nobody else could read it, chmod 600 {path})"
                )
        try:
            token = file.read(1024).strip()
        except (OSError, UnicodeDecodeError):  # a directory, binary content
            token = ""
    if len(token) < _MIN_TOKEN_LENGTH or any(character.isspace() for character in token):
        raise UsageError(f"the token file {path} holds no token: delete it to get a new one")
    return token


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
