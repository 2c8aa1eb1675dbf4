"""Tests of trio_mcp/cli: the command line, run as real subprocesses and as functions."""
