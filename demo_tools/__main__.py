"""`python -m demo_tools` serves the demo tools over stdio."""

import logging
import sys

import trio_mcp

from . import server

if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    trio_mcp.run(server)
