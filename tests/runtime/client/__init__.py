"""Tests of trio_mcp/_runtime/client: the client, feature by feature, against real servers."""
