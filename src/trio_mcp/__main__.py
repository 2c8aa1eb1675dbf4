"""`python -m trio_mcp` is the `trio-mcp` command."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
