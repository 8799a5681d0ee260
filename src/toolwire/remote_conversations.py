"""A principal's conversations on a running server, over HTTP (`toolwire conversations ... --url`).

```
toolwire conversations list             --url http://127.0.0.1:8765 [--token TOKEN]
toolwire conversations show ID          --url ... [--json]    its transcript
toolwire conversations delete ID        --url ... [--force]   --force cancels a run in progress first
```

The token is `--token`, else `TOOLWIRE_TOKEN` (as for `toolwire chat --url`); the server shows
only the conversations of its principal (`GET/DELETE /conversations`, see
`toolwire.server.conversations_http`). `--url` takes the server's base address, or the
WebSocket address clients use (`ws://HOST:PORT/ws`). Only the standard library is used: the
command works wherever toolwire is installed, without the `server` extra.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, TextIO

from .errors import UsageError

__all__ = ["Remote", "print_conversations", "print_transcript"]

TIMEOUT = 30.0
"""Seconds to wait for the server's answer."""


class Remote:
    """The `/conversations` endpoints of one server, with one token.

    Args:
        url: The server's base address (`http://HOST:PORT`), or its WebSocket address (`ws://HOST:PORT/ws`).
        token: The token the server gave (never printed).
    """

    def __init__(self, url: str, token: str) -> None:
        parts = urllib.parse.urlsplit(url.strip())
        scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
        if scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"--url {url!r}: give the server's address, e.g. http://127.0.0.1:8765")
        path = parts.path.rstrip("/").removesuffix("/ws")
        self.base = urllib.parse.urlunsplit((scheme, parts.netloc, path, "", ""))
        self._token = token

    def conversations(self, limit: int = 100) -> tuple[list[dict[str, Any]], bool]:
        """The principal's conversations, the latest activity first (at most `limit`), and whether there are more."""
        listed = self._request("GET", f"/conversations?limit={limit}")
        return listed["conversations"], bool(listed.get("more"))

    def conversation(self, conversation_id: str) -> dict[str, Any]:
        """One conversation with its transcript.

        Raises:
            UsageError: The server refused (an unknown id, a refused token) or cannot be reached.
        """
        return self._request("GET", "/conversations/" + urllib.parse.quote(conversation_id, safe=""))

    def delete(self, conversation_id: str, *, force: bool = False) -> dict[str, Any]:
        """Delete a conversation; `force` cancels its run in progress first (else a run refuses it)."""
        path = "/conversations/" + urllib.parse.quote(conversation_id, safe="")
        return self._request("DELETE", path + ("?force=true" if force else ""))

    def _request(self, method: str, path: str) -> dict[str, Any]:
        request = urllib.request.Request(
            self.base + path, method=method, headers={"Authorization": f"Bearer {self._token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as refused:
            raise UsageError(self._refusal(refused)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise UsageError(
                f"no toolwire server answers at {self.base} ({reason}): is `toolwire serve` running?"
            ) from None

    def _refusal(self, refused: urllib.error.HTTPError) -> str:
        """What to tell the operator about a refusal (the server's own words, and what to do)."""
        try:
            body = json.loads(refused.read())
            said, code = str(body.get("error", "")), str(body.get("code", ""))
        except (ValueError, AttributeError, OSError):
            said, code = "", ""
        match refused.code, code:
            case 401, _:
                return "the server refused the token: pass the one `toolwire serve` printed (--token or TOOLWIRE_TOKEN)"
            case 404, "not_found":
                return f"{said} on the server (or not yours): see `toolwire conversations list --url {self.base}`"
            case 409, "run_active":
                return "a run is in progress in this conversation: wait for it, or pass --force (cancels it first)"
            case status, _:
                return f"the server answered {status} {refused.reason}" + (f": {said}" if said else "")


def print_conversations(conversations: list[dict[str, Any]], more: bool, out: TextIO) -> None:
    """A table of conversations, as `GET /conversations` gives them (`more`: the server has others)."""
    print(
        f"{'conversation':<38} {'last activity':<20} {'messages':>8}  {'run':<10} {'open calls':>10}  title", file=out
    )
    for item in conversations:
        when = str(item.get("updatedAt", ""))[:19].replace("T", " ")
        title = item.get("title") or "-"
        print(
            f"{item['id']:<38} {when:<20} {item.get('messageCount', 0):>8}  {item.get('run', ''):<10}"
            f" {item.get('openCalls', 0):>10}  {title}",
            file=out,
        )
    if more:
        print(f"(and older ones: --limit {2 * len(conversations)} lists more)", file=out)


def print_transcript(conversation: Mapping[str, Any], out: TextIO) -> None:
    """A conversation's transcript, one line per message (and per call), as `GET /conversations/{id}` gives it."""
    print(f"{conversation['id']}: {conversation.get('title') or '(no prompt yet)'}", file=out)
    print(
        f"  last activity {conversation.get('updatedAt')}, run {conversation.get('run')},"
        f" {conversation.get('openCalls', 0)} open call(s)",
        file=out,
    )
    for message in conversation.get("messages", ()):
        match message.get("role"):
            case "user":
                print(f"user: {message.get('content', '')}", file=out)
            case "assistant":
                if message.get("text"):
                    print(f"assistant: {message['text']}", file=out)
                for call in message.get("toolCalls", ()):
                    arguments = json.dumps(call.get("arguments", {}), ensure_ascii=False)
                    print(f"  call {call.get('id')}: {call.get('name')} {arguments}", file=out)
            case _:
                result = message.get("result", {})
                outcome = "ok" if result.get("success") else result.get("error") or result.get("message") or "failed"
                print(f"  result {result.get('callId')} ({message.get('toolName')}): {outcome}", file=out)
    for call in conversation.get("pending", ()):
        print(f"  open: {call.get('callId')} {call.get('toolName')} ({call.get('state')})", file=out)
