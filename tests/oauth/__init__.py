"""Tests of trio_mcp/oauth: the client's OAuth flows, their rules and token storage."""
