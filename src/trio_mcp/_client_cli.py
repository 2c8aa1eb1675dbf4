"""The client commands of the `trio-mcp` command line: `tools`, `call` and `demo`.

    trio-mcp tools SERVER                 list the tools and their parameters
    trio-mcp call SERVER TOOL [k=v ...]   call a tool (values are JSON when they parse as JSON)
    trio-mcp call SERVER TOOL --json '{"a": 5}'
    trio-mcp demo [--http]                a guided tour of the demo server

SERVER is a module path or a `.py` file (served by `python -m trio_mcp run SERVER` in a
subprocess), an http(s) URL (a path ending in /sse means the legacy HTTP+SSE transport), or,
after `--`, any command that runs a stdio server: `trio-mcp tools -- python -m demo_tools`.

Exit codes: 0 success, 1 the tool reported an error, 2 a usage or connection error.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, TextIO
from urllib.parse import urlsplit

import trio

from ._connect import open_client
from ._core.client_records import LogMessage, Progress, ToolInfo, ToolResult, describe_type
from ._core.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent
from ._exceptions import TrioMCPError
from ._runtime.client import Client

__all__ = ["CLIENT_COMMANDS", "add_client_commands", "run_client_command", "split_server_command"]

CLIENT_COMMANDS: Final = ("tools", "call", "demo")
EXIT_OK: Final = 0
EXIT_TOOL_ERROR: Final = 1
EXIT_USAGE: Final = 2
# Seconds `trio-mcp demo --http` waits for its server to say where it listens.
DEMO_START_TIMEOUT: Final = 30.0


class UsageError(Exception):
    """A command line that cannot be run; the message says why."""


def split_server_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split `argv` at the first `--`: (our arguments, the server command after it)."""
    args = list(argv)
    if "--" in args:
        at = args.index("--")
        return args[:at], args[at + 1 :]
    return args, []


def add_client_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `tools`, `call` and `demo` to the `trio-mcp` parser."""
    server_help = "module path, file.py or http(s) URL (or give a command after --)"
    tools = commands.add_parser(
        "tools",
        help="list a server's tools and their parameters",
        description="List a server's tools and their parameters. " + _SERVER_FORMS,
    )
    tools.add_argument("server", nargs="?", help=server_help)
    _add_common(tools)

    call = commands.add_parser(
        "call",
        help="call one tool and print its result",
        description="Call one tool and print its result. " + _SERVER_FORMS,
    )
    call.add_argument(
        "words",
        nargs="*",
        metavar="SERVER TOOL [NAME=VALUE ...]",
        help="the server (left out when a command follows --), the tool, and its arguments; "
        "a VALUE that parses as JSON is JSON (5, true, [1,2]), otherwise a string",
    )
    call.add_argument("--json", metavar="OBJECT", help="all arguments as one JSON object")
    call.add_argument(
        "--raw", action="store_true", help="print the result object as JSON, as it came"
    )
    _add_common(call)

    demo = commands.add_parser(
        "demo",
        help="start the demo server and call each of its tools",
        description="Start the demo server as a subprocess and call each of its tools in turn, "
        "showing the results, errors, progress and time taken.",
    )
    demo.add_argument(
        "--http", action="store_true", help="serve over Streamable HTTP on a free port"
    )


_SERVER_FORMS = (
    "SERVER is a module path or file.py (run with `python -m trio_mcp run SERVER`), an "
    "http(s) URL (a path ending in /sse uses legacy HTTP+SSE), or a command given after --, "
    "e.g. `-- python -m demo_tools`."
)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="give up after this long (default: wait as long as it takes)",
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="HTTP: send this header (repeatable)",
    )
    parser.add_argument(
        "--show-stderr", action="store_true", help="stdio: show the server's stderr as it runs"
    )


def run_client_command(args: argparse.Namespace, server_command: Sequence[str]) -> int:
    """Run a parsed client command; returns the exit code."""
    # Failures reach the user once, as the command's own message: the library's warnings
    # (retries, failed calls) would only repeat them.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr, format="trio-mcp: %(message)s")
    try:
        if args.command == "demo":
            _no_command("demo", server_command)
            return trio.run(_demo, args.http)
        if args.command == "tools":
            target = _target(args.server, server_command)
            return trio.run(_with_timeout, args.timeout, _tools, target, args)
        target, tool, arguments = _call_plan(args, server_command)
        return trio.run(_with_timeout, args.timeout, _call, target, args, tool, arguments)
    except UsageError as exc:
        print(f"trio-mcp {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _no_command(name: str, server_command: Sequence[str]) -> None:
    if server_command:
        raise UsageError(f"{name} takes no command after --")


def _call_plan(
    args: argparse.Namespace, server_command: Sequence[str]
) -> tuple[str | list[str], str, dict[str, Any]]:
    words = list(args.words)
    server = None
    if not server_command:
        if not words:
            raise UsageError("give the server and the tool: trio-mcp call SERVER TOOL ...")
        server, words = words[0], words[1:]
    if not words:
        raise UsageError("give the tool to call: trio-mcp call SERVER TOOL [NAME=VALUE ...]")
    target = _target(server, server_command)
    return target, words[0], parse_arguments(words[1:], args.json)


def parse_arguments(pairs: Sequence[str], json_object: str | None) -> dict[str, Any]:
    """Tool arguments from `--json` and NAME=VALUE pairs (the pairs win).

    Raises:
        UsageError: for a pair without `=` or `--json` that is not a JSON object.
    """
    arguments: dict[str, Any] = {}
    if json_object is not None:
        try:
            parsed = json.loads(json_object)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--json is not valid JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise UsageError("--json must be a JSON object, e.g. '{\"a\": 5}'")
        arguments.update(parsed)
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"{pair!r} is not NAME=VALUE")
        try:
            arguments[name] = json.loads(value)
        except json.JSONDecodeError:
            arguments[name] = value
    return arguments


def _target(server: str | None, command: Sequence[str]) -> str | list[str]:
    if command:
        if server is not None:
            raise UsageError("give the server either before -- or as a command after it")
        return list(command)
    if not server:
        raise UsageError("give a server: a module path, file.py, URL, or -- COMMAND")
    if urlsplit(server).scheme in ("http", "https"):
        return server
    return [sys.executable, "-m", "trio_mcp", "run", server]


async def _with_timeout(limit: float | None, fn: Callable[..., Any], *args: Any) -> int:
    try:
        with trio.fail_after(math.inf if limit is None else limit):
            result: int = await fn(*args)
            return result
    except trio.TooSlowError:
        print(f"trio-mcp: gave up after {limit} s", file=sys.stderr)
        return EXIT_USAGE
    except TrioMCPError as exc:
        print(f"trio-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:
        print(f"trio-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE


@asynccontextmanager
async def _connect(target: str | list[str], args: argparse.Namespace) -> AsyncIterator[Client]:
    headers = {}
    for header in args.header:
        name, sep, value = header.partition(":")
        if not sep:
            raise ValueError(f"--header {header!r} is not NAME:VALUE")
        headers[name.strip()] = value.strip()
    async with open_client(
        target,
        headers=headers,
        echo_stderr=args.show_stderr,
        log_handler=_print_log,
        client_info={"name": "trio-mcp-cli", "version": "1"},
    ) as client:
        yield client


def _print_log(message: LogMessage) -> None:
    data = message.data if isinstance(message.data, str) else json.dumps(message.data)
    source = f" {message.logger}" if message.logger else ""
    print(f"[server{source} {message.level}] {data}", file=sys.stderr, flush=True)


# -- tools ----------------------------------------------------------------------------------------


async def _tools(target: str | list[str], args: argparse.Namespace) -> int:
    async with _connect(target, args) as client:
        tools = await client.list_tools()
    print(format_tools(tools, client.server_info))
    return EXIT_OK


def format_tools(tools: Sequence[ToolInfo], server_info: dict[str, Any] | None = None) -> str:
    """The tools and their parameters as a plain-text table."""
    lines = []
    if server_info:
        name = server_info.get("name", "server")
        version = server_info.get("version")
        count = f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
        lines += [f"{name} {version or ''}".rstrip() + f": {count}", ""]
    for tool in tools:
        lines.append(tool.name + (f"  {tool.description}" if tool.description else ""))
        params = tool.parameters
        if not params:
            lines += ["    (no parameters)", ""]
            continue
        rows = [("PARAMETER", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION")]
        for param in params:
            default = json.dumps(param.default) if param.has_default else ""
            rows.append(
                (
                    param.name,
                    param.type,
                    "yes" if param.required else "no",
                    default,
                    param.description or "",
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
            lines.append(("    " + "  ".join([*cells, row[4]])).rstrip())
        if tool.output_schema is not None:
            lines.append(f"    returns: {describe_output(tool.output_schema)}")
        lines.append("")
    return "\n".join(lines).rstrip()


def describe_output(schema: dict[str, Any]) -> str:
    """An output schema in one line: a wrapped value's type, or the object's fields."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return describe_type(schema)
    if set(properties) == {"result"}:
        return describe_type(properties["result"])  # a plain value, wrapped by the server
    return ", ".join(
        f"{name}: {describe_type(sub if isinstance(sub, dict) else {})}"
        for name, sub in properties.items()
    )


# -- call -----------------------------------------------------------------------------------------


async def _call(
    target: str | list[str], args: argparse.Namespace, tool: str, arguments: dict[str, Any]
) -> int:
    async with _connect(target, args) as client:
        result = await client.call_tool(tool, arguments, progress=_print_progress)
    if args.raw:
        print(json.dumps(result.raw, indent=2, ensure_ascii=False))
    elif result.is_error:
        print(f"error: {result.text or '(no message)'}", file=sys.stderr)
    else:
        print(render_result(result))
    return EXIT_TOOL_ERROR if result.is_error else EXIT_OK


def _print_progress(update: Progress, out: TextIO | None = None) -> None:
    out = out or sys.stderr
    print(f"  {format_progress(update)}", file=out, flush=True)


def format_progress(update: Progress) -> str:
    """One progress update as `[2/3] message`."""
    done = _number(update.progress)
    step = f"[{done}/{_number(update.total)}]" if update.total is not None else f"[{done}]"
    return f"{step} {update.message}" if update.message else step


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def render_result(result: ToolResult) -> str:
    """A result for people: a lone value bare, an object one field per line, else the blocks."""
    structured = result.structured
    if structured is not None and not result.is_error:
        if set(structured) == {"result"}:
            return _render_value(structured["result"])
        width = max((len(str(key)) for key in structured), default=0)
        return "\n".join(
            f"{str(key) + ':':<{width + 1}} {_render_value(value)}"
            for key, value in structured.items()
        )
    parts = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            parts.append(f"[{kind} {block.mime_type}, {len(block.data)} base64 characters]")
        elif isinstance(block, EmbeddedResource):
            parts.append(block.text if block.text is not None else f"[resource {block.uri}]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[link {block.name}: {block.uri}]")
        else:
            parts.append(json.dumps(block))
    return "\n".join(parts)


def _render_value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


# -- demo -----------------------------------------------------------------------------------------


async def _demo(http: bool) -> int:
    # The demo package holds its own tour (nothing here names a demo tool or resource); it
    # ships in the same wheel as trio_mcp.
    from demo_tools.tour import run_tour  # noqa: PLC0415 - only the demo command needs it

    try:
        if http:
            async with _demo_http_server() as url:
                print(f"Demo server: {url} (Streamable HTTP)")
                async with open_client(url) as client:
                    return await run_tour(client, walkthrough)
        command = [sys.executable, "-m", "demo_tools"]
        print("Demo server: python -m demo_tools (stdio, a subprocess)")
        async with open_client(command) as client:
            return await run_tour(client, walkthrough)
    except TrioMCPError as exc:
        print(f"trio-mcp demo: {exc}", file=sys.stderr)
        return EXIT_USAGE


async def walkthrough(
    client: Client, calls: Sequence[tuple[str, dict[str, Any]]], out: TextIO | None = None
) -> int:
    """Make each call in turn, printing results, errors, progress and timings."""
    out = out or sys.stdout
    info = client.server_info
    tools = await client.list_tools()
    print(
        f"Connected to {info.get('name', 'the server')} {info.get('version', '')} "
        f"(protocol {client.protocol_version}), {len(tools)} tools\n",
        file=out,
    )
    failures = 0
    for number, (tool, arguments) in enumerate(calls, start=1):
        shown = ", ".join(f"{key}={json.dumps(value)}" for key, value in arguments.items())
        print(f"{number}. {tool}({shown})", file=out, flush=True)

        def progress(update: Progress) -> None:
            print(f"     progress {format_progress(update)}", file=out, flush=True)

        started = trio.current_time()
        try:
            result = await client.call_tool(tool, arguments, progress=progress)
        except TrioMCPError as exc:
            failures += 1
            elapsed = trio.current_time() - started
            print(f"   FAILED: {exc}  ({_ms(elapsed)})\n", file=out, flush=True)
            continue
        elapsed = trio.current_time() - started
        if result.is_error:
            print(f"   ERROR (the tool said): {result.text}  ({_ms(elapsed)})\n", file=out)
        else:
            lines = render_result(result).splitlines() or [""]
            print(f"   = {lines[0]}" + ("" if len(lines) > 1 else f"  ({_ms(elapsed)})"), file=out)
            for line in lines[1:]:
                print(f"     {line}", file=out)
            if len(lines) > 1:
                print(f"     ({_ms(elapsed)})", file=out)
            print(file=out, flush=True)
    print("Done." if not failures else f"Done, {failures} call(s) failed.", file=out)
    return EXIT_OK if not failures else EXIT_USAGE


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


@asynccontextmanager
async def _demo_http_server() -> AsyncIterator[str]:
    # The server binds port 0 (a free port, chosen by the kernel: no race with other programs)
    # and says where it listens on stderr, which is read until then.
    command = [
        sys.executable, "-m", "trio_mcp", "run", "demo_tools",
        "--transport", "http", "--port", "0", "--log-level", "WARNING",
    ]  # fmt: skip
    import subprocess  # noqa: PLC0415 - for the PIPE constant only

    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        with trio.fail_after(DEMO_START_TIMEOUT):
            url = await _read_url(process.stderr)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain, process.stderr)
            yield url
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            process.terminate()
            with trio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


async def _read_url(stream: trio.abc.ReceiveStream) -> str:
    seen = b""
    marker = b"serving MCP on "
    while True:
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise TrioMCPError(
                "the demo server ended before serving: "
                + seen.decode("utf-8", "replace").strip()[-500:]
            )
        seen += chunk
        for line in seen.split(b"\n")[:-1]:
            if marker in line:
                return line.split(marker, 1)[1].split(b",")[0].strip().decode()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some(65536):
        pass
