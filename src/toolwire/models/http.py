"""What the HTTP model adapters share: the client's lifetime and keeping the API key out of errors."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpModel"]


class HttpModel:
    """Owns an `httpx.AsyncClient` unless one was given; `aclose()` and `async with` release it."""

    def __init__(self, client: httpx.AsyncClient, *, owns_client: bool, api_key: str | None) -> None:
        self._client = client
        self._owns_client = owns_client
        self._api_key = api_key

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _redact(self, text: str) -> str:
        """Remove the API key from text bound for an error message (servers may echo it)."""
        return text.replace(self._api_key, "<redacted>") if self._api_key else text
