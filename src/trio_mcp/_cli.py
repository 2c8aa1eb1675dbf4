"""The `trio-mcp` command line.

    trio-mcp run TARGET [--transport stdio|http] [--host H] [--port P] [--stateless]
                        [--allow-origin ORIGIN]... [--allow-host HOST]... [--no-legacy-sse]
                        [--log-level LEVEL]
    trio-mcp tools SERVER | trio-mcp call SERVER TOOL [NAME=VALUE]... | trio-mcp demo [--http]

The client commands (`tools`, `call`, `demo`) live in `_client_cli`; SERVER there is a TARGET,
an http(s) URL, or a command after `--`.

Over HTTP, a bearer token is required when TRIO_MCP_BEARER_TOKEN is set in the environment.

TARGET is a module path (`demo_tools`, `pkg.tools`), `module:attribute`, or a `.py` file. An
attribute (or a module-level `server`) that is a `Server` is served as is; otherwise the
`@tool`-tagged functions of the module, class or instance are served.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import Any

from ._client_cli import add_client_commands, run_client_command, split_server_command
from ._exceptions import ToolDefinitionError
from ._run import run
from ._runtime.server import Server
from .transports.http.app import DEFAULT_ALLOWED_ORIGINS, HttpOptions

__all__ = ["load_server", "main"]


def load_server(target: str) -> Server:
    """Resolve a CLI target to a `Server`.

    Raises:
        ValueError: when the target cannot be imported or holds no tools.
    """
    module_part, _, attribute = target.partition(":")
    if module_part.endswith(".py"):
        path = Path(module_part)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None or not path.exists():
            raise ValueError(f"cannot load {module_part}: no such Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        sys.path.insert(0, str(path.parent.resolve()))
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_part)
        except ImportError as exc:
            raise ValueError(f"cannot import {module_part!r}: {exc}") from exc
    obj: Any = module
    if attribute:
        try:
            for part in attribute.split("."):
                obj = getattr(obj, part)
        except AttributeError as exc:
            raise ValueError(f"{module_part!r} has no attribute {attribute!r}") from exc
    elif isinstance(getattr(module, "server", None), Server):
        obj = module.server
    if isinstance(obj, Server):
        return obj
    server = Server(name=module_part.rsplit(".", 1)[-1].removesuffix(".py"))
    server.add_tools(obj)
    if not server.tools:
        raise ValueError(f"{target!r} has no @tool functions and no Server")
    return server


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trio-mcp", description="Serve and call MCP tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    run_cmd = commands.add_parser("run", help="serve the tools of a module over stdio or HTTP")
    run_cmd.add_argument("target", help="module path, module:attribute, or file.py")
    run_cmd.add_argument(
        "--transport",
        default="stdio",
        choices=["stdio", "http"],
        help="stdio (default) or http: Streamable HTTP at /mcp and legacy HTTP+SSE at /sse",
    )
    run_cmd.add_argument("--host", default="127.0.0.1", help="HTTP: address to bind (127.0.0.1)")
    run_cmd.add_argument("--port", type=int, default=8000, help="HTTP: port to bind (8000)")
    run_cmd.add_argument(
        "--stateless",
        action="store_true",
        help="HTTP: no sessions, every request stands alone (for several workers)",
    )
    run_cmd.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="HTTP: also accept browser requests from this origin (repeatable; '*' for any)",
    )
    run_cmd.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="HTTP: also accept this Host header, NAME or NAME:PORT (repeatable; '*' for any); "
        "needed to bind 0.0.0.0",
    )
    run_cmd.add_argument(
        "--no-legacy-sse", action="store_true", help="HTTP: do not serve /sse and /messages"
    )
    run_cmd.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="level of the server's own log on stderr (default: WARNING)",
    )
    add_client_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 tool error, 2 usage or other error)."""
    argv, server_command = split_server_command(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command != "run":
        return run_client_command(args, server_command)
    if server_command:
        parser.error("run takes no command after --")
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        server = load_server(args.target)
    except (ValueError, ToolDefinitionError) as exc:
        print(f"trio-mcp: {exc}", file=sys.stderr)
        return 2
    options = None
    if args.transport == "http":
        options = HttpOptions(
            allowed_origins=(*DEFAULT_ALLOWED_ORIGINS, *args.allow_origin),
            allowed_hosts=tuple(args.allow_host),
            # A token on the command line would show in `ps`; it comes from the environment.
            bearer_token=os.environ.get("TRIO_MCP_BEARER_TOKEN") or None,
            stateless=args.stateless,
            legacy_sse=not args.no_legacy_sse,
        )
    try:
        run(server, transport=args.transport, host=args.host, port=args.port, options=options)
    except (RuntimeError, OSError, ValueError) as exc:  # no Hypercorn, port taken, 0.0.0.0 ...
        print(f"trio-mcp: {exc}", file=sys.stderr)
        return 2
    return 0
