"""Tests of trio_mcp/_core."""
