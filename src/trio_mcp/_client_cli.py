"""The client commands of the `trio-mcp` command line: `tools`, `call` and `demo`.

    trio-mcp tools SERVER                 list the tools and their parameters
    trio-mcp tools SERVER TOOL            one tool in full, with its input and output schemas
    trio-mcp tools SERVER [TOOL] --json   the same as JSON, as the server lists it
    trio-mcp call SERVER TOOL [k=v ...]   call a tool (each value read as its parameter takes it)
    trio-mcp call SERVER TOOL --json '{"a": 5}'
    trio-mcp demo [--http]                a guided tour of the demo server

SERVER is a module path or a `.py` file (served by `python -m trio_mcp run SERVER` in a
subprocess), an http(s) URL (a path ending in /sse means the legacy HTTP+SSE transport), or,
after `--`, any command that runs a stdio server: `trio-mcp tools -- python -m demo_tools`
(then the words before `--` are only the tool and its arguments).

A mistyped tool or parameter name is answered with the close names (`suggest_names`,
`unknown_name`: written for any kind of name, so other primitives can use them too).

Exit codes: 0 success, 1 the tool reported an error, 2 a usage or connection error.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import math
import re
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, TextIO
from urllib.parse import urlsplit

import trio

from ._connect import open_client
from ._core.client_records import LogMessage, Progress, ToolInfo, ToolResult, describe_type
from ._core.jsonrpc import json_type
from ._core.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent
from ._exceptions import RequestError, TrioMCPError
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
        help="list a server's tools, or show one with its schemas",
        description="List a server's tools and their parameters; given a TOOL, show that tool "
        "in full: its whole description, parameters, input schema and output schema. "
        + _SERVER_FORMS,
    )
    tools.add_argument(
        "words",
        nargs="*",
        metavar="SERVER [TOOL]",
        help=f"{server_help}; then, optionally, the tool to show",
    )
    tools.add_argument(
        "--json",
        action="store_true",
        help="print the tools (or the one TOOL) as JSON, as the server lists them",
    )
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
        "each VALUE is read as the tool's input schema says: as it is for a string parameter "
        "(query=2024 is the text 2024), as JSON for numbers, booleans, arrays and objects "
        "(n=5, on=true, ids=[1,2]); for a parameter that takes a string or another type, "
        "JSON of that type wins, and a JSON string ('\"2024\"') forces a string",
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
            target, tool = _tools_plan(args, server_command)
            return trio.run(_with_timeout, args.timeout, _tools, target, args, tool)
        target, tool, pairs = _call_plan(args, server_command)
        return trio.run(_with_timeout, args.timeout, _call, target, args, tool, pairs)
    except UsageError as exc:
        print(f"trio-mcp {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _no_command(name: str, server_command: Sequence[str]) -> None:
    if server_command:
        raise UsageError(f"{name} takes no command after --")


def _tools_plan(
    args: argparse.Namespace, server_command: Sequence[str]
) -> tuple[str | list[str], str | None]:
    words = list(args.words)
    server = None if server_command or not words else words.pop(0)
    if len(words) > 1:
        raise UsageError(
            "give the server either before -- or as a command after it"
            if server_command
            else f"give one tool to show, not {len(words)}: trio-mcp tools SERVER [TOOL]"
        )
    return _target(server, server_command), (words[0] if words else None)


def _call_plan(
    args: argparse.Namespace, server_command: Sequence[str]
) -> tuple[str | list[str], str, list[tuple[str, str]]]:
    words = list(args.words)
    server = None
    if not server_command:
        if not words:
            raise UsageError("give the server and the tool: trio-mcp call SERVER TOOL ...")
        server, words = words[0], words[1:]
    if not words:
        raise UsageError("give the tool to call: trio-mcp call SERVER TOOL [NAME=VALUE ...]")
    target = _target(server, server_command)
    pairs = split_pairs(words[1:])
    parse_arguments([], args.json)  # a bad --json is a usage error before anything starts
    return target, words[0], pairs


def split_pairs(words: Sequence[str]) -> list[tuple[str, str]]:
    """NAME=VALUE words as (name, value) pairs; the value is still text.

    Raises:
        UsageError: for a word without `=` or without a name.
    """
    pairs = []
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name:
            raise UsageError(f"{word!r} is not NAME=VALUE")
        pairs.append((name, value))
    return pairs


def parse_arguments(
    pairs: Sequence[str] | Sequence[tuple[str, str]],
    json_object: str | None,
    input_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Tool arguments from `--json` and NAME=VALUE pairs (the pairs win).

    Each VALUE is read as its parameter's schema says (`convert_value`); without a schema, or
    for a name the schema does not describe, a VALUE that parses as JSON is that, otherwise
    the text.

    Raises:
        UsageError: for a pair without `=`, `--json` that is not a JSON object, or a name the
            tool's closed schema does not have (with the names close to it).
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
    split = [pair if isinstance(pair, tuple) else split_pairs([pair])[0] for pair in pairs]
    schema: Mapping[str, Any] = input_schema or {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    for name, value in split:
        if name not in properties and schema.get("additionalProperties") is False:
            raise UsageError(unknown_name("parameter", name, list(properties)))
        arguments[name] = convert_value(value, properties.get(name), schema)
    return arguments


def convert_value(text: str, schema: Any, root: Mapping[str, Any] | None = None) -> Any:
    """One NAME=VALUE value, read as the parameter's JSON Schema says.

    A parameter that takes only strings gets the text as it is (`query=2024` is "2024").
    One that takes no strings gets the text parsed as JSON when it parses (5, true, [1, 2],
    {"a": 1}, null), else the text, for the server to explain what it expected. One that
    takes a string or something else (`str | int`) gets the JSON reading when it is of a type
    the schema allows, else the text; a JSON string (`'"2024"'`) forces a string there.
    A schema that does not say (no type, or an open branch) gets the JSON reading when there
    is one.

    Args:
        text: What followed `NAME=`.
        schema: The parameter's JSON Schema (None when the tool does not describe it).
        root: The whole input schema, where `$ref`s point.
    """
    kinds = json_types(schema, root or {})
    if kinds == {"string"}:
        return text
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return text
    if kinds is None or "string" not in kinds:
        return parsed
    kind = json_type(parsed)
    return parsed if kind in kinds or (kind == "integer" and "number" in kinds) else text


# Deep enough for any real schema; a `$ref` cycle stops here.
_MAX_SCHEMA_DEPTH: Final = 16


def json_types(schema: Any, root: Mapping[str, Any], depth: int = 0) -> set[str] | None:
    """The JSON types a JSON Schema accepts, or None when it accepts any or does not say."""
    if not isinstance(schema, Mapping) or depth > _MAX_SCHEMA_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if not ref.startswith("#/"):
            return None
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        return json_types(target, root, depth + 1)
    kinds: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        kinds.add(declared)
    elif isinstance(declared, list):
        kinds.update(k for k in declared if isinstance(k, str))
    if "const" in schema:
        kinds.add(json_type(schema["const"]))
    if isinstance(schema.get("enum"), list):
        kinds.update(json_type(value) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                inner = json_types(branch, root, depth + 1)
                if inner is None:
                    return None  # one branch takes anything: so does the whole
                kinds |= inner
    return kinds or None


# -- names ----------------------------------------------------------------------------------------


def suggest_names(name: str, known: Iterable[str], limit: int = 3) -> list[str]:
    """The names in `known` closest to a mistyped `name`, best first (for "did you mean").

    Case is ignored, and the last part of a dotted name counts on its own: "add" and
    "calc.add" both find "calculator.add". Only names about as close as the closest are
    offered, so that a shared namespace does not bring in all its neighbours.
    """
    wanted = name.lower()
    scored: dict[str, float] = {}
    for candidate in known:
        folded = candidate.lower()
        score = max(_likeness(wanted, folded), _likeness(_last_part(wanted), _last_part(folded)))
        if score >= _SUGGEST_CUTOFF:
            scored[candidate] = max(score, scored.get(candidate, 0.0))
    if not scored:
        return []
    best = max(scored.values())
    close = [c for c in sorted(scored, key=lambda c: -scored[c]) if scored[c] >= best - 0.1]
    return close[:limit]


# difflib's own default cutoff for get_close_matches.
_SUGGEST_CUTOFF: Final = 0.6


def _likeness(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def _last_part(name: str) -> str:
    return re.split(r"[./:]", name)[-1]


def unknown_name(kind: str, name: str, known: Sequence[str]) -> str:
    """The message for a `kind` ("tool", "parameter", ...) called `name` that is not in `known`.

    It offers the close names (`suggest_names`), or else the known ones.
    """
    close = suggest_names(name, known)
    if close:
        return f"unknown {kind} {name!r}; did you mean {_either(close)}?"
    if not known:
        return f"unknown {kind} {name!r}: there are no {kind}s"
    shown = ", ".join(repr(k) for k in known[:_MAX_LISTED])
    more = f" and {len(known) - _MAX_LISTED} more" if len(known) > _MAX_LISTED else ""
    return f"unknown {kind} {name!r}; the {kind}s are {shown}{more}"


# Names listed when none is close: enough to spot the right one without flooding the terminal.
_MAX_LISTED: Final = 10


def _either(names: Sequence[str]) -> str:
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


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


async def _tools(target: str | list[str], args: argparse.Namespace, name: str | None) -> int:
    async with _connect(target, args) as client:
        tools = await client.list_tools()
    if name is None:
        if args.json:
            print(json.dumps([tool.raw for tool in tools], indent=2, ensure_ascii=False))
        else:
            print(format_tools(tools, client.server_info))
        return EXIT_OK
    found = next((tool for tool in tools if tool.name == name), None)
    if found is None:
        raise UsageError(unknown_name("tool", name, [tool.name for tool in tools]))
    print(json.dumps(found.raw, indent=2, ensure_ascii=False) if args.json else format_tool(found))
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
        # One line each: the first paragraph; `trio-mcp tools SERVER TOOL` shows the rest.
        summary = " ".join(tool.description.split("\n\n")[0].split()) if tool.description else ""
        lines.append(tool.name + (f"  {summary}" if summary else ""))
        lines += _parameter_table(tool)
        if tool.output_schema is not None:
            lines.append(f"    returns: {describe_output(tool.output_schema)}")
        lines.append("")
    return "\n".join(lines).rstrip()


def format_tool(tool: ToolInfo) -> str:
    """One tool in full: its description, parameters and return, then its JSON Schemas."""
    lines = [tool.name + (f"  ({tool.title})" if tool.title else "")]
    if tool.description:
        lines += [textwrap.indent(tool.description, "    "), ""]
    lines += _parameter_table(tool)
    if tool.output_schema is not None:
        lines.append(f"    returns: {describe_output(tool.output_schema)}")
    if tool.annotations:
        lines.append(f"    annotations: {json.dumps(tool.annotations, ensure_ascii=False)}")
    for label, schema in (
        ("input schema", tool.input_schema),
        ("output schema", tool.output_schema),
    ):
        shown = "none" if schema is None else json.dumps(schema, indent=2, ensure_ascii=False)
        lines += ["", f"{label}:" if schema is not None else f"{label}: {shown}"]
        if schema is not None:
            lines.append(shown)
    return "\n".join(lines)


def _parameter_table(tool: ToolInfo) -> list[str]:
    params = tool.parameters
    if not params:
        return ["    (no parameters)"]
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
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        lines.append(("    " + "  ".join([*cells, row[4]])).rstrip())
    return lines


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
    target: str | list[str], args: argparse.Namespace, tool: str, pairs: list[tuple[str, str]]
) -> int:
    async with _connect(target, args) as client:
        # The tool's schema says how to read each NAME=VALUE (`convert_value`).
        tools = await client.list_tools()
        listed = next((t for t in tools if t.name == tool), None)
        arguments = parse_arguments(pairs, args.json, listed.input_schema if listed else None)
        try:
            result = await client.call_tool(tool, arguments, progress=_print_progress)
        except RequestError:
            if listed is not None:
                raise
            # Not listed, and refused: a mistyped name. (A server may serve a tool it does not
            # list, so an unlisted name is still tried.)
            raise UsageError(unknown_name("tool", tool, [t.name for t in tools])) from None
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
