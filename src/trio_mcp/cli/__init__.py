"""The `trio-mcp` command line: `main()` is the `trio-mcp` command and `python -m trio_mcp`."""

from ._serve import main

__all__ = ["main"]
