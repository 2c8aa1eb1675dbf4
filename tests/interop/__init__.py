"""Interop: the official `mcp` SDK's clients against trio-mcp's servers."""
