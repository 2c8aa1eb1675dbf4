"""The `trio-mcp` command line; `main()` is the `trio-mcp` command and `python -m trio_mcp`.

    trio-mcp run TARGET [--transport stdio|http] [--host H] [--port P] [--stateless]
                        [--workers N] [--allow-origin ORIGIN]... [--allow-host HOST]...
                        [--no-legacy-sse] [--task-store URL] [--broker URL] [--log-level LEVEL]
                        [--auth-issuer URL --auth-audience URI [--auth-jwks URL]
                         [--auth-scopes SCOPE...]]
    trio-mcp tools SERVER [TOOL] [--json]  list the tools, or show one with its schemas
    trio-mcp call SERVER TOOL [NAME=VALUE ...] [--json OBJECT] [--raw]
    trio-mcp resources SERVER [--json]     list the resources and the resource templates
    trio-mcp read SERVER URI [--out FILE] [--json]
    trio-mcp prompts SERVER [--json]       list the prompts and their arguments
    trio-mcp prompt SERVER NAME [NAME=VALUE ...] [--json]
    trio-mcp complete SERVER (PROMPT|TEMPLATE) ARGUMENT [VALUE] [NAME=VALUE ...] [--json]
    trio-mcp demo [--http]                 a guided tour of the demo server
    trio-mcp login URL | logout (URL [--forget-client] | --all)
    trio-mcp --version

SERVER is a TARGET, an http(s) URL, or a command after `--`. The modules, one job each:

- `_parse`: the grammar, every command and option; options may stand anywhere among a
  command's words, up to `--`.
- `_serve`: `run`, a TARGET served over stdio or HTTP; `_workers`: `run --workers N`.
- `_client`: the client commands; `_arguments`: what their words mean to the server;
  `_login`: OAuth with a token file; `_answers`: what a server asks, answered on the terminal;
  `_output`: what they print; `_demo`: the tour.
- `_interrupts`: Ctrl-C and a closed pipe.
"""

from __future__ import annotations

import sys

from ._interrupts import cut_short
from ._parse import parse_command_line
from ._serve import run_command

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Args:
        argv: The words after `trio-mcp` (default: this process's own, `sys.argv[1:]`).

    Returns:
        0 ok, 1 the tool reported an error, 2 a usage or other error; 130 after Ctrl-C and 141
        when stdout's reader went away, both without a traceback, as other command-line tools
        end.
    """
    try:
        code = _main(sys.argv[1:] if argv is None else argv)
        # Output still buffered would meet a closed pipe at exit, out of reach: flush it here.
        sys.stdout.flush()
    except BaseException as exc:  # only Ctrl-C and a broken pipe end quietly
        cut = cut_short(exc)
        if cut is None:
            raise
        return cut
    return code


def _main(argv: list[str]) -> int:
    args, server_command = parse_command_line(argv)
    if args.command == "run":
        return run_command(args, argv, server_command)
    # The client half loads for a client command only: a server that a client starts with
    # `trio-mcp run` (over stdio) answers sooner without it.
    from ._client import run_client_command  # noqa: PLC0415

    return run_client_command(args, server_command)
