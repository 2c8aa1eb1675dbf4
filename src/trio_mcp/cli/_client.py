"""The client commands of `trio-mcp`: each connects to a server, asks, and prints the answer.

`tools`, `call`, `resources`, `read`, `prompts`, `prompt`, `complete` and `skills` ask a server
what their names say; `login` and `logout` keep and forget its tokens; `demo` tours the demo server.

SERVER is a module path or a `.py` file (served by `python -m trio_mcp run SERVER` in a
subprocess), an http(s) URL (a path ending in /sse means the legacy HTTP+SSE transport), or,
after `--`, any command that runs a stdio server: `trio-mcp tools -- python -m demo_tools`
(then the words before `--` are only the tool and its arguments).

A name the server does not list is still sent (a server may serve what it does not list); only
when the server refuses it is it called unknown, with the close names (`_arguments`), as a
usage error. A server that refuses a listed name (a template variable that does not validate,
a missing prompt argument) has its message shown, also as a usage error.

A server at a URL that asks for OAuth (a 401 with the MCP challenge) is signed in to as
`_login` says: tokens kept in a private token file and refreshed, the browser opened to sign
in when there are none (or `--client-credentials` for a machine); an explicit
`--header "Authorization: ..."` turns OAuth off.

What a server asks while `call`, `read` or `prompt` runs is answered by `_answers`: an
elicitation is put to the user on a terminal (declined without one), sampling is declared (and
answered) only with `--sampling-command CMD`, and `--root PATH` declares the roots.

The client does tasks in every revision that has them (the extension under 2026-07-28,
2025-11-25's own utility there, asking for a task by itself for a tool that requires one): a
server may run a long call as a task. `call` then
shows the task's status on stderr each time it changes (`  task working: battle 2 of 5`) and
prints the final result as for any call; Ctrl-C cancels the task (`tasks/cancel`) before the
command ends with 130.

Exit codes: 0 success, 1 the tool reported an error, 2 a usage or connection error, a sign-in
that failed, or a request the server refused.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

import trio

from .._connect import open_client
from .._core.client_records import PromptInfo, ResourceTemplateInfo, TaskInfo, ToolResult
from .._core.jsonrpc import METHOD_NOT_FOUND
from .._exceptions import AuthorizationError, RequestError, TrioMCPError
from .._runtime.client import Client
from .._runtime.options import Asking
from ..oauth.rules import OAuth, TokenStorage
from ._answers import CommandSampler, TerminalElicitor, roots_from_paths
from ._arguments import check_names, parse_arguments, split_pairs, template_variables, unknown_name
from ._demo import demo
from ._interrupts import Interrupted, interruptible
from ._login import FreshSignIn, cli_oauth, describe_sign_in, find_issuer, token_storage
from ._output import (
    content_bytes,
    dumps,
    format_prompts,
    format_resources,
    format_skills,
    format_tool,
    format_tools,
    print_completion,
    print_log,
    print_progress,
    print_task,
    render_contents,
    render_messages,
    render_result,
)
from ._parse import EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, UsageError

__all__ = ["run_client_command"]


def run_client_command(args: argparse.Namespace, server_command: Sequence[str]) -> int:
    """Run a parsed client command; returns the exit code."""
    # Failures reach the user once, as the command's own message: the library's warnings
    # (retries, failed calls) would only repeat them.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr, format="trio-mcp: %(message)s")
    try:
        if args.command == "demo":
            _no_command("demo", server_command)
            return trio.run(demo, args.http)
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


# -- what the words say ---------------------------------------------------------------------------


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


#: Command -> the fewest and the most words after SERVER, what they are, and its usage line.
_PRIMITIVE_WORDS: Final[dict[str, tuple[int, int, str, str]]] = {
    "resources": (0, 0, "", "trio-mcp resources SERVER"),
    "read": (1, 1, "the URI to read", "trio-mcp read SERVER URI"),
    "prompts": (0, 0, "", "trio-mcp prompts SERVER"),
    "skills": (0, 0, "", "trio-mcp skills SERVER"),
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
_PRIMITIVE_COMMANDS: Final = frozenset(_PRIMITIVE_WORDS)


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
        "skills": _skills,
    }
    return runners[args.command], target, tuple(words)


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


# -- connecting -----------------------------------------------------------------------------------


async def _with_timeout(limit: float | None, fn: Callable[..., Any], *args: Any) -> int:
    try:
        with trio.fail_after(math.inf if limit is None else limit):
            result: int = await fn(*args)
            return result
    except trio.TooSlowError:
        print(f"trio-mcp: gave up after {limit} s", file=sys.stderr)
        return EXIT_USAGE
    except (TrioMCPError, ValueError) as exc:
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
        log_handler=print_log,
        client_info={"name": "trio-mcp-cli", "version": "1"},
        asking=Asking(
            elicitation=elicitor,
            # Without a command, sampling is not declared: a tool then knows not to ask (and
            # may fall back) in both eras, where a refusal would fail a 2026-07-28 call outright.
            sampling=CommandSampler(command) if command is not None else None,
            roots=roots_from_paths(roots) if roots else None,
            on_elicitation_complete=print_completion,
        ),
        tasks=True,
        auth=auth,
    ) as client:
        name = client.server_info.get("name")
        elicitor.server_name = name if isinstance(name, str) and name else "the server"
        yield client


_T = TypeVar("_T")


async def _listed(lister: Callable[[], Awaitable[list[_T]]]) -> list[_T]:
    """What a list method returns; none when the server does not have the method."""
    try:
        return await lister()
    except RequestError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
        return []


# -- the commands ---------------------------------------------------------------------------------


async def _tools(target: str | list[str], args: argparse.Namespace, name: str | None) -> int:
    async with _connect(target, args) as client:
        tools = await client.list_tools()
    if name is None:
        if args.json:
            print(dumps([tool.raw for tool in tools]))
        else:
            print(format_tools(tools, client.server_info))
        return EXIT_OK
    found = next((tool for tool in tools if tool.name == name), None)
    if found is None:
        raise UsageError(unknown_name("tool", name, [tool.name for tool in tools]))
    print(dumps(found.raw) if args.json else format_tool(found))
    return EXIT_OK


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
        print(dumps(result.raw))
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
        print_task(task)

    def call() -> Awaitable[ToolResult]:
        return client.call_tool(tool, arguments, progress=print_progress, on_task_status=status)

    try:
        return await interruptible(call)
    except Interrupted:
        if tasks:
            print(f"trio-mcp: cancelled task {tasks[-1].task_id}", file=sys.stderr, flush=True)
        raise KeyboardInterrupt from None


async def _resources(target: str | list[str], args: argparse.Namespace) -> int:
    async with _connect(target, args) as client:
        resources = await _listed(client.list_resources)
        templates = await _listed(client.list_resource_templates)
    if args.json:
        print(
            dumps(
                {
                    "resources": [r.raw for r in resources],
                    "resourceTemplates": [t.raw for t in templates],
                }
            )
        )
    else:
        print(format_resources(resources, templates, client.server_info))
    return EXIT_OK


async def _skills(target: str | list[str], args: argparse.Namespace) -> int:
    # The entries only (SEP-2640: nothing of a skill is fetched before it is used); a server
    # without the skills extension lists none.
    async with _connect(target, args) as client:
        skills = await client.list_skills()
    if args.json:
        print(dumps({"skills": [skill.raw for skill in skills]}))
    else:
        print(format_skills(skills, client.server_info))
    return EXIT_OK


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
        data = b"".join(content_bytes(part) for part in result.contents)
        try:
            with open(args.out, "wb") as out:  # noqa: ASYNC230 - after the connection, one write
                out.write(data)
        except OSError as exc:
            raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
        kinds = sorted({part.mime_type for part in result.contents if part.mime_type})
        typed = f" ({', '.join(kinds)})" if kinds else ""
        print(f"trio-mcp read: wrote {len(data)} bytes{typed} to {args.out}", file=sys.stderr)
    elif args.json:
        print(dumps(result.raw))
    else:
        sys.stdout.write(render_contents(result.contents))
    return EXIT_OK


def _literal_prefix(template: str) -> str:
    """What every expansion of a URI template starts with: the text before its first `{`."""
    return template.split("{", 1)[0]


async def _prompts(target: str | list[str], args: argparse.Namespace) -> int:
    async with _connect(target, args) as client:
        prompts = await _listed(client.list_prompts)
    if args.json:
        print(dumps([p.raw for p in prompts]))
    else:
        print(format_prompts(prompts, client.server_info))
    return EXIT_OK


async def _prompt(
    target: str | list[str], args: argparse.Namespace, name: str, pairs: list[tuple[str, str]]
) -> int:
    async with _connect(target, args) as client:
        prompts = await _listed(client.list_prompts)
        listed = next((p for p in prompts if p.name == name), None)
        if listed is not None:
            check_names([n for n, _ in pairs], [a.name for a in listed.arguments])
        try:
            result = await client.get_prompt(name, dict(pairs))
        except RequestError:
            if listed is not None:
                raise
            raise UsageError(unknown_name("prompt", name, [p.name for p in prompts])) from None
    print(dumps(result.raw) if args.json else render_messages(result))
    return EXIT_OK


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
            check_names([argument, *(n for n, _ in pairs)], [a.name for a in listed.arguments])
        elif listed is not None:
            check_names([argument, *(n for n, _ in pairs)], template_variables(ref))
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
        print(dumps(shown))
        return EXIT_OK
    for option in completion.values:
        print(option)
    left = (completion.total or 0) - len(completion.values)
    if completion.has_more or left > 0:
        more = f"{left} more" if left > 0 else "more"
        print(f"trio-mcp complete: {more} values; type more of the value", file=sys.stderr)
    return EXIT_OK


# -- signing in and out ---------------------------------------------------------------------------


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
