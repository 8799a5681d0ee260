"""Shared by every test directory: `tests/` is on `sys.path`, so `serving` imports from anywhere.

Async tests run on asyncio; the core's (the modules in `ON_TRIO_TOO`) run on trio as well. The
server and the clients need asyncio (uvicorn, websockets), so their tests run on it only.
"""

import pytest

from pg_cluster import postgres as postgres  # the session's PostgreSQL cluster, for any test directory

ON_TRIO_TOO = frozenset(
    {
        "test_fast_paths",
        "test_pipeline",
        "test_policy",
        "test_filters",
        "test_tools",
        "test_loop",
        "test_resume",
        "test_telemetry",
        "test_contract",  # tests/toolsets/
        "test_toolsets",
        "test_thread_store",  # tests/store/contracts/
        "test_approval_store",
        "test_client_state_store",
        "test_wire_state_store",
        "test_lease_store",
    }
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if (
        metafunc.definition.path.stem in ON_TRIO_TOO
        and "anyio_backend" in metafunc.fixturenames
        and metafunc.definition.get_closest_marker("asyncio_only") is None
    ):
        metafunc.parametrize("anyio_backend", ["asyncio", "trio"], scope="module")
