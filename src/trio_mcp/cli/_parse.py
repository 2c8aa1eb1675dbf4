"""The grammar of the `trio-mcp` command line: every command, every option, and `--`.

`parse_command_line` reads a command's options wherever they stand among its words, up to
`--`, after which comes the server's command as it is. What the words themselves mean (SERVER,
TOOL, NAME=VALUE ...) is the command's own business (`_serve`, `_client`); a command line that
cannot be run is a `UsageError` there, which ends the command with `EXIT_USAGE`.
"""

from __future__ import annotations

import argparse
import os
import platform
from collections.abc import Sequence
from typing import Final

from .._version import __version__

__all__ = [
    "DEFAULT_LOGIN_TIMEOUT",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "UsageError",
    "parse_command_line",
    "split_server_command",
]

#: Exit codes: success; the tool reported an error; a usage or connection error, a sign-in that
#: failed, or a request the server refused.
EXIT_OK: Final = 0
EXIT_TOOL_ERROR: Final = 1
EXIT_USAGE: Final = 2
#: Seconds the command line waits for the user to sign in in the browser.
DEFAULT_LOGIN_TIMEOUT: Final = 300.0


class UsageError(Exception):
    """A command line that cannot be run; the message says why."""


def split_server_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split `argv` at the first `--`: (our arguments, the server command after it)."""
    args = list(argv)
    if "--" in args:
        at = args.index("--")
        return args[:at], args[at + 1 :]
    return args, []


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
    _add_run_command(commands)
    _add_client_commands(commands)
    return parser, dict(commands.choices)


def _add_run_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `run`, the server command, to the `trio-mcp` parser."""
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
    # `run`'s own usage errors show `run`'s usage line, not the top-level one.
    run_cmd.set_defaults(command_parser=run_cmd)


def _add_client_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the client commands (`tools` ... `demo`, then `login` and `logout`) to the parser."""
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
    _add_login_commands(commands)


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
    _add_login_options(parser)


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

    skills = commands.add_parser(
        "skills",
        help="list a server's skills (the skills extension)",
        description="List the skills a server serves (SEP-2640): each one's name, files, size, "
        "URI and description, from its entry alone (nothing of a skill is fetched). A server "
        "without the skills extension lists none. " + _SERVER_FORMS,
    )
    skills.add_argument("words", nargs="*", metavar="SERVER", help=server_help)
    skills.add_argument(
        "--json", action="store_true", help='print {"skills": [...]} as the server lists them'
    )
    _add_common(skills)


def _add_login_options(parser: argparse.ArgumentParser) -> None:
    """The options of signing in, for a command that takes an http(s) URL."""
    group = parser.add_argument_group(
        "signing in (HTTP servers that ask for OAuth)",
        "Tokens are kept in the token file and refreshed as needed; without them the browser "
        "opens to sign in. An explicit --header 'Authorization: ...' turns this off.",
    )
    group.add_argument(
        "--token-file",
        metavar="FILE",
        help="where tokens are kept (default: $TRIO_MCP_TOKEN_FILE, else "
        "$XDG_CONFIG_HOME/trio-mcp/tokens.json, i.e. ~/.config/trio-mcp/tokens.json)",
    )
    group.add_argument(
        "--client-id",
        metavar="ID",
        help="a client pre-registered at the authorization server (default: register one)",
    )
    group.add_argument(
        "--client-secret",
        metavar="SECRET",
        default=os.environ.get("TRIO_MCP_CLIENT_SECRET") or None,
        help="its secret (better: set TRIO_MCP_CLIENT_SECRET, which `ps` does not show)",
    )
    group.add_argument(
        "--scope", metavar="SCOPES", help="the scopes to ask for, space-separated (default: "
        "those the server names)",
    )  # fmt: skip
    group.add_argument(
        "--client-credentials",
        action="store_true",
        help="sign in as a machine client (needs --client-id and a secret): no browser",
    )
    group.add_argument(
        "--no-browser",
        action="store_true",
        help="do not open a browser: print the sign-in URL for you to open",
    )
    group.add_argument(
        "--login-timeout",
        type=float,
        default=DEFAULT_LOGIN_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for the sign-in in the browser (default {DEFAULT_LOGIN_TIMEOUT:g})",
    )


def _add_login_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `login` and `logout` to the `trio-mcp` parser."""
    login = commands.add_parser(
        "login",
        help="sign in to an HTTP server that asks for OAuth, and keep the tokens",
        description="Sign in to the MCP server at URL now (in the browser, or with "
        "--client-credentials), keep the tokens in the token file, and say as whom and with "
        "which scopes. A sign-in kept from before is replaced once the new one succeeds.",
    )
    login.add_argument("url", metavar="URL", help="the server's http(s) URL")
    login.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS", help="give up after this long"
    )
    login.add_argument("--header", action="append", default=[], help=argparse.SUPPRESS)
    _add_login_options(login)
    logout = commands.add_parser(
        "logout",
        help="forget the tokens kept for a server",
        description="Forget the tokens kept for the server at URL (or, with --all, the whole "
        "token file: every server's tokens and the client registrations).",
    )
    logout.add_argument("url", nargs="?", metavar="URL", help="the server's http(s) URL")
    logout.add_argument("--all", action="store_true", help="forget every server's tokens")
    logout.add_argument(
        "--forget-client",
        action="store_true",
        help="forget the client registration at the server's authorization server too (one "
        "it no longer knows, say): the next sign-in registers again",
    )
    logout.add_argument("--token-file", metavar="FILE", help="where tokens are kept")
