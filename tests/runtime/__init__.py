"""Tests of trio_mcp/_runtime."""
