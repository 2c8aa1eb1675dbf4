"""The `trio-mcp` command line.

    trio-mcp run TARGET [--transport stdio|http] [--host H] [--port P] [--stateless]
                        [--workers N] [--allow-origin ORIGIN]... [--allow-host HOST]...
                        [--no-legacy-sse] [--task-store URL] [--broker URL] [--log-level LEVEL]
                        [--auth-issuer URL --auth-audience URI [--auth-jwks URL]
                         [--auth-scopes SCOPE...]]
    trio-mcp tools SERVER [TOOL] [--json] | trio-mcp call SERVER TOOL [NAME=VALUE]...
    trio-mcp resources SERVER [--json] | trio-mcp read SERVER URI [--out FILE] [--json]
    trio-mcp prompts SERVER [--json] | trio-mcp prompt SERVER NAME [NAME=VALUE]... [--json]
    trio-mcp complete SERVER (PROMPT|TEMPLATE) ARGUMENT [VALUE] [NAME=VALUE]... [--json]
    trio-mcp demo [--http] | trio-mcp --version

The client commands (`tools`, `call`, `resources`, `read`, `prompts`, `prompt`, `complete`,
`demo`) live in `_client_cli`; SERVER there is a TARGET, an http(s) URL, or a command after
`--`. Every command takes its options anywhere among its words, up to `--`
(`parse_command_line`).

Over HTTP, `--workers N` serves one socket from N worker processes (`_workers`), in stateless
mode only. A bearer token is required when TRIO_MCP_BEARER_TOKEN is set in the environment;
with `--auth-issuer` and `--auth-audience` the server is an OAuth protected resource instead:
JWT access tokens of that issuer, for that audience (the server's canonical URI), verified with
the issuer's JWKS (`--auth-jwks`, or found in its RFC 8414 metadata), and the scopes of
`--auth-scopes` needed by every request; its RFC 9728 metadata names the issuer. An audience
whose host[:port] the server does not answer for (its bind address, or an `--allow-host`
entry) is warned of at start (`audience_mismatch`): clients compare it with the URL they use.
`--task-store` and `--broker` (or TRIO_MCP_TASK_STORE and TRIO_MCP_BROKER, where a URL with a
password belongs: the command line shows in `ps`) give the server a Redis for its tasks and its
notifications, so that a fleet's workers share them; they replace what the module set.

TARGET is a module path (`demo_tools`, `pkg.tools`), `module:attribute`, or a `.py` file. An
attribute (or a module-level `server`) that is a `Server` is served as is; otherwise the
`@tool`-tagged functions of the module, class or instance are served.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import logging
import os
import platform
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Final
from urllib.parse import urlsplit

from . import _workers
from ._client_cli import add_client_commands, run_client_command, split_server_command
from ._exceptions import LifespanError, ToolDefinitionError
from ._features.tools import discover_tools
from ._run import run, run_stdio, run_worker
from ._runtime.server import Server
from ._version import __version__
from .transports.http.app import DEFAULT_ALLOWED_ORIGINS, HttpOptions

logger = logging.getLogger("trio_mcp.cli")

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}

__all__ = ["load_server", "main", "parse_command_line", "unregistered_tools"]


def load_server(target: str) -> tuple[Server, list[str]]:
    """Resolve a CLI target to a `Server`, with warnings about it for the person serving it.

    Returns:
        The server, and warnings (one line each) to show before serving it.

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
        left_out = unregistered_tools(module, obj)
        if not left_out:
            return obj, []
        return obj, [
            f"{attribute or 'server'} in {module_part} registers none of the @tool functions "
            f"defined there ({', '.join(left_out)}), so it serves "
            f"{_count(len(obj.tools), 'tool')}. @tool only tags a function: register them "
            "with server.add_tools(sys.modules[__name__]) or server.add_tool(fn), or use "
            "@server.tool in place of @tool."
        ]
    # A file is named after its stem (`tools.py` serves as "tools"), a module after its last part.
    name = Path(module_part).stem if module_part.endswith(".py") else module_part.rsplit(".")[-1]
    server = Server(name=name)
    server.add_tools(obj)
    if not server.tools:
        raise ValueError(f"{target!r} has no @tool functions and no Server")
    return server, []


def unregistered_tools(module: ModuleType, server: Server) -> list[str]:
    """The `@tool` functions defined in `module` when `server` registers none of them.

    A server that registers some of them has chosen; one that registers none has most likely
    been given none by mistake (`@tool` only tags). Functions the module imports are not its
    own, and are left out.

    Returns:
        Their qualified names, in definition order; empty when the server registers any.
    """
    served: set[int] = set()
    for registered in server.tools:
        fn: Any = registered.fn
        while fn is not None and id(fn) not in served:  # through wrappers and bound methods
            served.add(id(fn))
            fn = getattr(fn, "__wrapped__", None) or getattr(fn, "__func__", None)
    own = [
        fn for fn in discover_tools(module) if getattr(fn, "__module__", None) == module.__name__
    ]
    if any(id(fn) in served for fn in own):
        return []
    return [getattr(fn, "__qualname__", repr(fn)) for fn in own]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The `trio-mcp` parser, and each command's own parser by name."""
    parser = argparse.ArgumentParser(
        prog="trio-mcp",
        description="Serve MCP tools; list, call, read and complete what a server offers.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"trio-mcp {__version__} (Python {platform.python_version()})",
    )
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
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="HTTP: serve from N worker processes sharing the socket (needs --stateless)",
    )
    # Internal: how `--workers` starts each worker (its inherited listening socket and link).
    run_cmd.add_argument("--worker-fds", help=argparse.SUPPRESS)
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
        "--max-connections-per-address",
        type=int,
        metavar="N",
        help="HTTP: connections one client address may hold (default 256; 0 for no bound, "
        "behind a reverse proxy whose address every connection comes from)",
    )
    run_cmd.add_argument(
        "--task-store",
        default=os.environ.get("TRIO_MCP_TASK_STORE") or None,
        metavar="URL",
        help="keep tasks in Redis at URL (redis://, rediss://, unix://), so that any worker of a "
        "fleet answers for them (default: in memory; or set TRIO_MCP_TASK_STORE)",
    )
    run_cmd.add_argument(
        "--broker",
        default=os.environ.get("TRIO_MCP_BROKER") or None,
        metavar="URL",
        help="share resource updates with a fleet's other workers through Redis at URL "
        "(or set TRIO_MCP_BROKER)",
    )
    run_cmd.add_argument(
        "--auth-issuer",
        metavar="URL",
        help="HTTP: accept only JWT access tokens of this OAuth authorization server",
    )
    run_cmd.add_argument(
        "--auth-audience",
        metavar="URI",
        help="HTTP: this server's canonical URI, which tokens must name as their audience "
        "(e.g. https://mcp.example.com/mcp)",
    )
    run_cmd.add_argument(
        "--auth-jwks",
        metavar="URL",
        help="HTTP: the issuer's key set (default: from its authorization server metadata)",
    )
    run_cmd.add_argument(
        "--auth-scopes",
        nargs="+",
        default=[],
        metavar="SCOPE",
        help="HTTP: scopes every request's token must grant",
    )
    run_cmd.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="level of the server's own log on stderr (default: WARNING)",
    )
    add_client_commands(commands)
    # `run`'s own usage errors show `run`'s usage line, not the top-level one.
    run_cmd.set_defaults(command_parser=run_cmd)
    return parser, dict(commands.choices)


def parse_command_line(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The parsed command line, and the server command given after `--` (empty without one).

    A command's options may come before, between or after its words (`trio-mcp call SERVER
    --timeout 5 TOOL a=1`): its own parser reads them with `parse_intermixed_args`, which
    takes every option out wherever it stands and gives the rest to the words in their order.
    `--` ends the options: nothing after it is read as one, it is the server's command as it
    is. A word that starts with `-` is an option (a negative number or `-` alone excepted);
    NAME=VALUE words never are (`x=-1`, `x=--y`), and a parameter whose name starts with `-`
    goes in `--json`. The `trio-mcp` parser itself reads only what names no command
    (`--version`, `--help`, a mistyped command).

    Raises:
        SystemExit: after a usage error (one line and the usage, on stderr; code 2) or help.
    """
    words, server_command = split_server_command(argv)
    parser, commands = _parser()
    command = commands.get(words[0]) if words else None
    if command is None:
        return parser.parse_args(words), server_command
    args, extra = command.parse_known_intermixed_args(words[1:])
    if extra:
        # Name the unknown options alone: the words after one are left over only because the
        # option stopped the words there.
        unknown = [word for word in extra if word.startswith("-")] or extra
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.command = words[0]
    return args, server_command


#: Exit codes of a command cut short, as shells report a process ended by the signal
#: (128 + its number): the reader of stdout went away (`trio-mcp tools x | head -1`: SIGPIPE),
#: or the user pressed Ctrl-C (SIGINT).
EXIT_BROKEN_PIPE: Final = 128 + signal.SIGPIPE
EXIT_INTERRUPTED: Final = 128 + signal.SIGINT


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    0 ok, 1 the tool reported an error, 2 a usage or other error; 130 after Ctrl-C and 141
    when stdout's reader went away, both without a traceback, as other command-line tools end.
    """
    try:
        code = _main(argv)
        # Output still buffered would meet a closed pipe at exit, out of reach: flush it here.
        sys.stdout.flush()
    except BaseException as exc:  # only Ctrl-C and a broken pipe end quietly
        cut = _cut_short(exc)
        if cut is None:
            raise
        return cut
    return code


def _cut_short(exc: BaseException) -> int | None:
    """The exit code for a command cut short by Ctrl-C or a broken pipe; None for all else.

    Either may come wrapped in exception groups by the tasks it went through.
    """
    leaves = list(_leaves(exc))
    if not all(isinstance(leaf, KeyboardInterrupt | BrokenPipeError) for leaf in leaves):
        return None
    if any(isinstance(leaf, BrokenPipeError) for leaf in leaves):
        # Whatever is still buffered for the pipe would fail again at exit, with a message:
        # send it nowhere instead.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
        return EXIT_INTERRUPTED
    return EXIT_BROKEN_PIPE


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args, server_command = parse_command_line(argv)
    if args.command != "run":
        return run_client_command(args, server_command)
    run_parser: argparse.ArgumentParser = args.command_parser
    if server_command:
        run_parser.error("run takes no command after --")
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    options, refused = _run_options(run_parser, args)
    if refused is not None:
        print(f"trio-mcp: {refused}", file=sys.stderr)
        return 2
    mismatch = audience_mismatch(args) if args.worker_fds is None else None
    if mismatch is not None:
        logger.warning("%s", mismatch)
    if options is not None and args.workers > 1 and args.worker_fds is None:
        return _serve_workers(args, argv, options)
    try:
        server, warnings = load_server(args.target)
    except (ValueError, ToolDefinitionError) as exc:
        print(f"trio-mcp: {exc}", file=sys.stderr)
        return 2
    for warning in warnings:
        print(f"trio-mcp: warning: {warning}", file=sys.stderr)
    return _serve(server, args, options)


def _serve(server: Server, args: argparse.Namespace, options: HttpOptions | None) -> int:
    """Serve a loaded server as `run` was told; the exit code."""
    try:
        _use_redis(server, args)
        if args.auth_scopes:
            server._required_scopes = tuple(dict.fromkeys([*server._required_scopes,
                                                           *args.auth_scopes]))  # fmt: skip
        if options is not None and args.worker_fds is not None:
            listen_fd, link_fd = (int(fd) for fd in args.worker_fds.split(","))
            run_worker(
                server, host=args.host, listen_fd=listen_fd, link_fd=link_fd, options=options
            )
        elif args.transport == "stdio":
            run_stdio(server, try_with=f"trio-mcp tools {shlex.quote(args.target)}")
        else:
            run(server, transport=args.transport, host=args.host, port=args.port, options=options)
    except LifespanError as exc:  # the server's own start failed: its traceback helps
        logger.error("%s", exc, exc_info=exc.__cause__)  # noqa: TRY400 - the cause's traceback
        return 1
    except (RuntimeError, OSError, ValueError) as exc:  # no Hypercorn, port taken, 0.0.0.0 ...
        print(f"trio-mcp: {exc}", file=sys.stderr)
        return 2
    return 0


def audience_mismatch(args: argparse.Namespace) -> str | None:
    """Why clients would refuse `--auth-audience`, or None: it names a host not served.

    A client compares the resource that the server's metadata names (the audience) with the
    URL it connects to: the audience's host[:port] must be one this server answers for, its
    bind address (with its port, once known) or an `--allow-host` entry (`name` with any port,
    `name:port` with that one).
    """
    if args.auth_audience is None or "*" in args.allow_host:
        return None
    parts = urlsplit(args.auth_audience)
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        port = None
    host = (parts.hostname or "").lower()
    if host == args.host.lower().strip("[]") and args.port in (0, port):
        return None
    for entry in args.allow_host:
        allowed = urlsplit(f"//{entry}")
        try:
            allowed_port = allowed.port
        except ValueError:
            continue
        if (allowed.hostname or "").lower() == host and allowed_port in (None, port):
            return None
    named = f"{host}:{port}" if port is not None else host
    served = f"{args.host}:{args.port}" if args.port else args.host
    others = f" and --allow-host {', '.join(args.allow_host)}" if args.allow_host else ""
    return (
        f"--auth-audience {args.auth_audience} names {named}, but this server answers for "
        f"{served} (its bind address){others}: a client connecting to it will refuse a "
        f"resource named for another host; give the URL clients connect to (or --allow-host "
        f"{named})"
    )


def _use_redis(server: Server, args: argparse.Namespace) -> None:
    """`--task-store` and `--broker`: Redis, in place of what the module's server set.

    Raises:
        ValueError: for a URL that names no Redis.
        RuntimeError: when the `redis` package is not installed.
    """
    for option, url in (("--task-store", args.task_store), ("--broker", args.broker)):
        if url is not None and url.partition("://")[0] not in ("redis", "rediss", "unix"):
            raise ValueError(f"{option} takes a redis://, rediss:// or unix:// URL")
    if args.task_store is not None:
        from ._runtime.redis_tasks import RedisTaskStore  # noqa: PLC0415 - loads only when used

        server._task_runtime.store = RedisTaskStore(args.task_store)
    if args.broker is not None:
        from ._runtime.redis_broker import RedisBroker  # noqa: PLC0415 - loads only when used

        server.broker = RedisBroker(args.broker)


def _run_options(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[HttpOptions | None, str | None]:
    """`run`'s HTTP options (None over stdio), or why it cannot run (exit 2).

    A contradiction among the options is a usage error (`parser.error`, which exits).
    """
    if args.transport != "http" and args.workers != 1:
        parser.error("--workers serves HTTP: add --transport http")
    if (args.auth_issuer is None) != (args.auth_audience is None):
        parser.error("--auth-issuer and --auth-audience go together")
    per_address = args.max_connections_per_address
    if per_address is not None and (per_address < 0 or args.transport != "http"):
        parser.error("--max-connections-per-address takes 0 or more, with --transport http")
    if args.auth_issuer is not None and args.transport != "http":
        parser.error("--auth-issuer protects an HTTP server: add --transport http")
    if args.auth_issuer is not None and os.environ.get("TRIO_MCP_BEARER_TOKEN"):
        parser.error("TRIO_MCP_BEARER_TOKEN and --auth-issuer exclude each other: unset one")
    refused = _workers.refusal(args.workers, args.stateless)
    if refused is not None:
        return None, refused
    try:
        return (_http_options(args) if args.transport == "http" else None), None
    except ImportError:
        return None, 'verifying JWTs needs PyJWT: pip install "trio-mcp[auth]"'


def _http_options(args: argparse.Namespace) -> HttpOptions:
    """The HTTP options the command line asks for.

    Raises:
        ImportError: `--auth-issuer` without PyJWT installed.
    """
    auth = metadata = None
    if args.auth_issuer is not None:
        from .transports.http.auth import (  # noqa: PLC0415 - loads only when asked for
            JwtVerifier,
            ProtectedResource,
        )

        auth = JwtVerifier(
            issuer=args.auth_issuer, audience=args.auth_audience, jwks_url=args.auth_jwks
        )
        metadata = ProtectedResource(
            authorization_servers=(args.auth_issuer,),
            scopes_supported=tuple(args.auth_scopes),
            resource=args.auth_audience,
        )
    return HttpOptions(
        allowed_origins=(*DEFAULT_ALLOWED_ORIGINS, *args.allow_origin),
        allowed_hosts=tuple(args.allow_host),
        # A token on the command line would show in `ps`; it comes from the environment.
        bearer_token=os.environ.get("TRIO_MCP_BEARER_TOKEN") or None,
        auth=auth,
        resource_metadata=metadata,
        stateless=args.stateless,
        legacy_sse=not args.no_legacy_sse,
        max_connections_per_address=_per_address(args.max_connections_per_address),
    )


def _per_address(given: int | None) -> int | None:
    """`--max-connections-per-address`: not given, the default; 0, no bound."""
    if given is None:
        return HttpOptions.max_connections_per_address
    return given or None


def _serve_workers(args: argparse.Namespace, argv: list[str], options: HttpOptions) -> int:
    """Bind once, then run `args.workers` processes of this same command on the socket."""
    try:
        from .transports.http.serving import (  # noqa: PLC0415 - HTTP code loads only when used
            bind_listener,
            listener_url,
        )
    except ImportError:
        print('trio-mcp: HTTP serving needs Hypercorn: pip install "trio-mcp[http]"',
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        listener = bind_listener(args.host, args.port, options)
    except (OSError, ValueError) as exc:  # port taken, 0.0.0.0 without --allow-host ...
        print(f"trio-mcp: {exc}", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "trio_mcp", *argv]
    return _workers.supervise(
        command, listener, args.workers, listener_url(listener) + options.path
    )
