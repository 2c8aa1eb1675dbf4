"""Tests of trio_mcp/transports."""
