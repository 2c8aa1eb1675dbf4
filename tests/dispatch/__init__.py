"""Tests of trio_mcp/_dispatch: a request resolved once, and the middleware chain around it."""
