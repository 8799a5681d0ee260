"""`PostgresApprovals`: one-time approvals, "always" grants and remembered denials (`ApprovalStore`) in PostgreSQL.

A one-time approval is consumed by one `DELETE`: of two racing takers, the second waits for the
first's row lock, then finds the row gone. Approvals, grants and denials outside any thread
(`thread_id=None`) are stored under the empty string, so `""` is refused as a thread id here.
"""

from __future__ import annotations

import time

from ..policy import Grant
from .postgres_database import PostgresDatabase
from .rows import grant_from_row, thread_key

__all__ = ["PostgresApprovals"]


class PostgresApprovals(PostgresDatabase):
    """The `ApprovalStore` part of `PostgresStore`."""

    async def approve_once(self, thread_id: str | None, call_id: str, tool: str, args_hash: str) -> None:
        """Record a one-time approval for exactly this call."""
        await self._write(
            "INSERT INTO approvals (thread_id, call_id, tool, args_hash) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT DO NOTHING",
            (thread_key(thread_id), call_id, tool, args_hash),
        )

    async def take_approval(self, thread_id: str | None, call_id: str, tool: str, args_hash: str) -> bool:
        """Consume the one-time approval of this call; False if there is none (or another taker had it)."""
        taken = await self._write(
            "DELETE FROM approvals WHERE thread_id = %s AND call_id = %s AND tool = %s AND args_hash = %s",
            (thread_key(thread_id), call_id, tool, args_hash),
        )
        return taken == 1

    async def grant(self, thread_id: str | None, tool: str, *, explicit: bool = True) -> Grant:
        """Allow `tool` for the rest of the thread (replacing an earlier grant of it, in its place)."""
        grant = Grant(thread_id, tool, explicit, time.time())
        await self._write(
            "INSERT INTO grants (thread_id, tool, explicit, granted_at) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (thread_id, tool) DO UPDATE SET explicit = excluded.explicit,"
            " granted_at = excluded.granted_at",
            (thread_key(thread_id), tool, explicit, grant.granted_at),
        )
        return grant

    async def find_grant(self, thread_id: str | None, tool: str) -> Grant | None:
        """Return the standing grant for `tool` in the thread, if any."""
        row = await self._fetchone(
            "SELECT thread_id, tool, explicit, granted_at FROM grants WHERE thread_id = %s AND tool = %s",
            (thread_key(thread_id), tool),
        )
        return None if row is None else grant_from_row(row)

    async def grants(self, thread_id: str | None) -> list[Grant]:
        """List the thread's grants, oldest first."""
        rows = await self._fetchall(
            "SELECT thread_id, tool, explicit, granted_at FROM grants WHERE thread_id = %s ORDER BY id",
            (thread_key(thread_id),),
        )
        return [grant_from_row(row) for row in rows]

    async def revoke(self, thread_id: str | None, tool: str) -> bool:
        """Remove the grant for `tool` in the thread; False if there was none."""
        gone = await self._write("DELETE FROM grants WHERE thread_id = %s AND tool = %s", (thread_key(thread_id), tool))
        return gone == 1

    async def remember_denial(self, thread_id: str | None, tool: str, args_hash: str, reason: str) -> None:
        """Remember that this tool with these arguments was refused in the thread (the latest reason wins)."""
        await self._write(
            "INSERT INTO denials (thread_id, tool, args_hash, reason) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (thread_id, tool, args_hash) DO UPDATE SET reason = excluded.reason",
            (thread_key(thread_id), tool, args_hash, reason),
        )

    async def find_denial(self, thread_id: str | None, tool: str, args_hash: str) -> str | None:
        """Return the reason an identical call was refused in the thread, if it was."""
        row = await self._fetchone(
            "SELECT reason FROM denials WHERE thread_id = %s AND tool = %s AND args_hash = %s",
            (thread_key(thread_id), tool, args_hash),
        )
        return None if row is None else row[0]
