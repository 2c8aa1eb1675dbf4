"""pytest fixtures for the tests of an MCP server built with trio-mcp.

Enable the plugin in the top-level `conftest.py` and name the server under test:

```python
# conftest.py
import pytest
from my_tools import server

pytest_plugins = ["trio_mcp.testing.pytest_plugin"]


@pytest.fixture
def mcp_server():
    return server
```

Then any trio test (pytest-trio's `trio_mode`, `@pytest.mark.trio`, or anyio's trio backend)
can take `mcp_client`: a `Client` connected to that server in-process by
`trio_mcp.testing.connect`, with every message checked against the official MCP JSON Schema.
`@pytest.mark.parametrize("mcp_protocol_version", trio_mcp.SUPPORTED_VERSIONS)` runs a test
once per protocol revision.

The plugin is opt-in (no entry point). Loading it costs nothing but this module: pytest
is the only import beyond trio-mcp's own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .._core.versions import LATEST_HANDSHAKE_VERSION
from .._runtime.client import Client
from .._runtime.server import Server
from ._connect import connect

__all__ = ["mcp_client", "mcp_protocol_version", "mcp_server"]


@pytest.fixture
def mcp_server() -> Server:
    """The server under test: override this fixture to return your `Server`.

    Returns:
        Nothing: this default fails the test, saying what to define.
    """
    pytest.fail(
        "mcp_client needs the server under test: define a fixture named mcp_server that "
        "returns your trio_mcp.Server (in conftest.py, for example)",
        pytrace=False,
    )


@pytest.fixture
def mcp_protocol_version() -> str:
    """The protocol revision `mcp_client` asks for: the newest handshake revision by default.

    Parametrize it (`@pytest.mark.parametrize("mcp_protocol_version", [...])`) to run a test
    under other revisions.

    Returns:
        The revision's date string.
    """
    return LATEST_HANDSHAKE_VERSION


@pytest.fixture
async def mcp_client(mcp_server: Server, mcp_protocol_version: str) -> AsyncIterator[Client]:
    """A `Client` connected in-process to `mcp_server`, every message schema-checked.

    Yields:
        The client, connected and initialized, for the duration of the test.
    """
    async with connect(mcp_server, protocol_version=mcp_protocol_version) as client:
        yield client
