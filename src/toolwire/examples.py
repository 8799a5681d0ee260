"""The example tools of `toolwire chat`: one per `ToolMode`, harmless and offline.

- `list_notes` (read) and `add_note` (safe_write) and `delete_note` (destructive) keep notes in
  memory;
- `local_disk_usage` (local: asks for consent) reads how full a disk of this machine is;
- `lookup_exchange_rate` (external) stands for a call to an outside service; it answers from a
  fixed table so the example works offline.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

from .errors import ToolError
from .tools import Toolbox

__all__ = ["example_toolbox"]

_RATES = {("EUR", "USD"): 1.08, ("USD", "EUR"): 0.93, ("GBP", "EUR"): 1.17, ("EUR", "GBP"): 0.85}


def example_toolbox() -> Toolbox:
    """Return a fresh toolbox of the example tools (each toolbox has its own notes)."""
    notes: dict[int, str] = {}
    toolbox = Toolbox()

    @toolbox.tool
    def list_notes() -> dict[str, str]:
        """List the saved notes by id."""
        return {str(note_id): text for note_id, text in notes.items()}

    @toolbox.tool
    def add_note(text: str) -> dict[str, object]:
        """Save a note.

        Args:
            text: The note's text.
        """
        note_id = max(notes, default=0) + 1
        notes[note_id] = text
        return {"id": note_id, "saved_at": datetime.now(UTC).isoformat(timespec="seconds")}

    @toolbox.tool
    def delete_note(note_id: int) -> str:
        """Delete a note for good.

        Args:
            note_id: The id `list_notes` shows.
        """
        if notes.pop(note_id, None) is None:
            raise ToolError(f"There is no note {note_id}; call list_notes to see the ids.", code="not_found")
        return f"Note {note_id} deleted."

    @toolbox.tool
    def local_disk_usage(path: str = ".") -> dict[str, float]:
        """How full the disk holding `path` on this machine is.

        Args:
            path: A directory on this machine.
        """
        usage = shutil.disk_usage(path)
        return {"total_gb": round(usage.total / 1e9, 1), "free_gb": round(usage.free / 1e9, 1)}

    @toolbox.tool(mode="external")
    def lookup_exchange_rate(base: str, quote: str) -> dict[str, object]:
        """The exchange rate from one currency to another (EUR, USD, GBP).

        Args:
            base: Currency to convert from, e.g. "EUR".
            quote: Currency to convert to, e.g. "USD".
        """
        rate = _RATES.get((base.upper(), quote.upper()))
        if rate is None:
            raise ToolError(f"No rate for {base}/{quote}; known pairs: EUR/USD, USD/EUR, GBP/EUR, EUR/GBP.")
        return {"base": base.upper(), "quote": quote.upper(), "rate": rate}

    return toolbox
