"""Tests of trio_mcp/_features."""
