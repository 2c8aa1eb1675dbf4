"""trio_mcp.testing: what the test suite of an MCP server built with trio-mcp needs.

```python
import trio_mcp.testing
from my_tools import server

async def test_add() -> None:  # under pytest-trio
    async with trio_mcp.testing.connect(server) as client:
        result = await client.call_tool("calculator.add", {"a": 5, "b": 3})
    assert result.structured == {"result": 8.0}
```

- `connect(server)`: the real `Client`, wired to the server in this process (no subprocess,
  no network), with every message both ways checked against the official MCP JSON Schema of
  the revision it speaks (`check_schema=True`, the default; needs the `testing` extra). The
  schemas ship in `schema/` (its `SOURCE.md` names their origin and hashes).
- `SchemaViolationError`: what a message that breaks its schema raises.
- `trio_mcp.testing.pytest_plugin`: `mcp_client` and related fixtures for pytest; enable it with
  `pytest_plugins = ["trio_mcp.testing.pytest_plugin"]` in the top-level `conftest.py`.

Everything here runs under trio: from asyncio, `TrioRequiredError` says how to switch.
"""

from .._exceptions import SchemaViolationError
from .._exports import publish
from ._connect import connect

__all__ = ["SchemaViolationError", "connect"]

publish(__name__, globals(), __all__)
