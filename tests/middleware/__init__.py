"""Tests of the built-in middleware (trio_mcp.middleware)."""
