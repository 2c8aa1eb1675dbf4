"""How `trio-mcp call` answers what a server asks (`trio_mcp.cli._answers`).

The form logic (fields, what a line means, what is shown) is tested directly. The command runs
as a real subprocess against `tests/fixtures/asking_tools.py`, whose `ask` tool sends the
client any request and reports the answer: on a pseudo-terminal (the `pty` module) for the
interactive path, where the test types as a user would, Ctrl-C included; and with pipes, where
there is no one to ask.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.processes import ROOT, TIMEOUT, cli
from trio_mcp import ImageContent, SamplingMessage, SamplingRequest, TextContent
from trio_mcp.cli._answers import (
    NOTHING,
    InvalidAnswerError,
    conversation_text,
    field_lines,
    form_fields,
    prompt_text,
    read_value,
    roots_from_paths,
)

pytestmark = pytest.mark.slow  # every test here starts processes: seconds each

ASKING_TOOLS = str(ROOT / "tests" / "fixtures" / "asking_tools.py")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Who", "default": "John Doe"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "colour": {
            "type": "string",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "b", "title": "Blue"}],
        },
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["red", "green", "blue"]},
            "maxItems": 2,
        },
        "ok": {"type": "boolean", "default": True},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["age", "colour"],
}


# -- the form, without a terminal -----------------------------------------------------------------


def fields() -> dict[str, Any]:
    return {field.name: field for field in form_fields(SCHEMA)}


def test_form_fields_read_every_shape_the_spec_allows() -> None:
    found = form_fields(SCHEMA)
    assert [(f.name, f.kind, f.required) for f in found] == [
        ("name", "string", False),
        ("age", "integer", True),
        ("colour", "choice", True),
        ("tags", "choices", False),
        ("ok", "boolean", False),
        ("email", "string", False),
    ]
    assert found[2].options == (("r", "Red"), ("b", "Blue"))
    assert found[3].options == (("red", "red"), ("green", "green"), ("blue", "blue"))
    legacy = form_fields(
        {"properties": {"x": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]}}}
    )
    assert legacy[0].options == (("a", "A"), ("b", "B"))
    titled_many = form_fields(
        {"properties": {"x": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}}}
    )
    assert titled_many[0].options == (("a", "A"),)


def test_what_each_field_shows() -> None:
    f = fields()
    assert field_lines(f["name"]) == ["Name: Who"]
    assert prompt_text(f["name"]) == "[John Doe] > "
    assert field_lines(f["age"]) == ["age (required)", "  a whole number (0 to 150)"]
    assert field_lines(f["colour"]) == [
        "colour (required)",
        "  choose one: its number, value or title",
        "  1) Red [r]",
        "  2) Blue [b]",
    ]
    assert field_lines(f["tags"])[1] == "  choose any, comma-separated (at most 2 choices)"
    assert prompt_text(f["ok"]) == "[Y/n] > "
    assert field_lines(f["email"]) == ["email", "  an email address"]


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("name", "", "John Doe"),
        ("name", "  Ciaphas ", "Ciaphas"),
        ("age", "41", 41),
        ("colour", "2", "b"),
        ("colour", "red", "r"),
        ("colour", "b", "b"),
        ("tags", "red, 3", ["red", "blue"]),
        ("tags", "GREEN", ["green"]),
        ("ok", "", True),
        ("ok", "n", False),
        ("ok", "Yes", True),
        ("email", "a@b.example", "a@b.example"),
    ],
)
def test_a_line_is_read_as_its_field_takes_it(name: str, text: str, value: Any) -> None:
    assert read_value(fields()[name], text) == value


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("age", "", "this field is required"),
        ("age", "abc", "that is not a whole number"),
        ("age", "4.5", "that is not a whole number"),
        ("age", "151", "at most 150, please"),
        ("age", "-1", "at least 0, please"),
        ("colour", "9", "'9' is not one of the choices"),
        ("tags", "red,green,blue", "choose at most 2"),
        ("ok", "maybe", "answer y or n"),
        ("email", "nobody", "that is not an email address"),
    ],
)
def test_a_line_that_does_not_fit_says_why(name: str, text: str, message: str) -> None:
    with pytest.raises(InvalidAnswerError, match=message):
        read_value(fields()[name], text)


def test_numbers_dates_and_uris() -> None:
    (number, when, day, link) = form_fields(
        {
            "properties": {
                "n": {"type": "number"},
                "t": {"type": "string", "format": "date-time"},
                "d": {"type": "string", "format": "date"},
                "u": {"type": "string", "format": "uri", "minLength": 10},
            }
        }
    )
    assert read_value(number, "2.5") == 2.5
    assert read_value(number, "3") == 3
    with pytest.raises(InvalidAnswerError, match="finite"):
        read_value(number, "inf")
    assert read_value(when, "2025-01-31T12:00:00") == "2025-01-31T12:00:00"
    with pytest.raises(InvalidAnswerError, match="a date and time"):
        read_value(when, "soon")
    with pytest.raises(InvalidAnswerError, match="a date, 2025-01-31"):
        read_value(day, "31/01/2025")
    with pytest.raises(InvalidAnswerError, match="not a URI"):
        read_value(link, "example.com/x")
    with pytest.raises(InvalidAnswerError, match="at least 10 characters"):
        read_value(link, "a:b")
    # An optional field left empty is left out of the answer.
    assert read_value(link, "") is NOTHING
    assert read_value(link, "https://example.com") == "https://example.com"


def test_the_conversation_as_a_command_reads_it() -> None:
    request = SamplingRequest(
        [
            SamplingMessage("user", TextContent("A haiku?")),
            SamplingMessage("assistant", [TextContent("old pond")]),
            SamplingMessage("user", ImageContent("AA==", "image/png")),
            SamplingMessage("assistant", {"type": "tool_use", "id": "1", "name": "x", "input": {}}),
        ],
        50,
        system_prompt="You are a poet.",
    )
    assert conversation_text(request) == (
        "system: You are a poet.\n\nuser: A haiku?\n\nassistant: old pond\n\n"
        "user: [image image/png]\n\nassistant: [tool_use]\n"
    )


def test_roots_from_paths(tmp_path: Path) -> None:
    (root,) = roots_from_paths([str(tmp_path)])
    assert root.uri == tmp_path.resolve().as_uri()
    assert root.uri.startswith("file:///")
    assert root.name == tmp_path.name


# -- the command, on a terminal -------------------------------------------------------------------


class Terminal:
    """`trio-mcp ARGS` with a pseudo-terminal as its stdin, stderr and controlling terminal
    (its stdout a pipe, for the result); the test reads what it shows and types answers."""

    def __init__(self, *args: str) -> None:
        self.controller, terminal = pty.openpty()
        self.shown = ""

        def own_terminal() -> None:  # runs in the child, after setsid
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen(
            [sys.executable, "-m", "trio_mcp", *args],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=terminal,
            cwd=ROOT,
            start_new_session=True,
            preexec_fn=own_terminal,  # noqa: PLW1509 - the test runs no threads of its own
        )
        os.close(terminal)

    def expect(self, text: str) -> str:
        """Read what the terminal shows until `text` appears; returns all shown so far."""
        deadline = time.monotonic() + TIMEOUT
        while text not in self.shown:
            left = deadline - time.monotonic()
            assert left > 0, f"never shown: {text!r}; shown so far:\n{self.shown}"
            ready, _, _ = select.select([self.controller], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.controller, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                assert chunk, f"the terminal closed before {text!r}; shown:\n{self.shown}"
                self.shown += chunk.decode("utf-8", "replace")
        return self.shown

    def type(self, text: str) -> None:
        os.write(self.controller, text.encode())

    def result(self) -> tuple[int, Any]:
        """The exit code and the `--raw` result the command printed."""
        assert self.process.stdout is not None
        out = self.process.stdout.read()
        code = self.process.wait(timeout=TIMEOUT)
        return code, json.loads(out) if out.strip() else None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        os.close(self.controller)


@contextmanager
def terminal(*args: str) -> Iterator[Terminal]:
    term = Terminal(*args)
    try:
        yield term
    finally:
        term.close()


def ask_args(method: str, params: dict[str, Any], *extra: str) -> list[str]:
    return [
        "call",
        ASKING_TOOLS,
        "ask",
        f"method={method}",
        "--json",
        json.dumps({"params": params}),
        "--raw",
        *extra,
    ]


FORM = {"message": "Your details?", "requestedSchema": SCHEMA}


def answer_of(result: Any) -> Any:
    return result["structuredContent"]


def test_on_a_terminal_each_field_is_asked_and_checked() -> None:
    with terminal(*ask_args("elicitation/create", FORM)) as term:
        term.expect("asking-tools asks: Your details?")
        term.expect("[John Doe] > ")
        term.type("\n")  # keep the default
        term.expect("age (required)")
        term.type("abc\n")
        term.expect("that is not a whole number")
        term.type("200\n")
        term.expect("at most 150, please")
        term.type("41\n")
        term.expect("2) Blue [b]")
        term.type("2\n")
        term.expect("comma-separated")
        term.type("red, blue\n")
        term.expect("[Y/n] > ")
        term.type("n\n")
        term.expect("an email address")
        term.type("\n")  # optional: left out
        code, result = term.result()
    assert code == 0
    assert answer_of(result) == {
        "result": {
            "action": "accept",
            "content": {
                "name": "John Doe",
                "age": 41,
                "colour": "b",
                "tags": ["red", "blue"],
                "ok": False,
            },
        }
    }


def test_on_a_terminal_decline_and_end_of_input() -> None:
    with terminal(*ask_args("elicitation/create", FORM)) as term:
        term.expect("[John Doe] > ")
        term.type("!decline\n")
        code, result = term.result()
    assert code == 0
    assert answer_of(result) == {"result": {"action": "decline"}}

    with terminal(*ask_args("elicitation/create", FORM)) as term:
        term.expect("[John Doe] > ")
        term.type("\x04")  # Ctrl-D at the start of a line: the end of input
        code, result = term.result()
    assert code == 0
    assert answer_of(result) == {"result": {"action": "cancel"}}


def test_on_a_terminal_ctrl_c_cancels_the_form_and_nothing_else() -> None:
    # The server (a subprocess of the command) runs in a session of its own: the terminal's
    # Ctrl-C reaches the command only, which cancels the question; the call then completes.
    with terminal(*ask_args("elicitation/create", FORM)) as term:
        term.expect("[John Doe] > ")
        term.type("Ciaph")
        term.type("\x03")
        term.expect("(cancelled)")
        code, result = term.result()
    assert code == 0
    assert answer_of(result) == {"result": {"action": "cancel"}}


def test_on_a_terminal_a_url_is_shown_and_enter_accepts() -> None:
    url = {
        "mode": "url",
        "message": "Sign in, please",
        "url": "https://example.com/connect?x=1",
        "elicitationId": "e-1",
    }
    with terminal(*ask_args("elicitation/create", url)) as term:
        term.expect("asks you to continue in your browser: Sign in, please")
        term.expect("  https://example.com/connect?x=1")
        term.expect("> ")
        term.type("\n")
        code, result = term.result()
    assert code == 0
    assert answer_of(result) == {"result": {"action": "accept"}}


# -- the command, without a terminal --------------------------------------------------------------


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return cli(*args, stdin=subprocess.DEVNULL)


def test_without_a_terminal_an_elicitation_is_declined() -> None:
    done = run(*ask_args("elicitation/create", FORM))
    assert done.returncode == 0, done.stderr
    assert answer_of(json.loads(done.stdout)) == {"result": {"action": "decline"}}
    assert done.stderr == (
        "trio-mcp: asking-tools asks: Your details?\n"
        "trio-mcp: declined: there is no terminal to ask on\n"
    )


SAMPLE = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "A haiku?"}}],
    "maxTokens": 50,
    "systemPrompt": "You are a poet.",
}


def test_sampling_is_not_declared_without_a_command() -> None:
    # The raw tool asks anyway (it does not check capabilities): the client has no handler.
    done = run(*ask_args("sampling/createMessage", SAMPLE))
    assert done.returncode == 0, done.stderr
    assert answer_of(json.loads(done.stdout))["error"]["code"] == -32601
    # A tool that checks the capability falls back to its template text.
    report = run("call", "demo_tools", "wh40k.battle_report", "--raw")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["content"][0]["text"].endswith("The Emperor protects.")


def test_a_sampling_command_answers(tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text(
        "import os, sys\n"
        "text = sys.stdin.read()\n"
        "print(f\"{os.environ['TRIO_MCP_MAX_TOKENS']} tokens for: {text!r}\")\n"
    )
    command = f"{sys.executable} {script}"
    done = run(*ask_args("sampling/createMessage", SAMPLE, "--sampling-command", command))
    assert done.returncode == 0, done.stderr
    answer = answer_of(json.loads(done.stdout))["result"]
    assert answer == {
        "role": "assistant",
        "content": {
            "type": "text",
            "text": "50 tokens for: 'system: You are a poet.\\n\\nuser: A haiku?\\n'",
        },
        "model": f"command:{sys.executable}",
        "stopReason": "endTurn",
    }
    failing = f"{sys.executable} -c 'import sys; sys.exit(3)'"
    failed = run(*ask_args("sampling/createMessage", SAMPLE, "--sampling-command", failing))
    error = answer_of(json.loads(failed.stdout))["error"]
    assert error["code"] == -32603
    assert "failed with exit code 3" in error["message"]


def test_roots_come_from_root_options(tmp_path: Path) -> None:
    done = run(*ask_args("roots/list", {}, "--root", str(tmp_path), "--root", "."))
    assert done.returncode == 0, done.stderr
    assert answer_of(json.loads(done.stdout)) == {
        "result": {
            "roots": [
                {"uri": tmp_path.resolve().as_uri(), "name": tmp_path.name},
                {"uri": ROOT.as_uri(), "name": ROOT.name},
            ]
        }
    }
    # Without --root, roots are not declared: the server's request is not found.
    plain = run(*ask_args("roots/list", {}))
    assert answer_of(json.loads(plain.stdout))["error"]["code"] == -32601
