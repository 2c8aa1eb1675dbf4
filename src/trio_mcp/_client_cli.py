"""The client commands of the `trio-mcp` command line: tools, resources, prompts and `demo`.

    trio-mcp tools SERVER                 list the tools and their parameters
    trio-mcp tools SERVER TOOL            one tool in full, with its input and output schemas
    trio-mcp tools SERVER [TOOL] --json   the same as JSON, as the server lists it
    trio-mcp call SERVER TOOL [k=v ...]   call a tool (each value read as its parameter takes it)
    trio-mcp call SERVER TOOL --json '{"a": 5}'
    trio-mcp resources SERVER [--json]    list the resources and the resource templates
    trio-mcp read SERVER URI [--out FILE] [--json]
                                          read a resource: text as it is, a blob's size and type
                                          (or the blob itself, written to FILE)
    trio-mcp prompts SERVER [--json]      list the prompts and their arguments
    trio-mcp prompt SERVER NAME [k=v ...] [--json]
                                          get a prompt and print its messages
    trio-mcp complete SERVER (PROMPT|TEMPLATE) ARGUMENT [VALUE] [k=v ...] [--json]
                                          the values an argument may take, one a line (VALUE:
                                          what is typed so far; k=v: the other arguments)
    trio-mcp demo [--http]                a guided tour of the demo server
    trio-mcp login URL                    sign in to a server that asks for OAuth
    trio-mcp logout URL | --all           forget the tokens kept for it (or for all)
    trio-mcp logout URL --forget-client   and the client registration at its authorization
                                          server (one it no longer knows): register again

SERVER is a module path or a `.py` file (served by `python -m trio_mcp run SERVER` in a
subprocess), an http(s) URL (a path ending in /sse means the legacy HTTP+SSE transport), or,
after `--`, any command that runs a stdio server: `trio-mcp tools -- python -m demo_tools`
(then the words before `--` are only the tool and its arguments).

Options may come before, between or after the words (`trio-mcp call demo_tools --timeout 5
calculator.add a=1`); `--` ends them: what follows it is the server's command, never read as
an option of ours. A word that starts with `-` is an option, but for a negative number and `-`
alone; NAME=VALUE never is (`x=-1`, `flag=--verbose`), and a parameter whose name starts with
`-` is given in `--json`. An option's own value may start with `-` as `--json=-1`.

A mistyped tool, parameter, resource URI, prompt or argument name is answered with the close
names (`suggest_names`, `unknown_name`). A name the server does not list is still sent (a
server may serve what it does not list); only when the server refuses it is it called unknown,
as a usage error. A server that refuses a listed name (a template variable that does not
validate, a missing prompt argument) has its message shown, also as a usage error.

A server at a URL that asks for OAuth (a 401 with the MCP challenge) is signed in to as
`_cli_login` says: tokens kept in a private token file and refreshed, the browser opened to
sign in when there are none (or `--client-credentials` for a machine); an explicit
`--header "Authorization: ..."` turns OAuth off.

Prompt arguments are strings on the wire, so a prompt's NAME=VALUE values are sent as written.

What a server asks while `call`, `read` or `prompt` runs is answered by `_cli_answers`: an
elicitation is put to the user on a terminal (declined without one), sampling is declared (and
answered) only with `--sampling-command CMD`, and `--root PATH` declares the roots.

The client declares the tasks extension: a server may run a long call as a task. `call` then
shows the task's status on stderr each time it changes (`  task working: battle 2 of 5`) and
prints the final result as for any call; Ctrl-C cancels the task (`tasks/cancel`) before the
command ends with 130.

Exit codes: 0 success, 1 the tool reported an error, 2 a usage or connection error, a sign-in
that failed, or a request the server refused.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import json
import logging
import math
import re
import signal
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, TextIO, TypeVar
from urllib.parse import urlsplit

import trio

from ._cli_answers import CommandSampler, TerminalElicitor, roots_from_paths
from ._cli_login import (
    FreshSignIn,
    add_login_commands,
    add_login_options,
    cli_oauth,
    describe_sign_in,
    find_issuer,
    token_storage,
)
from ._connect import open_client
from ._core.client_records import (
    LogMessage,
    Progress,
    PromptInfo,
    PromptResult,
    ResourceInfo,
    ResourceTemplateInfo,
    TaskInfo,
    ToolInfo,
    ToolResult,
    describe_type,
)
from ._core.jsonrpc import METHOD_NOT_FOUND, json_type
from ._core.types import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    TextContent,
)
from ._exceptions import AuthorizationError, RequestError, TrioMCPError, reraise_lone
from ._runtime.client import Client
from ._runtime.options import Asking
from .transports.http.oauth import OAuth, TokenStorage

__all__ = ["CLIENT_COMMANDS", "add_client_commands", "run_client_command", "split_server_command"]

CLIENT_COMMANDS: Final = (
    "tools",
    "call",
    "resources",
    "read",
    "prompts",
    "prompt",
    "complete",
    "demo",
    "login",
    "logout",
)
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
    """Add the client commands (`CLIENT_COMMANDS`) to the `trio-mcp` parser."""
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
    _add_answering(call)

    _add_primitive_commands(commands, server_help)

    demo = commands.add_parser(
        "demo",
        help="start the demo server and call each of its tools",
        description="Start the demo server as a subprocess and call each of its tools in turn, "
        "showing the results, errors, progress and time taken.",
    )
    demo.add_argument(
        "--http", action="store_true", help="serve over Streamable HTTP on a free port"
    )
    add_login_commands(commands)


_SERVER_FORMS = (
    "SERVER is a module path or file.py (run with `python -m trio_mcp run SERVER`), an "
    "http(s) URL (a path ending in /sse uses legacy HTTP+SSE), or a command given after --, "
    "e.g. `-- python -m demo_tools`. Options may come before, between or after the words; -- "
    "ends them (what follows is the server's command)."
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
    add_login_options(parser)


def _add_answering(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sampling-command",
        metavar="CMD",
        help="answer the server's sampling requests with CMD: it reads the conversation as "
        "text on stdin and writes the answer to stdout (default: refuse them)",
    )
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="PATH",
        help="expose PATH to the server as a root, a file:// URI (repeatable)",
    )


def _add_primitive_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], server_help: str
) -> None:
    resources = commands.add_parser(
        "resources",
        help="list a server's resources and resource templates",
        description="List a server's resources (URI, name, MIME type, title) and its resource "
        "templates. " + _SERVER_FORMS,
    )
    resources.add_argument("words", nargs="*", metavar="SERVER", help=server_help)
    resources.add_argument(
        "--json",
        action="store_true",
        help='print {"resources": [...], "resourceTemplates": [...]} as the server lists them',
    )
    _add_common(resources)

    read = commands.add_parser(
        "read",
        help="read one resource and print its contents",
        description="Read one resource, a listed URI or an expansion of a template, and print "
        "its contents: text as it is; for a blob, its size and MIME type (--out writes it). "
        + _SERVER_FORMS,
    )
    read.add_argument(
        "words",
        nargs="*",
        metavar="SERVER URI",
        help="the server (left out when a command follows --) and the resource's URI",
    )
    read.add_argument("--json", action="store_true", help="print the result as JSON, as it came")
    read.add_argument(
        "--out",
        metavar="FILE",
        help="write the contents (text as UTF-8, blobs decoded, one after another) to FILE",
    )
    _add_common(read)
    _add_answering(read)

    prompts = commands.add_parser(
        "prompts",
        help="list a server's prompts and their arguments",
        description="List a server's prompts and their arguments. " + _SERVER_FORMS,
    )
    prompts.add_argument("words", nargs="*", metavar="SERVER", help=server_help)
    prompts.add_argument(
        "--json", action="store_true", help="print the prompts as JSON, as the server lists them"
    )
    _add_common(prompts)

    prompt = commands.add_parser(
        "prompt",
        help="get one prompt and print its messages",
        description="Get one prompt and print its messages, one `role: text` each (other "
        "content summarised). " + _SERVER_FORMS,
    )
    prompt.add_argument(
        "words",
        nargs="*",
        metavar="SERVER NAME [NAME=VALUE ...]",
        help="the server (left out when a command follows --), the prompt, and its arguments; "
        "prompt arguments are strings, so each VALUE is sent as written",
    )
    prompt.add_argument("--json", action="store_true", help="print the result as JSON, as it came")
    _add_common(prompt)
    _add_answering(prompt)

    complete = commands.add_parser(
        "complete",
        help="the values a prompt argument or template variable may take",
        description="Ask the server to complete an argument of a prompt (given by name) or a "
        "variable of a resource template (given by its URI template), and print the values, "
        "one a line. " + _SERVER_FORMS,
    )
    complete.add_argument(
        "words",
        nargs="*",
        metavar="SERVER (PROMPT|TEMPLATE) ARGUMENT [VALUE] [NAME=VALUE ...]",
        help="the server (left out when a command follows --), the prompt or URI template, the "
        "argument to complete, what is typed so far (a word without =; none: the empty "
        "string), then the values already chosen for the other arguments",
    )
    complete.add_argument(
        "--json",
        action="store_true",
        help='print {"values": [...], "total": N, "hasMore": false} as JSON',
    )
    _add_common(complete)


def run_client_command(args: argparse.Namespace, server_command: Sequence[str]) -> int:
    """Run a parsed client command; returns the exit code."""
    # Failures reach the user once, as the command's own message: the library's warnings
    # (retries, failed calls) would only repeat them.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr, format="trio-mcp: %(message)s")
    try:
        if args.command == "demo":
            _no_command("demo", server_command)
            return trio.run(_demo, args.http)
        if args.command in ("login", "logout"):
            return _sign_in_command(args, server_command)
        if args.command == "tools":
            target, tool = _tools_plan(args, server_command)
            return trio.run(_with_timeout, args.timeout, _tools, target, args, tool)
        if args.command in _PRIMITIVE_COMMANDS:
            runner, target, rest = _primitive_plan(args, server_command)
            return trio.run(_with_timeout, args.timeout, runner, target, args, *rest)
        target, tool, pairs = _call_plan(args, server_command)
        return trio.run(_with_timeout, args.timeout, _call, target, args, tool, pairs)
    except UsageError as exc:
        print(f"trio-mcp {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _sign_in_command(args: argparse.Namespace, server_command: Sequence[str]) -> int:
    _no_command(args.command, server_command)
    if args.command == "logout":
        return trio.run(_logout, args)
    if urlsplit(args.url).scheme not in ("http", "https"):
        raise UsageError(f"login takes a server's http(s) URL, not {args.url!r}")
    return trio.run(_with_timeout, args.timeout, _login, args.url, args)


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
async def _connect(
    target: str | list[str], args: argparse.Namespace, storage: FreshSignIn | None = None
) -> AsyncIterator[Client]:
    if isinstance(target, str):
        oauth = cli_oauth(args, storage, url=target)
        async with oauth as auth, _open(target, args, auth) as client:
            yield client
    else:
        async with _open(target, args, None) as client:
            yield client


@asynccontextmanager
async def _open(
    target: str | list[str], args: argparse.Namespace, auth: OAuth | None
) -> AsyncIterator[Client]:
    headers = {}
    for header in args.header:
        name, sep, value = header.partition(":")
        if not sep:
            raise ValueError(f"--header {header!r} is not NAME:VALUE")
        headers[name.strip()] = value.strip()
    # What the server may ask: the user on a terminal, a command for sampling, --root paths.
    elicitor = TerminalElicitor()
    command = getattr(args, "sampling_command", None)
    roots = getattr(args, "root", None) or []
    async with open_client(
        target,
        headers=headers,
        echo_stderr=getattr(args, "show_stderr", False),
        log_handler=_print_log,
        client_info={"name": "trio-mcp-cli", "version": "1"},
        asking=Asking(
            elicitation=elicitor,
            # Without a command, sampling is not declared: a tool then knows not to ask (and
            # may fall back) in both eras, where a refusal would fail a 2026-07-28 call outright.
            sampling=CommandSampler(command) if command is not None else None,
            roots=roots_from_paths(roots) if roots else None,
            on_elicitation_complete=_print_completion,
        ),
        tasks=True,
        auth=auth,
    ) as client:
        name = client.server_info.get("name")
        elicitor.server_name = name if isinstance(name, str) and name else "the server"
        yield client


async def _login(url: str, args: argparse.Namespace) -> int:
    storage = token_storage(args)
    fresh = FreshSignIn(storage, url)
    async with _connect(url, args, fresh) as client:
        name = client.server_info.get("name") or "the server"
    tokens = await fresh.get_tokens(url)
    if tokens is None:
        print(f"trio-mcp login: {url} ({name}) asks no one to sign in", file=sys.stderr)
        return EXIT_OK
    print(
        f"trio-mcp login: signed in to {url} ({name}) {describe_sign_in(tokens)}; "
        f"tokens kept in {storage.path}",
        file=sys.stderr,
    )
    return EXIT_OK


async def _logout(args: argparse.Namespace) -> int:
    storage = token_storage(args)
    try:
        if args.all:
            if args.url is not None:
                raise UsageError("give a URL or --all, not both")
            removed = await storage.clear()
            said = f"removed {storage.path}" if removed else f"no token file at {storage.path}"
        elif args.url is None:
            raise UsageError("give the server's URL (or --all): trio-mcp logout URL")
        else:
            issuer = await find_issuer(args.url, storage) if args.forget_client else None
            if args.forget_client and issuer is None:
                raise UsageError(
                    f"cannot tell which authorization server {args.url} uses (no sign-in is "
                    "kept for it, and it serves no protected resource metadata)"
                )
            if await storage.get_tokens(args.url) is None:
                said = f"no sign-in was kept for {args.url}"
            else:
                await storage.set_tokens(args.url, None)
                said = f"signed out of {args.url}"
            if issuer is not None:
                said += "; " + await _forget_client(storage, issuer)
    except AuthorizationError as exc:
        print(f"trio-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"trio-mcp logout: {said}", file=sys.stderr)
    return EXIT_OK


async def _forget_client(storage: TokenStorage, issuer: str) -> str:
    if await storage.get_client(issuer) is None:
        return f"no client registration was kept for {issuer}"
    await storage.set_client(issuer, None)
    return f"forgot the client registration at {issuer}: the next sign-in registers again"


def _print_completion(elicitation_id: str) -> None:
    print(f"trio-mcp: the server says elicitation {elicitation_id} is complete", file=sys.stderr)


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
    return _columns(rows, "    ")


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
            result = await _call_tool(client, tool, arguments)
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


async def _call_tool(client: Client, tool: str, arguments: dict[str, Any]) -> ToolResult:
    # Ctrl-C while a task runs the call cancels the call, which cancels the task; the
    # interruption then goes on as it would have (exit 130).
    tasks: list[TaskInfo] = []

    def status(task: TaskInfo) -> None:
        tasks.append(task)
        _print_task(task)

    with trio.open_signal_receiver(signal.SIGINT) as signals, trio.CancelScope() as scope:

        async def watch() -> None:
            async for _ in signals:
                scope.cancel()
                return

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch)
                result = await client.call_tool(
                    tool, arguments, progress=_print_progress, on_task_status=status
                )
                nursery.cancel_scope.cancel()
                return result
        except BaseExceptionGroup as group:
            reraise_lone(group)
    if tasks:
        print(f"trio-mcp: cancelled task {tasks[-1].task_id}", file=sys.stderr, flush=True)
    raise KeyboardInterrupt


def _print_task(task: TaskInfo, out: TextIO | None = None) -> None:
    print(f"  {format_task(task)}", file=out or sys.stderr, flush=True)


def format_task(task: TaskInfo) -> str:
    """A task's state in one line: `task working: battle 2 of 5`."""
    words = f"task {task.status.replace('_', ' ')}"
    return f"{words}: {task.status_message}" if task.status_message else words


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
    return "\n".join(describe_block(block) for block in result.content)


def describe_block(block: ContentBlock | str | Mapping[str, Any]) -> str:
    """One content block for people: text as it is, other kinds summarised in brackets."""
    if isinstance(block, str):
        return block
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {len(block.data)} base64 characters]"
    if isinstance(block, EmbeddedResource):
        return block.text if block.text is not None else f"[resource {block.uri}]"
    if isinstance(block, ResourceLink):
        return f"[link {block.name}: {block.uri}]"
    return json.dumps(block)


def _render_value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


# -- resources, prompts, completion ---------------------------------------------------------------

#: Command -> the fewest and the most words after SERVER, what they are, and its usage line.
_PRIMITIVE_WORDS: Final[dict[str, tuple[int, int, str, str]]] = {
    "resources": (0, 0, "", "trio-mcp resources SERVER"),
    "read": (1, 1, "the URI to read", "trio-mcp read SERVER URI"),
    "prompts": (0, 0, "", "trio-mcp prompts SERVER"),
    "prompt": (
        1,
        sys.maxsize,
        "the prompt to get",
        "trio-mcp prompt SERVER NAME [NAME=VALUE ...]",
    ),
    "complete": (
        2,
        sys.maxsize,
        "the prompt or template and the argument to complete",
        "trio-mcp complete SERVER (PROMPT|TEMPLATE) ARGUMENT [VALUE] [NAME=VALUE ...]",
    ),
}


def _primitive_plan(
    args: argparse.Namespace, server_command: Sequence[str]
) -> tuple[Callable[..., Any], str | list[str], tuple[Any, ...]]:
    """The runner of a resource, prompt or completion command, its server, and its words."""
    words = list(args.words)
    server = None if server_command or not words else words.pop(0)
    fewest, most, wanted, usage = _PRIMITIVE_WORDS[args.command]
    if len(words) > most:
        raise UsageError(
            "give the server either before -- or as a command after it"
            if server_command
            else f"too many words: {usage}"
        )
    target = _target(server, server_command)
    if len(words) < fewest:
        raise UsageError(f"give {wanted}: {usage}")
    if args.command == "prompt":
        return _prompt, target, (words[0], split_pairs(words[1:]))
    if args.command == "complete":
        ref, argument, rest = words[0], words[1], words[2:]
        value = rest.pop(0) if rest and "=" not in rest[0] else ""
        return _complete, target, (_Completing(ref, argument, value, split_pairs(rest)),)
    runners: dict[str, Callable[..., Awaitable[int]]] = {
        "resources": _resources,
        "read": _read,
        "prompts": _prompts,
    }
    return runners[args.command], target, tuple(words)


_T = TypeVar("_T")


async def _listed(lister: Callable[[], Awaitable[list[_T]]]) -> list[_T]:
    """What a list method returns; none when the server does not have the method."""
    try:
        return await lister()
    except RequestError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
        return []


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _columns(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows as aligned columns; the last column is left ragged (it may be long)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append((indent + "  ".join([*cells, row[-1]])).rstrip())
    return lines


def _heading(server_info: Mapping[str, Any] | None, counts: Sequence[tuple[int, str]]) -> list[str]:
    if not server_info:
        return []
    name = server_info.get("name", "server")
    version = server_info.get("version")
    shown = ", ".join(f"{n} {noun}{'s' if n != 1 else ''}" for n, noun in counts)
    return [f"{name} {version or ''}".rstrip() + f": {shown}", ""]


async def _resources(target: str | list[str], args: argparse.Namespace) -> int:
    async with _connect(target, args) as client:
        resources = await _listed(client.list_resources)
        templates = await _listed(client.list_resource_templates)
    if args.json:
        print(
            _dumps(
                {
                    "resources": [r.raw for r in resources],
                    "resourceTemplates": [t.raw for t in templates],
                }
            )
        )
    else:
        print(format_resources(resources, templates, client.server_info))
    return EXIT_OK


def format_resources(
    resources: Sequence[ResourceInfo],
    templates: Sequence[ResourceTemplateInfo],
    server_info: Mapping[str, Any] | None = None,
) -> str:
    """The resources, then the templates, as plain-text tables."""
    lines = _heading(server_info, [(len(resources), "resource"), (len(templates), "template")])
    if resources:
        lines += _columns(
            [
                ("URI", "NAME", "MIME TYPE", "TITLE"),
                *((r.uri, r.name, r.mime_type or "", r.title or "") for r in resources),
            ]
        )
    if templates:
        lines += [""] if resources else []
        lines += _columns(
            [
                ("URI TEMPLATE", "NAME", "MIME TYPE", "TITLE"),
                *((t.uri_template, t.name, t.mime_type or "", t.title or "") for t in templates),
            ]
        )
    if not resources and not templates:
        lines.append("(no resources)")
    return "\n".join(lines)


async def _read(target: str | list[str], args: argparse.Namespace, uri: str) -> int:
    async with _connect(target, args) as client:
        try:
            result = await client.read_resource(uri)
        except RequestError:
            resources = await _listed(client.list_resources)
            templates = await _listed(client.list_resource_templates)
            listed = any(r.uri == uri for r in resources) or any(
                uri.startswith(_literal_prefix(t.uri_template)) for t in templates
            )
            if listed:
                raise  # the server's own reason (a variable that does not validate, ...)
            # Neither listed nor a template's: a mistyped URI.
            known = [r.uri for r in resources] + [t.uri_template for t in templates]
            raise UsageError(unknown_name("resource", uri, known)) from None
    if args.out is not None:
        data = b"".join(_content_bytes(part) for part in result.contents)
        try:
            with open(args.out, "wb") as out:  # noqa: ASYNC230 - after the connection, one write
                out.write(data)
        except OSError as exc:
            raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
        kinds = sorted({part.mime_type for part in result.contents if part.mime_type})
        typed = f" ({', '.join(kinds)})" if kinds else ""
        print(f"trio-mcp read: wrote {len(data)} bytes{typed} to {args.out}", file=sys.stderr)
    elif args.json:
        print(_dumps(result.raw))
    else:
        sys.stdout.write(render_contents(result.contents))
    return EXIT_OK


def _literal_prefix(template: str) -> str:
    """What every expansion of a URI template starts with: the text before its first `{`."""
    return template.split("{", 1)[0]


def _content_bytes(part: ResourceContents) -> bytes:
    if part.text is not None:
        return part.text.encode()
    return part.blob if isinstance(part.blob, bytes) else base64.b64decode(part.blob or "")


def render_contents(contents: Sequence[ResourceContents]) -> str:
    """Resource contents for people: text as it is, a blob as its size and type.

    Each part ends with a newline; when there are several, each is headed by its URI.
    """
    parts = []
    for part in contents:
        if part.text is not None:
            body = part.text if part.text.endswith("\n") else part.text + "\n"
        else:
            size = len(_content_bytes(part))
            kind = part.mime_type or "of unknown type"
            body = f"[blob {kind}, {size} bytes; --out FILE writes it]\n"
        head = f"==> {part.uri} <==\n" if len(contents) > 1 else ""
        parts.append(head + body)
    return "".join(parts)


async def _prompts(target: str | list[str], args: argparse.Namespace) -> int:
    async with _connect(target, args) as client:
        prompts = await _listed(client.list_prompts)
    if args.json:
        print(_dumps([p.raw for p in prompts]))
    else:
        print(format_prompts(prompts, client.server_info))
    return EXIT_OK


def format_prompts(
    prompts: Sequence[PromptInfo], server_info: Mapping[str, Any] | None = None
) -> str:
    """The prompts and their arguments as a plain-text table."""
    lines = _heading(server_info, [(len(prompts), "prompt")])
    for prompt in prompts:
        about = prompt.description or prompt.title
        summary = " ".join(about.split("\n\n")[0].split()) if about else ""
        lines.append(prompt.name + (f"  {summary}" if summary else ""))
        if prompt.arguments:
            rows = [("ARGUMENT", "REQUIRED", "DESCRIPTION")]
            rows += [
                (a.name, "yes" if a.required else "no", a.description or a.title or "")
                for a in prompt.arguments
            ]
            lines += _columns(rows, "    ")
        else:
            lines.append("    (no arguments)")
        lines.append("")
    if not prompts:
        lines.append("(no prompts)")
    return "\n".join(lines).rstrip()


async def _prompt(
    target: str | list[str], args: argparse.Namespace, name: str, pairs: list[tuple[str, str]]
) -> int:
    async with _connect(target, args) as client:
        prompts = await _listed(client.list_prompts)
        listed = next((p for p in prompts if p.name == name), None)
        if listed is not None:
            _check_names([n for n, _ in pairs], [a.name for a in listed.arguments])
        try:
            result = await client.get_prompt(name, dict(pairs))
        except RequestError:
            if listed is not None:
                raise
            raise UsageError(unknown_name("prompt", name, [p.name for p in prompts])) from None
    print(_dumps(result.raw) if args.json else render_messages(result))
    return EXIT_OK


def _check_names(given: Iterable[str], known: Sequence[str]) -> None:
    for name in given:
        if name not in known:
            raise UsageError(unknown_name("argument", name, known))


def render_messages(result: PromptResult) -> str:
    """A prompt's messages for people: `role: text` each, other content summarised."""
    return "\n".join(
        f"{message.role}: {describe_block(message.content)}" for message in result.messages
    )


#: A URI template's expressions (RFC 6570): an operator, then variables separated by commas.
_TEMPLATE_EXPRESSION: Final = re.compile(r"\{[+#./;?&=,!@|]?([^}]*)\}")


def template_variables(template: str) -> list[str]:
    """The variables of an RFC 6570 URI template, in order (`{+path}`, `{?q,limit}` ...)."""
    names = []
    for expression in _TEMPLATE_EXPRESSION.findall(template):
        for spec in expression.split(","):
            name = spec.split(":", 1)[0].rstrip("*")
            if name and name not in names:
                names.append(name)
    return names


@dataclass(frozen=True, slots=True)
class _Completing:
    """What `trio-mcp complete` asks: an argument of `ref`, typed so far, among `context`."""

    ref: str
    argument: str
    value: str
    context: list[tuple[str, str]]


async def _complete(target: str | list[str], args: argparse.Namespace, ask: _Completing) -> int:
    ref, argument, value, pairs = ask.ref, ask.argument, ask.value, ask.context
    async with _connect(target, args) as client:
        prompts = await _listed(client.list_prompts)
        templates = await _listed(client.list_resource_templates)
        # A URI has a scheme and a colon; a prompt name has no colon (nor any in the demo).
        is_uri = ":" in ref
        listed: PromptInfo | ResourceTemplateInfo | None
        if is_uri:
            listed = next((t for t in templates if t.uri_template == ref), None)
            wire: dict[str, Any] = {"type": "ref/resource", "uri": ref}
        else:
            listed = next((p for p in prompts if p.name == ref), None)
            wire = {"type": "ref/prompt", "name": ref}
        if isinstance(listed, PromptInfo):
            _check_names([argument, *(n for n, _ in pairs)], [a.name for a in listed.arguments])
        elif listed is not None:
            _check_names([argument, *(n for n, _ in pairs)], template_variables(ref))
        try:
            completion = await client.complete(
                listed or wire, argument, value, context_arguments=dict(pairs)
            )
        except RequestError:
            if listed is not None:
                raise
            kind, known = (
                ("resource template", [t.uri_template for t in templates])
                if is_uri
                else ("prompt", [p.name for p in prompts])
            )
            raise UsageError(unknown_name(kind, ref, known)) from None
    if args.json:
        shown: dict[str, Any] = {"values": list(completion.values)}
        if completion.total is not None:
            shown["total"] = completion.total
        shown["hasMore"] = completion.has_more
        print(_dumps(shown))
        return EXIT_OK
    for option in completion.values:
        print(option)
    left = (completion.total or 0) - len(completion.values)
    if completion.has_more or left > 0:
        more = f"{left} more" if left > 0 else "more"
        print(f"trio-mcp complete: {more} values; type more of the value", file=sys.stderr)
    return EXIT_OK


_PRIMITIVE_COMMANDS: Final = frozenset(_PRIMITIVE_WORDS)


# -- demo -----------------------------------------------------------------------------------------


async def _demo(http: bool) -> int:
    # The demo package holds its own tour (nothing here names a demo tool or resource); it
    # ships in the same wheel as trio_mcp.
    from demo_tools.tour import canned_answers, run_tour  # noqa: PLC0415 - only the demo needs it

    try:
        if http:
            async with _demo_http_server() as url:
                print(f"Demo server: {url} (Streamable HTTP)")
                async with open_client(url, tasks=True, **canned_answers()) as client:
                    return await run_tour(client, walkthrough)
        command = [sys.executable, "-m", "demo_tools"]
        print("Demo server: python -m demo_tools (stdio, a subprocess)")
        async with open_client(command, tasks=True, **canned_answers()) as client:
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
    shown_states: list[str] = []  # this call's task states, as printed

    def task_status(task: TaskInfo) -> None:
        # A state is told once however often it is seen (pushed, then polled).
        line = format_task(task)
        if not shown_states or shown_states[-1] != line:
            shown_states.append(line)
            print(f"     {line}", file=out, flush=True)

    for number, (tool, arguments) in enumerate(calls, start=1):
        shown = ", ".join(f"{key}={json.dumps(value)}" for key, value in arguments.items())
        print(f"{number}. {tool}({shown})", file=out, flush=True)

        def progress(update: Progress) -> None:
            print(f"     progress {format_progress(update)}", file=out, flush=True)

        shown_states.clear()

        started = trio.current_time()
        try:
            result = await client.call_tool(
                tool, arguments, progress=progress, on_task_status=task_status
            )
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
