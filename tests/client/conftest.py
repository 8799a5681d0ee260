from __future__ import annotations

from collections.abc import Iterator

import pytest
from client_support import Server, serve


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for every client test; each test opens its own conversation."""
    with serve(tmp_path_factory.mktemp("client-server")) as running:
        yield running
