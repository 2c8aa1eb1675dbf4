"""The schema checker the tests use: the one `trio_mcp.testing` ships, under its old name.

Tests import `validate_server_message`, `validate_transcript` and `validate_definition` from
here; the checker itself and the schemas live in `trio_mcp/testing/` (`_schema.py` and
`schema/`), so that users' test suites check their servers with the same code.
"""

from __future__ import annotations

from trio_mcp.testing import SchemaViolationError
from trio_mcp.testing._schema import (
    RESULTS,
    SCHEMA_DIR,
    VERSIONS,
    MessageChecker,
    _validator,
    has_definition,
    validate_definition,
    validate_server_message,
    validate_transcript,
)

__all__ = [
    "RESULTS",
    "SCHEMA_DIR",
    "VERSIONS",
    "MessageChecker",
    "SchemaViolationError",
    "_validator",
    "has_definition",
    "validate_definition",
    "validate_server_message",
    "validate_transcript",
]
