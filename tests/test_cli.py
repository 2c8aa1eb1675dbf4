"""The client commands of `trio-mcp` (`tools`, `call`, `demo`), run as real subprocesses.

Plus the pure helpers behind them (argument parsing, the tools table, result rendering),
tested directly.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

import demo_tools
from trio_mcp import Progress, TextContent, ToolInfo, ToolResult
from trio_mcp._client_cli import (
    UsageError,
    format_progress,
    format_tools,
    parse_arguments,
    render_result,
    split_server_command,
)
from trio_mcp._run import serve_http

ROOT = Path(__file__).resolve().parent.parent
ECHO_TOOLS = str(ROOT / "tests" / "fixtures" / "echo_tools.py")
TIMEOUT = 30


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m trio_mcp ARGS...` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "trio_mcp", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=ROOT,
    )


async def cli_async(*args: str) -> subprocess.CompletedProcess[bytes]:
    """`cli` for tests that serve something in their own event loop meanwhile."""
    with trio.fail_after(TIMEOUT):
        return await trio.run_process(
            [sys.executable, "-m", "trio_mcp", *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=ROOT,
        )


# -- subprocess -----------------------------------------------------------------------------------


def test_tools_prints_a_table_of_tools_and_parameters() -> None:
    done = cli("tools", "demo_tools")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("trio-mcp-demo ")
    assert ": 8 tools" in out.splitlines()[0]
    assert "calculator.add  Add two numbers" in out
    assert "PARAMETER   TYPE            REQUIRED  DEFAULT  DESCRIPTION" in out
    assert "dice_count  integer 1..100  yes                Number of dice to roll" in out
    assert 'flavor      hit|wound|save  no        "hit"    What the roll is for' in out
    assert "returns: number" in out


def test_call_prints_the_result() -> None:
    done = cli("call", "demo_tools", "calculator.add", "a=5", "b=3")
    assert (done.returncode, done.stdout, done.stderr) == (0, "8\n", "")


def test_call_with_json_arguments_and_an_object_result() -> None:
    done = cli(
        "call", "demo_tools", "wh40k.roll_dice", "flavor=save", "--json", '{"dice_count": 2}'
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["rolls", "total", "successes", "flavor_text"]
    assert "on 3+" in lines[-1]


def test_call_a_command_after_double_dash_with_raw_output() -> None:
    done = cli(
        "call", "--raw", "calculator.multiply", "a=6", "b=7", "--", sys.executable, "-m",
        "demo_tools",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"structuredContent": {\n    "result": 42.0\n  }' in done.stdout


def test_call_shows_progress_and_server_logs_on_stderr() -> None:
    done = cli("call", ECHO_TOOLS, "chatty", "text=hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n"
    assert "[server echo_tools warning] warning: hello" in done.stderr
    assert "[1/2] half way" in done.stderr


def test_a_tool_error_exits_1() -> None:
    done = cli("call", "demo_tools", "calculator.divide", "a=1", "b=0")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == "error: Cannot divide by zero\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("call", "no_such_module_x", "t"), "No module named 'no_such_module_x'"),
        (("call", "demo_tools", "no.such.tool"), "Unknown tool: no.such.tool"),
        (("call", "demo_tools", "calculator.add", "a"), "'a' is not NAME=VALUE"),
        (("call", "demo_tools"), "give the tool to call"),
        (("call",), "give the server and the tool"),
        (("tools",), "give a server"),
        (("tools", "demo_tools", "--", "python"), "either before -- or"),
        (("demo", "--", "python"), "demo takes no command after --"),
        (("run", "demo_tools", "--", "x"), "run takes no command after --"),
        (("call", "demo_tools", "t", "--json", "[1]"), "--json must be a JSON object"),
        (("tools", "--header", "nocolon", "demo_tools"), "is not NAME:VALUE"),
        (("frobnicate",), "invalid choice"),
        (
            ("run", "demo_tools", "--transport", "http", "--host", "0.0.0.0", "--port", "0"),
            "HttpOptions.allowed_hosts (trio-mcp run --allow-host NAME)",
        ),
    ],
)
def test_usage_and_connection_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    done = cli(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr


async def test_tools_and_call_over_http_and_legacy_sse() -> None:
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            functools.partial(
                serve_http, demo_tools.build_server(), port=0, shutdown_trigger=stop.wait
            )
        )
        base = binds[0]
        listed = await cli_async("tools", base + "/mcp")
        assert listed.returncode == 0, listed.stderr
        assert b"calculator.power  Raise a number to a power" in listed.stdout
        called = await cli_async("call", base + "/sse", "calculator.power", "base=2", "exponent=8")
        assert (called.returncode, called.stdout) == (0, b"256\n"), called.stderr
        stop.set()


async def test_run_over_http_accepts_the_allowed_hosts() -> None:
    command = [sys.executable, "-m", "trio_mcp", "run", "demo_tools", "--transport", "http"]
    process = await trio.lowlevel.open_process(
        [*command, "--port", "0", "--allow-host", "mcp.example"], stderr=subprocess.PIPE, cwd=ROOT
    )
    assert process.stderr is not None
    try:
        with trio.fail_after(TIMEOUT):
            printed = b""
            while b"/mcp\n" not in printed:
                printed += await process.stderr.receive_some()
            url = printed.decode().split("serving MCP on ")[1].split()[0]
            message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            headers = {
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2025-11-25",
            }
            async with httpx.AsyncClient() as http:
                named = await http.post(
                    url, json=message, headers={**headers, "host": "mcp.example"}
                )
                other = await http.post(url, json=message, headers={**headers, "host": "x.example"})
    finally:
        process.terminate()
        await process.wait()
    assert named.status_code == 400  # past the Host check: no session yet
    assert other.status_code == 421


async def test_unreachable_url_exits_2() -> None:
    # Port 9 (discard) has no listener here; the retries are bounded (about 4 s at worst).
    done = await cli_async("call", "http://127.0.0.1:9/mcp", "x", "--timeout", "20")
    assert done.returncode == 2
    assert b"cannot reach http://127.0.0.1:9/mcp" in done.stderr


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
def test_demo_walks_through_every_tool(http: bool) -> None:
    done = cli("demo", *(["--http"] if http else []))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    calls = [
        "1. calculator.add(a=5, b=3)",
        "2. calculator.subtract(a=10, b=4)",
        "3. calculator.multiply(a=6, b=7)",
        "4. calculator.divide(a=20, b=4)",
        "5. calculator.divide(a=10, b=0)",
        "6. calculator.power(base=2, exponent=8)",
        "7. wh40k.inquisitor_name()",
        '8. wh40k.roll_dice(dice_count=3, dice_sides=6, flavor="hit")',
        '9. wh40k.battle_simulation(imperial_force="Space Marines", enemy_force="Orks")',
    ]
    positions = [out.index(call) for call in calls]
    assert positions == sorted(positions)
    for value in ("= 8  (", "= 6  (", "= 42  (", "= 5  (", "= 256  ("):
        assert value in out
    assert "ERROR (the tool said): Cannot divide by zero" in out
    assert out.count("progress [") == 3
    assert "progress [1/3] Deployment on " in out
    assert "imperial_force:      Space Marines" in out
    assert " ms)" in out
    assert out.rstrip().endswith("Done.")
    assert ("Streamable HTTP" in out) == http


# -- helpers --------------------------------------------------------------------------------------


def test_split_server_command() -> None:
    assert split_server_command(["tools", "--", "python", "-m", "x", "--", "y"]) == (
        ["tools"],
        ["python", "-m", "x", "--", "y"],
    )
    assert split_server_command(["tools", "demo_tools"]) == (["tools", "demo_tools"], [])


def test_parse_arguments() -> None:
    assert parse_arguments(["a=5", "b=x y", "c=[1, 2]", "d=true", "e=", "f=a=b"], None) == {
        "a": 5,
        "b": "x y",
        "c": [1, 2],
        "d": True,
        "e": "",
        "f": "a=b",
    }
    assert parse_arguments(["a=2"], '{"a": 1, "b": 2}') == {"a": 2, "b": 2}
    with pytest.raises(UsageError, match="not valid JSON"):
        parse_arguments([], "{")
    with pytest.raises(UsageError, match="is not NAME=VALUE"):
        parse_arguments(["=5"], None)


def test_format_tools_without_parameters_and_with_odd_schemas() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"const": "fast"},
            "size": {"type": ["integer", "null"], "exclusiveMinimum": 0},
            "blob": {},
        },
    }
    tools = [
        ToolInfo("bare", None, {"type": "object"}),
        ToolInfo("odd", "Odd types", schema, {"type": "object", "properties": {"ok": {}}}),
    ]
    text = format_tools(tools)
    assert "bare\n    (no parameters)" in text
    for name, kind in (
        ("when", "string|null"),
        ("tags", "array[string]"),
        ("mode", "'fast'"),
        ("size", "integer|null 0.."),
        ("blob", "any"),
    ):
        assert re.search(rf"\n    {name} +{re.escape(kind)} +no\n", text), (name, text)
    assert "    returns: ok: any" in text


def test_render_result_and_progress() -> None:
    plain = ToolResult((TextContent("a"), {"type": "future"}))
    assert render_result(plain) == 'a\n{"type": "future"}'
    assert render_result(ToolResult((), {"result": 2.5})) == "2.5"
    assert render_result(ToolResult((), {"result": [1, "x"]})) == '[1, "x"]'
    assert format_progress(Progress(1.5)) == "[1.5]"
    assert format_progress(Progress(2, 4, "half")) == "[2/4] half"
