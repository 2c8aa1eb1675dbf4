"""trio_mcp.testing: what a test suite of an MCP server built with trio-mcp needs.

`SchemaViolationError` is raised when a message breaks the official JSON Schema of its
protocol revision; the schemas ship in `schema/` (see its `SOURCE.md`).
"""

from .._exceptions import SchemaViolationError

__all__ = ["SchemaViolationError"]
