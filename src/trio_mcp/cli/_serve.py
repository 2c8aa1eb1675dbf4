"""`trio-mcp run TARGET`: serve a module's tools over stdio or HTTP.

TARGET is a module path (`demo_tools`, `pkg.tools`), `module:attribute`, or a `.py` file. An
attribute (or a module-level `server`) that is a `Server` is served as is; otherwise the
`@tool`-tagged functions of the module, class or instance are served (`load_server`).

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

Exit codes: 0 served to the end, 1 the server's own start (its lifespan) failed, 2 a usage
error, a target that does not load, or an address that cannot be bound.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from .._exceptions import LifespanError, ToolDefinitionError
from .._features.tools import discover_tools
from .._run import run, run_stdio
from .._runtime.server import Server
from . import _workers
from ._output import plural

if TYPE_CHECKING:  # HTTP code loads when HTTP is used: a stdio server starts sooner without it
    from ..transports.http.app import HttpOptions

__all__ = ["audience_mismatch", "load_server", "run_command", "unregistered_tools"]

logger = logging.getLogger("trio_mcp.cli")

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


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
            f"{plural(len(obj.tools), 'tool')}. @tool only tags a function: register them "
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


def run_command(args: argparse.Namespace, argv: list[str], server_command: list[str]) -> int:
    """Run a parsed `run` (`argv`: its whole command line, for the workers); the exit code."""
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
            _workers.run_worker(
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
        from .._runtime.redis_tasks import RedisTaskStore  # noqa: PLC0415 - loads only when used

        server._task_runtime.store = RedisTaskStore(args.task_store)
    if args.broker is not None:
        from .._runtime.redis_broker import RedisBroker  # noqa: PLC0415 - loads only when used

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
    from ..transports.http.app import (  # noqa: PLC0415 - HTTP code loads only when used
        DEFAULT_ALLOWED_ORIGINS,
        HttpOptions,
    )

    # `--max-connections-per-address`: not given, the default; 0, no bound.
    per_address = args.max_connections_per_address
    auth = metadata = None
    if args.auth_issuer is not None:
        from ..auth.resource import ProtectedResource  # noqa: PLC0415 - only when asked for
        from ..auth.verifiers import JwtVerifier  # noqa: PLC0415

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
        max_connections_per_address=(
            HttpOptions.max_connections_per_address if per_address is None else per_address or None
        ),
    )


def _serve_workers(args: argparse.Namespace, argv: list[str], options: HttpOptions) -> int:
    """Bind once, then run `args.workers` processes of this same command on the socket."""
    try:
        from ..transports.http.serving import (  # noqa: PLC0415 - HTTP code loads only when used
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
