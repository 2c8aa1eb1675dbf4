"""The client commands of `trio-mcp` (`tools`, `call`, `resources`, `read`, `prompts`,
`prompt`, `complete`, `demo`), run as real subprocesses.

Plus the pure helpers behind them (argument parsing, the tables, result rendering), tested
directly.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import pty
import re
import shlex
import signal
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

import demo_tools
import demo_tools.tour
import trio_mcp
from tests.helpers import DEMO_TOOLS
from tests.http_helpers import serve
from tests.processes import ROOT, TIMEOUT, cli, cli_async, serving
from trio_mcp import (
    Progress,
    PromptMessage,
    PromptResult,
    ResourceContents,
    ResourceTemplateInfo,
    Server,
    TextContent,
    ToolInfo,
    ToolResult,
)
from trio_mcp.cli._arguments import (
    convert_value,
    parse_arguments,
    suggest_names,
    template_variables,
    unknown_name,
)
from trio_mcp.cli._output import (
    describe_block,
    format_progress,
    format_prompts,
    format_resources,
    format_tool,
    format_tools,
    render_contents,
    render_messages,
    render_result,
)
from trio_mcp.cli._parse import UsageError, parse_command_line, split_server_command
from trio_mcp.cli._serve import _http_options, unregistered_tools

ECHO_TOOLS = str(ROOT / "tests" / "fixtures" / "echo_tools.py")
#: A file of @tool functions and no `server`: `trio-mcp run` makes the server.
CLIENT_TOOLS = str(ROOT / "tests" / "fixtures" / "client_tools.py")
#: A `server` that registers none of the module's @tool functions.
FORGOTTEN_TOOLS = str(ROOT / "tests" / "fixtures" / "forgotten_tools.py")
#: Resources (a PNG blob among them), templates with completions, and prompts of every content kind.
PRIMITIVES = str(ROOT / "tests" / "fixtures" / "primitives_server.py")
#: Tools that run as tasks (polled every 50 ms).
TASK_TOOLS = str(ROOT / "tests" / "fixtures" / "task_tools.py")


# -- subprocess -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_tools_prints_a_table_of_tools_and_parameters() -> None:
    done = cli("tools", "demo_tools")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("trio-mcp-demo ")
    assert f": {len(DEMO_TOOLS)} tools" in out.splitlines()[0]
    assert "calculator.add  Add two numbers" in out
    assert "PARAMETER   TYPE            REQUIRED  DEFAULT  DESCRIPTION" in out
    assert "dice_count  integer 1..100  yes                Number of dice to roll" in out
    assert 'flavor      hit|wound|save  no        "hit"    What the roll is for' in out
    assert "returns: number" in out


@pytest.mark.slow
def test_a_file_without_a_server_is_served_under_its_stem() -> None:
    done = cli("tools", CLIENT_TOOLS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("client_tools ")  # not "py", the file's suffix


@pytest.mark.slow
def test_run_warns_when_the_server_registers_none_of_the_modules_tools() -> None:
    # No client: stdin is empty, so the server ends at once, after the warning.
    done = cli("run", FORGOTTEN_TOOLS, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(
        "trio-mcp: warning: server in " + FORGOTTEN_TOOLS + " registers none of the @tool "
        "functions defined there (shout, whisper), so it serves 0 tools. @tool only tags a "
        "function: register them with server.add_tools(sys.modules[__name__])"
    )
    assert done.stderr.count("\n") == 1


@pytest.mark.slow
def test_run_says_nothing_when_the_server_registers_the_modules_tools() -> None:
    # Nor that it waits for a client: stdin is not a terminal, a client is on the other end.
    done = cli("run", ECHO_TOOLS, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_unregistered_tools_counts_only_the_modules_own_functions() -> None:
    module = types.ModuleType("made")
    exec(
        "from trio_mcp import tool\n"
        "from demo_tools.calculator import add\n"  # tagged, but imported: not the module's own
        "@tool\ndef one() -> int: return 1\n"
        "@tool\ndef two() -> int: return 2\n"
        "def untagged() -> int: return 0\n",
        module.__dict__,
    )
    server = Server("s")
    assert unregistered_tools(module, server) == ["one", "two"]
    server.add_tool(module.untagged)
    server.add_tool(module.add)
    assert unregistered_tools(module, server) == ["one", "two"]

    @functools.wraps(module.two)
    def wrapper() -> int:
        return int(module.two())

    server.add_tool(wrapper, name="through_a_wrapper")  # serves `two` through a wrapper
    assert unregistered_tools(module, server) == []
    chosen = Server("chosen")
    chosen.add_tool(module.one)  # some registered: a choice, not a mistake
    assert unregistered_tools(module, chosen) == []


@pytest.mark.slow
def test_tools_shows_what_a_tool_without_parameters_returns() -> None:
    done = cli("tools", CLIENT_TOOLS)
    assert done.returncode == 0, done.stderr
    assert "\npid  Return the server's process id\n    (no parameters)\n    returns: integer\n" in (
        done.stdout
    )


@pytest.mark.slow
def test_version() -> None:
    done = cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"trio-mcp {trio_mcp.__version__} (Python {platform.python_version()})\n"


@pytest.mark.slow
def test_tools_shows_one_tool_in_full_with_its_schemas() -> None:
    done = cli("tools", "demo_tools", "calculator.divide")
    assert done.returncode == 0, done.stderr
    head, table, inputs, outputs = done.stdout.split("\n\n")
    assert head == "calculator.divide\n    Divide one number by another"
    assert table.startswith("    PARAMETER")
    assert table.endswith("\n    returns: number")
    assert inputs.startswith("input schema:\n{")
    assert json.loads(inputs.split("\n", 1)[1])["required"] == ["a", "b"]
    assert outputs.startswith("output schema:\n{")
    assert json.loads(outputs.split("\n", 1)[1])["properties"] == {"result": {"type": "number"}}


@pytest.mark.slow
def test_tools_as_json_and_one_tool_as_json() -> None:
    listed = cli("tools", "demo_tools", "--json")
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout)
    assert [tool["name"] for tool in tools][:2] == ["calculator.add", "calculator.subtract"]
    assert len(tools) == len(DEMO_TOOLS)
    assert all("inputSchema" in tool for tool in tools)
    one = cli("tools", "--json", "calculator.power", "--", sys.executable, "-m", "demo_tools")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout) == next(t for t in tools if t["name"] == "calculator.power")


@pytest.mark.slow
def test_a_closed_stdout_ends_the_command_quietly_with_141() -> None:
    # The pipe's read end is closed before the command starts, so its first write to stdout
    # is sure to fail, as under `trio-mcp tools SERVER | head -1` once head has gone.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "trio_mcp", "tools", "demo_tools"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT,
            check=False,
            cwd=ROOT,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.slow
def test_ctrl_c_ends_a_call_quietly_with_130() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "trio_mcp", "call", CLIENT_TOOLS, "wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    ) as process:
        assert process.stderr is not None
        # The tool reports progress once it runs: the call is in flight from then on.
        assert process.stderr.readline() == "  [0] waiting\n"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT)
    assert (process.returncode, out, err) == (130, "", "")


def _serve_on_a_terminal(command: list[str]) -> tuple[str, int]:
    """Run a stdio server whose stdin is a terminal, until Ctrl-D: its stderr and exit code."""
    controller, terminal = pty.openpty()
    try:
        with subprocess.Popen(
            command, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
        ) as process:
            os.close(terminal)
            # Ctrl-D at the start of a line: the end of input, whenever the server reads it.
            os.write(controller, b"\x04")
            _, err = process.communicate(timeout=TIMEOUT)
    finally:
        os.close(controller)
    return err.decode(), process.returncode


@pytest.mark.slow
def test_run_on_a_terminal_says_it_waits_for_a_client_and_how_to_try_it() -> None:
    err, code = _serve_on_a_terminal([sys.executable, "-m", "trio_mcp", "run", ECHO_TOOLS])
    assert err == (
        "trio-mcp: serving echo-tools over stdio; it waits for an MCP client to write to stdin "
        f"(Ctrl-D or Ctrl-C to stop). To try its tools: trio-mcp tools {ECHO_TOOLS}\n"
    )
    assert code == 0


@pytest.mark.slow
def test_a_server_run_from_its_own_script_names_its_command_line_to_try_it() -> None:
    command = [sys.executable, "-m", "demo_tools"]
    err, code = _serve_on_a_terminal(command)
    assert err.startswith("trio-mcp: serving trio-mcp-demo over stdio; it waits for ")
    assert err.endswith(f"To try its tools: trio-mcp tools -- {shlex.join(command)}\n")
    assert err.count("\n") == 1
    assert code == 0


@pytest.mark.slow
def test_call_prints_the_result() -> None:
    done = cli("call", "demo_tools", "calculator.add", "a=5", "b=3")
    assert (done.returncode, done.stdout, done.stderr) == (0, "8\n", "")


@pytest.mark.slow
def test_call_reads_each_value_as_its_parameter_takes_it() -> None:
    # `text` takes a string: 2024 stays the text "2024" (it was sent as the integer 2024,
    # which the tool refused); `a` and `b` take numbers, read as JSON.
    echoed = cli("call", ECHO_TOOLS, "echo", "text=2024")
    assert (echoed.returncode, echoed.stdout, echoed.stderr) == (0, "2024\n", "")
    quoted = cli("call", ECHO_TOOLS, "echo", 'text="[1, 2]"')
    assert (quoted.returncode, quoted.stdout) == (0, '"[1, 2]"\n'), quoted.stderr
    added = cli("call", "demo_tools", "calculator.add", "a=2.5", "b=1e1")
    assert (added.returncode, added.stdout) == (0, "12.5\n"), added.stderr


@pytest.mark.slow
def test_call_with_json_arguments_and_an_object_result() -> None:
    done = cli(
        "call", "demo_tools", "wh40k.roll_dice", "flavor=save", "--json", '{"dice_count": 2}'
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["rolls", "total", "successes", "flavor_text"]
    assert "on 3+" in lines[-1]


@pytest.mark.slow
def test_options_may_come_between_the_words() -> None:
    # It was refused: "unrecognized arguments: calculator.add a=1 b=2".
    done = cli("call", "demo_tools", "--timeout", str(TIMEOUT), "calculator.add", "a=1", "b=2")
    assert (done.returncode, done.stdout, done.stderr) == (0, "3\n", "")
    # Values that start with - are words in NAME=VALUE; options stay options after them.
    echoed = cli("call", ECHO_TOOLS, "--raw", "echo", "text=--verbose", f"--timeout={TIMEOUT}")
    assert echoed.returncode == 0, echoed.stderr
    assert json.loads(echoed.stdout)["content"] == [{"type": "text", "text": "--verbose"}]
    added = cli("call", "demo_tools", "calculator.add", "a=-1", "--timeout", str(TIMEOUT), "b=-2")
    assert (added.returncode, added.stdout) == (0, "-3\n"), added.stderr


@pytest.mark.slow
def test_call_a_command_after_double_dash_with_raw_output() -> None:
    done = cli(
        "call", "--raw", "calculator.multiply", "a=6", "b=7", "--", sys.executable, "-m",
        "demo_tools",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"structuredContent": {\n    "result": 42.0\n  }' in done.stdout


@pytest.mark.slow
def test_call_shows_progress_and_server_logs_on_stderr() -> None:
    done = cli("call", ECHO_TOOLS, "chatty", "text=hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n"
    assert "[server echo_tools warning] warning: hello" in done.stderr
    assert "[1/2] half way" in done.stderr


@pytest.mark.slow
def test_call_shows_a_task_status_and_prints_its_result() -> None:
    done = cli("call", TASK_TOOLS, "slow", "seconds=0.4")
    assert (done.returncode, done.stdout) == (0, "slept 0.4\n"), done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("  task working")
    assert "  task working: halfway" in lines
    assert lines[-1] == "  task completed: halfway"
    failed = cli("call", TASK_TOOLS, "crashing")
    assert failed.returncode == 2
    assert failed.stderr.splitlines()[-1] == (
        "trio-mcp: Internal error: crashed (JSON-RPC error -32603)"
    )


@pytest.mark.slow
def test_ctrl_c_cancels_a_task() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "trio_mcp", "call", TASK_TOOLS, "slow", "seconds=60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    ) as process:
        assert process.stderr is not None
        assert process.stderr.readline().startswith("  task working")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT)
    assert (process.returncode, out) == (130, "")
    assert re.fullmatch(r"(  task working: \w+\n)*trio-mcp: cancelled task \S+\n", err), err


@pytest.mark.slow
def test_a_tool_error_exits_1() -> None:
    done = cli("call", "demo_tools", "calculator.divide", "a=1", "b=0")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == "error: Cannot divide by zero\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("call", "no_such_module_x", "t"), "No module named 'no_such_module_x'"),
        (
            ("call", "demo_tools", "no.such.tool"),
            "trio-mcp call: unknown tool 'no.such.tool'; the tools are 'calculator.add', ",
        ),
        (
            ("call", "demo_tools", "calculator.ad", "a=1", "b=2"),
            "trio-mcp call: unknown tool 'calculator.ad'; did you mean 'calculator.add'?\n",
        ),
        (
            ("call", "demo_tools", "calculator.add", "a=1", "bee=2"),
            "trio-mcp call: unknown parameter 'bee'; the parameters are 'a', 'b'\n",
        ),
        (("call", "demo_tools", "calculator.add", "a"), "'a' is not NAME=VALUE"),
        (("call", "demo_tools"), "give the tool to call"),
        (("call",), "give the server and the tool"),
        (("tools",), "give a server"),
        (("tools", "demo_tools", "calculator.add", "--", "python"), "either before -- or"),
        (("tools", "demo_tools", "a", "b"), "give one tool to show, not 2"),
        (
            ("tools", "demo_tools", "calculator.ad"),
            "trio-mcp tools: unknown tool 'calculator.ad'; did you mean 'calculator.add'?\n",
        ),
        (("demo", "--", "python"), "demo takes no command after --"),
        (("run", "demo_tools", "--", "x"), "run takes no command after --"),
        (("call", "demo_tools", "t", "--json", "[1]"), "--json must be a JSON object"),
        (("tools", "--header", "nocolon", "demo_tools"), "is not NAME:VALUE"),
        (("frobnicate",), "invalid choice"),
        (
            ("run", "demo_tools", "--transport", "http", "--host", "0.0.0.0", "--port", "0"),
            "HttpOptions.allowed_hosts (trio-mcp run --allow-host NAME)",
        ),
        (
            ("run", "demo_tools", "--max-connections-per-address", "5"),
            "--max-connections-per-address takes 0 or more, with --transport http",
        ),
    ],
)
def test_usage_and_connection_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    done = cli(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr


@pytest.mark.slow
async def test_tools_and_call_over_http_and_legacy_sse() -> None:
    async with serve() as served:
        base = served.base
        listed = await cli_async("tools", base + "/mcp")
        assert listed.returncode == 0, listed.stderr
        assert b"calculator.power  Raise a number to a power" in listed.stdout
        called = await cli_async("call", base + "/sse", "calculator.power", "base=2", "exponent=8")
        assert (called.returncode, called.stdout) == (0, b"256\n"), called.stderr


@pytest.mark.slow
async def test_run_over_http_accepts_the_allowed_hosts() -> None:
    args = ("demo_tools", "--transport", "http", "--port", "0", "--allow-host", "mcp.example")
    async with serving(*args) as served:
        url = await served.url()
        message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
        }
        with trio.fail_after(TIMEOUT):
            async with httpx.AsyncClient() as http:
                named = await http.post(
                    url, json=message, headers={**headers, "host": "mcp.example"}
                )
                other = await http.post(url, json=message, headers={**headers, "host": "x.example"})
        await served.stop()
    assert named.status_code == 400  # past the Host check: no session yet
    assert other.status_code == 421


@pytest.mark.slow
async def test_unreachable_url_exits_2() -> None:
    # Port 9 (discard) has no listener here; the retries are bounded (about 4 s at worst).
    done = await cli_async("call", "http://127.0.0.1:9/mcp", "x", "--timeout", "20")
    assert done.returncode == 2
    assert b"cannot reach http://127.0.0.1:9/mcp" in done.stderr


@pytest.mark.slow
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
        '10. wh40k.wager(imperial_force="Cadian 8th", enemy_force="Black Legion")',
        "the server asks the user: Which side do you back, and for how many Thrones?",
        'form fields (defaults): {"side": "imperium", "thrones": 10}',
        'the user answers (canned): {"side": "foe", "thrones": 20}',
        "carried the day: you ",
        '11. wh40k.battle_report(imperial_force="Space Wolves", enemy_force="Necrons")',
        "the server asks the client's model: Write a three-sentence battle report",
        "   = Frost cracked under ceramite",
        "12. wh40k.campaign(battles=2)",
        "     task working: battle 1 of 2: on ",
        "     task working: battle 2 of 2: on ",
        "     task completed: the campaign is over",
        "     verdict:            The ",
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


#: What `pip install trio-mcp` (no extras) lacks: each optional extra's imports.
NOT_INSTALLED = ("h11", "httpx", "httpcore", "hypercorn", "jwt", "cryptography", "redis")


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--version"], ["run", "--help"], ["demo"]], ids=" ".join)
def test_the_command_line_runs_without_the_optional_extras(args: list[str]) -> None:
    # The README's first command installs no extras: the command line must start, and the demo
    # (over stdio) run, with none of their modules importable.
    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in NOT_INSTALLED)
    code = f"import sys; {blocked}; from trio_mcp.cli import main; sys.exit(main({args!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if args == ["demo"]:
        assert done.stdout.rstrip().endswith("Done.")


#: What a stdio server has no use for: the client commands and the HTTP transport.
CLIENT_AND_HTTP = (
    "trio_mcp.cli._client",
    "trio_mcp._connect",
    "trio_mcp._runtime.client",
    "trio_mcp.transports.http.app",
)


def test_run_over_stdio_loads_neither_the_client_commands_nor_http_code() -> None:
    # A client that starts `trio-mcp run` waits for it: the server loads what it serves with.
    code = (
        "import json, sys; from trio_mcp.cli import main; code = main(['run', 'demo_tools']); "
        "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,  # the client leaves at once: the server ends
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=ROOT,
    )
    code, loaded = json.loads(done.stderr.splitlines()[-1])
    assert code == 0, done.stderr
    assert "trio_mcp._runtime.server" in loaded
    assert not set(CLIENT_AND_HTTP) & set(loaded)


# -- resources, prompts, completion (subprocess) -------------------------------------------------


@pytest.mark.slow
def test_resources_lists_resources_then_templates() -> None:
    done = cli("resources", "demo_tools")
    assert done.returncode == 0, done.stderr
    head, listed, templates = done.stdout.rstrip("\n").split("\n\n")
    assert head.startswith("trio-mcp-demo ")
    assert head.endswith(": 4 resources, 1 template")
    assert listed.splitlines() == [
        "URI                                            NAME                       MIME TYPE"
        "         TITLE",
        "wh40k://codex/factions                         factions                   "
        "application/json  Factions of the codex",
        "wh40k://battles/latest                         latest_battle              "
        "text/plain        Latest battle report",
        "skill://wh40k-rules/SKILL.md                   wh40k-rules                text/markdown",
        "skill://wh40k-rules/references/wound-rolls.md  references/wound-rolls.md  text/markdown",
    ]
    assert templates.splitlines() == [
        "URI TEMPLATE                       NAME  MIME TYPE         TITLE",
        "wh40k://units/{faction}/{unit_id}  unit  application/json  Unit datasheet",
    ]


@pytest.mark.slow
def test_resources_as_json_from_a_command_after_double_dash() -> None:
    done = cli("resources", "--json", "--", sys.executable, "-m", "trio_mcp", "run", PRIMITIVES)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert set(listed) == {"resources", "resourceTemplates"}
    logo = next(r for r in listed["resources"] if r["uri"] == "wh40k://logo")
    assert (logo["mimeType"], logo["title"], logo["size"]) == ("image/png", "Logo", 70)
    assert [t["uriTemplate"] for t in listed["resourceTemplates"]] == [
        "wh40k://units/{faction}/{unit_id}",
        "wh40k://roster/{faction}/{name}",
        "wh40k://search{?q,limit}",
        "wh40k://files/{+path}",
    ]


@pytest.mark.slow
def test_a_server_without_resources_or_prompts_lists_none() -> None:
    resources = cli("resources", ECHO_TOOLS)
    assert (resources.returncode, resources.stdout) == (
        0,
        "echo-tools 0.1.0: 0 resources, 0 templates\n\n(no resources)\n",
    ), resources.stderr
    prompts = cli("prompts", ECHO_TOOLS, "--json")
    assert (prompts.returncode, json.loads(prompts.stdout)) == (0, []), prompts.stderr


@pytest.mark.slow
def test_read_prints_text_as_it_is_for_a_resource_and_a_template() -> None:
    factions = cli("read", "demo_tools", "wh40k://codex/factions")
    assert factions.returncode == 0, factions.stderr
    assert json.loads(factions.stdout) == {
        name: [unit[0] for unit in units] for name, units in demo_tools.codex.UNITS.items()
    }
    assert factions.stdout.count("\n") == 1  # the text, and one newline to end the line
    unit = cli("read", "demo_tools", "wh40k://units/orks/1")
    assert unit.returncode == 0, unit.stderr
    assert json.loads(unit.stdout)["name"] == "Meganobz"


@pytest.mark.slow
def test_read_a_blob_says_its_size_and_type_or_writes_it(tmp_path: Path) -> None:
    shown = cli("read", PRIMITIVES, "wh40k://logo")
    assert (shown.returncode, shown.stdout) == (
        0,
        "[blob image/png, 70 bytes; --out FILE writes it]\n",
    ), shown.stderr
    out = tmp_path / "logo.png"
    written = cli("read", PRIMITIVES, "wh40k://logo", "--out", str(out))
    assert written.returncode == 0, written.stderr
    assert written.stdout == ""
    assert written.stderr == f"trio-mcp read: wrote 70 bytes (image/png) to {out}\n"
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert len(out.read_bytes()) == 70


@pytest.mark.slow
def test_read_as_json_keeps_the_result_as_it_came() -> None:
    done = cli("read", PRIMITIVES, "wh40k://logo", "--json")
    assert done.returncode == 0, done.stderr
    (part,) = json.loads(done.stdout)["contents"]
    assert (part["uri"], part["mimeType"]) == ("wh40k://logo", "image/png")
    assert part["blob"].startswith("iVBORw0KGgo")  # still base64, as on the wire


@pytest.mark.slow
def test_prompts_lists_each_prompt_with_its_arguments() -> None:
    done = cli("prompts", "demo_tools")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith(": 1 prompt")
    assert done.stdout.split("\n\n")[1].splitlines() == [
        "wh40k.battle_briefing  Brief a model as a tactician for a battle between two factions.",
        "    ARGUMENT     REQUIRED  DESCRIPTION",
        "    attacker     yes       The attacking faction",
        "    defender     yes       The defending faction",
        "    battlefield  no        Where the battle is fought",
    ]
    listed = cli("prompts", PRIMITIVES, "--json")
    assert listed.returncode == 0, listed.stderr
    prompts = {p["name"]: p for p in json.loads(listed.stdout)}
    assert set(prompts) == {
        "wh40k.battle_briefing",
        "wh40k.greeting",
        "wh40k.mixed",
        "wh40k.failing",
    }
    assert prompts["wh40k.greeting"]["arguments"] == [{"name": "name", "required": True}]


@pytest.mark.slow
def test_prompt_prints_its_messages_by_role() -> None:
    done = cli(
        "prompt",
        PRIMITIVES,
        "wh40k.battle_briefing",
        "attacker=orks",
        "defender=necrons",
        "turns=5",
    )
    assert (done.returncode, done.stdout) == (
        0,
        "user: orks attack necrons for 5 turns (short).\nassistant: Understood.\n",
    ), done.stderr


@pytest.mark.slow
def test_prompt_summarises_content_that_is_not_text_and_gives_json() -> None:
    done = cli("prompt", PRIMITIVES, "wh40k.mixed")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "user: [image image/png, 96 base64 characters]",
        "assistant: [audio audio/wav, 8 base64 characters]",
        "user: a report",
        "user: [link logo: wh40k://logo]",
        "user: And one more thing.",
    ]
    raw = cli("prompt", PRIMITIVES, "wh40k.greeting", "name=2024", "--json")
    assert raw.returncode == 0, raw.stderr
    # Prompt arguments are strings: 2024 went as the text it is.
    assert json.loads(raw.stdout)["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Hello, 2024!"}}
    ]


@pytest.mark.slow
def test_complete_a_prompt_argument_and_a_template_variable() -> None:
    typed = cli("complete", "demo_tools", "wh40k.battle_briefing", "defender", "n")
    assert (typed.returncode, typed.stdout) == (0, "necrons\n"), typed.stderr
    every = cli("complete", "demo_tools", "wh40k://units/{faction}/{unit_id}", "faction")
    assert (every.returncode, every.stdout.split()) == (
        0,
        ["space_marines", "orks", "necrons", "tyranids"],
    ), every.stderr
    # The other arguments' values narrow the choice (the roster's names are the faction's).
    narrowed = cli(
        "complete", PRIMITIVES, "wh40k://roster/{faction}/{name}", "name", "faction=orks"
    )
    assert (narrowed.returncode, narrowed.stdout) == (0, "boyz\nnobz\ngretchin\n"), narrowed.stderr
    typed_too = cli(
        "complete", PRIMITIVES, "wh40k://roster/{faction}/{name}", "name", "g", "faction=orks"
    )
    assert (typed_too.returncode, typed_too.stdout) == (0, "gretchin\n"), typed_too.stderr


@pytest.mark.slow
def test_complete_as_json() -> None:
    done = cli("complete", "demo_tools", "wh40k.battle_briefing", "attacker", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "values": ["space_marines", "orks", "necrons", "tyranids"],
        "total": 4,
        "hasMore": False,
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("read", "demo_tools", "wh40k://codex/faction"),
            "trio-mcp read: unknown resource 'wh40k://codex/faction'; did you mean "
            "'wh40k://codex/factions'?\n",
        ),
        (
            ("read", "demo_tools", "http://nowhere"),
            "trio-mcp read: unknown resource 'http://nowhere'; the resources are "
            "'wh40k://codex/factions', 'wh40k://battles/latest', "
            "'skill://wh40k-rules/SKILL.md', 'skill://wh40k-rules/references/wound-rolls.md', "
            "'wh40k://units/{faction}/{unit_id}'\n",
        ),
        # Under a template: the server's own reason, not a guess.
        (
            ("read", "demo_tools", "wh40k://units/elves/1"),
            "- faction: expected 'space_marines', 'orks', 'necrons' or 'tyranids'; got \"elves\"",
        ),
        (
            ("read", "demo_tools", "wh40k://codex/factions", "--out", "no/such/dir/f.json"),
            "trio-mcp read: cannot write no/such/dir/f.json: No such file or directory\n",
        ),
        (("read", "demo_tools"), "trio-mcp read: give the URI to read: trio-mcp read SERVER URI\n"),
        (("read", "demo_tools", "a", "b"), "too many words: trio-mcp read SERVER URI"),
        (("resources", "demo_tools", "x"), "too many words: trio-mcp resources SERVER"),
        (("prompts", "demo_tools", "--", "python"), "either before -- or"),
        (("prompts",), "trio-mcp prompts: give a server"),
        (
            ("prompt", "demo_tools", "wh40k.briefing"),
            "trio-mcp prompt: unknown prompt 'wh40k.briefing'; did you mean "
            "'wh40k.battle_briefing'?\n",
        ),
        (
            ("prompt", "demo_tools", "wh40k.battle_briefing", "atacker=orks"),
            "trio-mcp prompt: unknown argument 'atacker'; did you mean 'attacker'?\n",
        ),
        (
            ("prompt", "demo_tools", "wh40k.battle_briefing", "attacker=orks"),
            "- defender: missing required argument",
        ),
        (("prompt", PRIMITIVES, "wh40k.failing"), "trio-mcp: no briefing today"),
        (("prompt", "demo_tools", "wh40k.battle_briefing", "orks"), "'orks' is not NAME=VALUE"),
        (("prompt", "demo_tools"), "give the prompt to get"),
        (
            ("complete", "demo_tools", "wh40k.battle_briefin", "defender"),
            "trio-mcp complete: unknown prompt 'wh40k.battle_briefin'; did you mean "
            "'wh40k.battle_briefing'?\n",
        ),
        (
            ("complete", "demo_tools", "wh40k://units/{faction}", "faction"),
            "trio-mcp complete: unknown resource template 'wh40k://units/{faction}'; did you "
            "mean 'wh40k://units/{faction}/{unit_id}'?\n",
        ),
        (
            ("complete", "demo_tools", "wh40k.battle_briefing", "defendr"),
            "trio-mcp complete: unknown argument 'defendr'; did you mean 'defender'?\n",
        ),
        (
            ("complete", "demo_tools", "wh40k://units/{faction}/{unit_id}", "fraction"),
            "trio-mcp complete: unknown argument 'fraction'; did you mean 'faction'?\n",
        ),
        (
            ("complete", "demo_tools", "wh40k.battle_briefing", "defender", "n", "attaker=orks"),
            "trio-mcp complete: unknown argument 'attaker'; did you mean 'attacker'?\n",
        ),
        (("complete", "demo_tools", "wh40k.battle_briefing"), "give the prompt or template"),
    ],
)
def test_resource_prompt_and_completion_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    done = cli(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert message in done.stderr


@pytest.mark.slow
async def test_resources_prompts_and_completion_over_http() -> None:
    async with serve() as served:
        url = served.url
        listed = await cli_async("resources", url)
        assert listed.returncode == 0, listed.stderr
        assert b"wh40k://units/{faction}/{unit_id}  unit" in listed.stdout
        # (Not wh40k://battles/latest: this process's other tests may have fought a battle.)
        read = await cli_async("read", url, "wh40k://units/necrons/2")
        assert read.returncode == 0, read.stderr
        assert json.loads(read.stdout)["name"] == "Doomsday Ark"
        got = await cli_async(
            "prompt", url, "wh40k.battle_briefing", "attacker=tyranids", "defender=orks"
        )
        assert got.returncode == 0, got.stderr
        assert got.stdout.startswith(b"user: You are a tactician of the tyranids.")
        completed = await cli_async("complete", url, "wh40k.battle_briefing", "battlefield", "i")
        assert (completed.returncode, completed.stdout) == (0, b"ice_world\n"), completed.stderr


# -- helpers --------------------------------------------------------------------------------------


#: Each command's words and options (an option with its value), for placing them apart.
_COMMAND_LINES = {
    "tools": (["demo_tools", "calculator.add"], [["--json"], ["--timeout", "5"]]),
    "call": (
        ["demo_tools", "calculator.add", "a=1", "b=-2", "c=--x"],
        [["--timeout", "5"], ["--raw"], ["--json", '{"a": 1}'], ["--root", "."]],
    ),
    "resources": (["demo_tools"], [["--json"], ["--header", "A:b"]]),
    "read": (["demo_tools", "wh40k://codex/factions"], [["--out", "f"], ["--json"]]),
    "prompts": (["demo_tools"], [["--json"], ["--show-stderr"]]),
    "prompt": (
        ["demo_tools", "wh40k.battle_briefing", "attacker=orks", "defender=necrons"],
        [["--json"], ["--sampling-command", "cat"], ["--timeout=5"]],
    ),
    "complete": (
        ["demo_tools", "wh40k.battle_briefing", "defender", "-1", "attacker=orks"],
        [["--json"], ["--timeout", "5"], ["--no-browser"]],
    ),
    "demo": ([], [["--http"]]),
    "login": (["http://127.0.0.1:1/mcp"], [["--timeout", "5"], ["--scope", "a b"]]),
    "logout": (["http://127.0.0.1:1/mcp"], [["--forget-client"], ["--token-file", "t.json"]]),
    "run": (["demo_tools"], [["--transport", "http"], ["--port", "0"], ["--stateless"]]),
}


def _interleave(words: list[str], options: list[list[str]]) -> list[str]:
    """A word, an option, a word, an option, ... and what is left of either at the end."""
    line: list[str] = []
    for at in range(max(len(words), len(options))):
        line += words[at : at + 1] + (options[at] if at < len(options) else [])
    return line


@pytest.mark.parametrize("command", sorted(_COMMAND_LINES))
def test_every_command_takes_its_options_before_between_and_after_its_words(
    command: str,
) -> None:
    words, options = _COMMAND_LINES[command]
    flat = [token for option in options for token in option]
    after, _ = parse_command_line([command, *words, *flat])
    assert after.command == command
    vars(after).pop("command_parser", None)  # run's, a parser made anew each time
    placed = {
        "before": [*flat, *words],
        "between": _interleave(words, options),
        "between, the other way round": _interleave(words, options[::-1]),
        "after the first word": [*words[:1], *flat, *words[1:]],
    }
    for where, line in placed.items():
        parsed, server_command = parse_command_line([command, *line])
        vars(parsed).pop("command_parser", None)
        assert (parsed, server_command) == (after, []), where
    if "words" in vars(after):
        assert after.words == words


def test_double_dash_ends_the_options() -> None:
    args, server_command = parse_command_line(
        ["call", "--timeout", "5", "calculator.add", "x=-1", "--raw", "--", "python", "-m",
         "demo_tools", "--raw", "--", "y"]
    )  # fmt: skip
    assert (args.words, args.timeout, args.raw) == (["calculator.add", "x=-1"], 5.0, True)
    assert server_command == ["python", "-m", "demo_tools", "--raw", "--", "y"]


def test_an_unknown_option_anywhere_is_one_line_and_the_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_command_line(["call", "demo_tools", "calculator.add", "--bogus", "a=1", "-x"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: trio-mcp call ")
    assert err.endswith("\ntrio-mcp call: error: unrecognized arguments: --bogus -x\n")
    with pytest.raises(SystemExit):
        parse_command_line(["login", "http://127.0.0.1:1/mcp", "--no-browser", "extra"])
    assert capsys.readouterr().err.endswith("error: unrecognized arguments: extra\n")


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


STRING_OR_INT = {"anyOf": [{"type": "string"}, {"type": "integer"}]}


@pytest.mark.parametrize(
    ("schema", "text", "value"),
    [
        ({"type": "string"}, "2024", "2024"),
        ({"type": "string"}, "true", "true"),
        ({"type": "string"}, '"quoted"', '"quoted"'),
        ({"type": "string", "enum": ["1", "2"]}, "1", "1"),
        ({"type": "integer"}, "5", 5),
        ({"type": "integer"}, "3.5", 3.5),  # the server says an integer was expected
        ({"type": "integer"}, "five", "five"),
        ({"type": "number"}, "-2", -2),
        ({"type": "boolean"}, "false", False),
        ({"type": "array", "items": {"type": "integer"}}, "[1, 2]", [1, 2]),
        ({"type": "object"}, '{"a": "b"}', {"a": "b"}),
        ({"enum": [1, 2]}, "1", 1),
        ({"const": True}, "true", True),
        (STRING_OR_INT, "2024", 2024),
        (STRING_OR_INT, "abc", "abc"),
        (STRING_OR_INT, '"2024"', "2024"),  # a JSON string forces a string
        (STRING_OR_INT, "true", "true"),  # JSON, but of a type the schema does not take
        ({"oneOf": [{"type": "number"}, {"type": "string"}]}, "7", 7),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "null", None),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "none", "none"),
        ({"type": ["integer", "null"]}, "null", None),
        ({"anyOf": [{"type": "string"}, {}]}, "5", 5),  # an open branch takes anything
        ({}, "5", 5),
        ({}, "x y", "x y"),
        (None, "[1]", [1]),
        ({"$ref": "#/$defs/Kind"}, "1", "1"),
        ({"$ref": "#/$defs/Count"}, "1", 1),
        ({"$ref": "#/$defs/Missing"}, "1", 1),
        ({"$ref": "https://example.com/schema"}, "1", 1),
    ],
)
def test_convert_value_by_schema(schema: Any, text: str, value: Any) -> None:
    root = {"$defs": {"Kind": {"type": "string"}, "Count": {"type": "integer"}}}
    converted = convert_value(text, schema, root)
    assert converted == value
    assert type(converted) is type(value)


def test_parse_arguments_by_input_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert parse_arguments(["query=2024", "limit=5"], None, schema) == {
        "query": "2024",
        "limit": 5,
    }
    # --json values are JSON already; the pairs still win.
    assert parse_arguments([("limit", "3")], '{"query": 1, "limit": 9}', schema) == {
        "query": 1,
        "limit": 3,
    }
    with pytest.raises(UsageError, match=r"unknown parameter 'querry'; did you mean 'query'\?"):
        parse_arguments(["querry=x"], None, schema)
    open_schema = {**schema, "additionalProperties": True}
    assert parse_arguments(["extra=2"], None, open_schema) == {"extra": 2}


@pytest.mark.parametrize(
    ("name", "close"),
    [
        ("calculator.ad", ["calculator.add"]),
        ("add", ["calculator.add"]),  # without its namespace
        ("calc.add", ["calculator.add"]),
        ("CALCULATOR.ADD", ["calculator.add"]),
        ("rolldice", ["wh40k.roll_dice"]),
        ("zzz", []),
    ],
)
def test_suggest_names(name: str, close: list[str]) -> None:
    known = [t for t, _ in demo_tools.tour.TOUR] + ["wh40k.roll_dice"]
    assert suggest_names(name, known) == close


def test_unknown_name_messages() -> None:
    assert unknown_name("prompt", "gret", ["greet", "farewell"]) == (
        "unknown prompt 'gret'; did you mean 'greet'?"
    )
    assert unknown_name("tool", "x", ["a", "b"]) == "unknown tool 'x'; the tools are 'a', 'b'"
    many = [f"t{i}" for i in range(12)]
    assert unknown_name("tool", "zzz", many).endswith("'t9' and 2 more")
    assert unknown_name("tool", "x", []) == "unknown tool 'x': there are no tools"
    assert unknown_name("tool", "sum", ["sum1", "sum2", "summary"]) == (
        "unknown tool 'sum'; did you mean 'sum1' or 'sum2'?"
    )


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
        ToolInfo("clock", None, {"type": "object"}, {"type": "object", "properties": {"t": {}}}),
        ToolInfo("odd", "Odd types", schema, {"type": "object", "properties": {"ok": {}}}),
    ]
    text = format_tools(tools)
    assert "bare\n    (no parameters)\n\nclock\n    (no parameters)\n    returns: t: any\n" in text
    for name, kind in (
        ("when", "string|null"),
        ("tags", "array[string]"),
        ("mode", "'fast'"),
        ("size", "integer|null 0.."),
        ("blob", "any"),
    ):
        assert re.search(rf"\n    {name} +{re.escape(kind)} +no\n", text), (name, text)
    assert "    returns: ok: any" in text


def test_format_tool_and_the_summary_line_of_a_long_description() -> None:
    tool = ToolInfo(
        "search",
        "Search the catalogue.\n\nPrefer it over browsing.\n\nUse it when:\n- asked",
        {"type": "object"},
        title="Catalogue search",
        annotations={"readOnlyHint": True},
    )
    assert format_tools([tool]) == "search  Search the catalogue.\n    (no parameters)"
    assert format_tool(tool) == (
        "search  (Catalogue search)\n"
        "    Search the catalogue.\n\n    Prefer it over browsing.\n\n    Use it when:\n"
        "    - asked\n\n"
        "    (no parameters)\n"
        '    annotations: {"readOnlyHint": true}\n\n'
        'input schema:\n{\n  "type": "object"\n}\n\n'
        "output schema: none"
    )


def test_render_result_and_progress() -> None:
    plain = ToolResult((TextContent("a"), {"type": "future"}))
    assert render_result(plain) == 'a\n{"type": "future"}'
    assert render_result(ToolResult((), {"result": 2.5})) == "2.5"
    assert render_result(ToolResult((), {"result": [1, "x"]})) == '[1, "x"]'
    assert format_progress(Progress(1.5)) == "[1.5]"
    assert format_progress(Progress(2, 4, "half")) == "[2/4] half"


@pytest.mark.parametrize(
    ("template", "names"),
    [
        ("wh40k://units/{faction}/{unit_id}", ["faction", "unit_id"]),
        ("wh40k://search{?q,limit}", ["q", "limit"]),
        ("wh40k://files/{+path}", ["path"]),
        ("x://{a}/{a}{#frag}{/list*}{var:3}", ["a", "frag", "list", "var"]),
        ("x://fixed", []),
    ],
)
def test_template_variables(template: str, names: list[str]) -> None:
    assert template_variables(template) == names


def test_render_contents_heads_each_part_when_there_are_several() -> None:
    one = ResourceContents(text="a line", uri="x://one")
    assert render_contents([one]) == "a line\n"
    two = ResourceContents(blob=b"\x00\x01", uri="x://two")
    assert render_contents([one, two]) == (
        "==> x://one <==\na line\n"
        "==> x://two <==\n[blob of unknown type, 2 bytes; --out FILE writes it]\n"
    )
    assert render_contents([ResourceContents(text="ends\n", uri="x://e")]) == "ends\n"


def test_format_resources_and_prompts_without_a_server_heading() -> None:
    template = ResourceTemplateInfo("x://{id}", "by_id", mime_type="text/plain")
    assert format_resources([], [template]) == (
        "URI TEMPLATE  NAME   MIME TYPE   TITLE\nx://{id}      by_id  text/plain"
    )
    assert format_resources([], []) == "(no resources)"
    assert format_prompts([]) == "(no prompts)"


def test_render_messages_and_describe_block() -> None:
    result = PromptResult(
        (PromptMessage("user", TextContent("hi")), PromptMessage("assistant", "yo"))
    )
    assert render_messages(result) == "user: hi\nassistant: yo"
    assert describe_block({"type": "future", "x": 1}) == '{"type": "future", "x": 1}'


@pytest.mark.parametrize(("given", "bound"), [((), 256), (("5",), 5), (("0",), None)])
def test_run_bounds_the_connections_of_one_client_address(
    given: tuple[str, ...], bound: int | None
) -> None:
    flag = ("--max-connections-per-address", *given) if given else ()
    args, _ = parse_command_line(["run", "demo_tools", "--transport", "http", *flag])
    assert _http_options(args).max_connections_per_address == bound
