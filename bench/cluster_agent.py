"""The `--app` factory of bench/cluster_bench.py's servers: ws_bench's agent, patient with a client that drops.

`toolwire serve --app cluster_agent:make_agent` (with bench/ on PYTHONPATH). The agent is
`ws_bench.make_agent`'s; its client tool calls wait for a client that dropped (`RetryWithBackoff`, up
to ≈ 16 s) instead of falling back at once, so that a run waiting for a client tool is still waiting
when its client comes back through another replica (the hand-off and kill -9 figures).
"""

from __future__ import annotations

from typing import Any, Final

from toolwire.client_tools import RetryWithBackoff
from ws_bench import make_agent as make_bench_agent

PATIENCE: Final = RetryWithBackoff(max_retries=20, initial_delay=0.05, max_delay=1.0)


def make_agent(store: Any) -> Any:
    return make_bench_agent(store, disconnection=PATIENCE)
