"""`RequestLogging`: one line per request, as text or JSON, with what an operator needs."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from tests.http_helpers import serve
from trio_mcp import (
    AcceptedElicitation,
    Asking,
    AuthInfo,
    Context,
    ElicitRequest,
    RequestError,
    Server,
)
from trio_mcp.middleware import RequestLogging
from trio_mcp.testing import connect

TIMEOUT = 30
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"


def mcp(record: logging.LogRecord) -> dict[str, Any]:
    """The fields `RequestLogging` puts on its records."""
    fields: dict[str, Any] = record.__dict__["mcp"]
    return fields


class Lines(logging.Handler):
    """Keeps a logger's records; `wait` returns once one matches (set from the trio thread)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._arrived = trio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self._arrived.set()
        self._arrived = trio.Event()

    async def wait(self, outcome: str) -> logging.LogRecord:
        while True:
            for record in self.records:
                if mcp(record)["outcome"] == outcome:
                    return record
            await self._arrived.wait()

    @property
    def fields(self) -> list[dict[str, Any]]:
        return [mcp(record) for record in self.records]

    def by_method(self, method: str) -> list[dict[str, Any]]:
        return [f for f in self.fields if f["method"] == method]


@contextmanager
def captured(name: str = "trio_mcp.requests") -> Iterator[Lines]:
    logger = logging.getLogger(name)
    lines = Lines()
    logger.addHandler(lines)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield lines
    finally:
        logger.removeHandler(lines)
        logger.setLevel(old)


def make_server(*middleware: Any) -> Server:
    server = Server("logged", middleware=list(middleware))

    @server.tool()
    def login(user: str, password: str) -> str:
        return f"welcome {user}"

    @server.tool()
    def fail() -> str:
        raise ValueError("no")

    @server.resource("note://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @server.prompt()
    def greet(who: str) -> str:
        return f"Hello {who}"

    return server


def parse_text(line: str) -> dict[str, str]:
    """A `key=value` line back into its pairs (quoted values are JSON strings)."""
    pairs = {}
    for key, value in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)(?: |$)', line):
        pairs[key] = json.loads(value) if value.startswith('"') else value
    return pairs


@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
async def test_one_text_line_per_request_with_its_target_outcome_and_session(version: str) -> None:
    with captured() as lines:
        async with connect(make_server(RequestLogging()), protocol_version=version) as client:
            await client.call_tool("login", {"user": "ann", "password": "hunter2"})
            await client.call_tool("fail")
            await client.read_resource("note://x")
            await client.get_prompt("greet", {"who": "Bo"})
            await client.list_tools()
            with pytest.raises(RequestError):
                await client.call_tool("no.such.tool")
    texts = [parse_text(record.getMessage()) for record in lines.records]
    assert all(record.levelno == logging.INFO for record in lines.records)
    calls = [t for t in texts if t["method"] == "tools/call"]
    assert [(t["target"], t["outcome"]) for t in calls] == [
        ("login", "ok"),
        ("fail", "isError"),
        ("no.such.tool", "error"),
    ]
    assert calls[2]["code"] == "-32602"
    assert calls[2]["error"] == "Unknown tool: no.such.tool"
    read = next(t for t in texts if t["method"] == "resources/read")
    assert (read["target"], read["outcome"]) == ("note://x", "ok")
    prompt = next(t for t in texts if t["method"] == "prompts/get")
    assert (prompt["target"], prompt["outcome"]) == ("greet", "ok")
    assert any(t["method"] == "tools/list" and "target" not in t for t in texts)
    for text in texts:
        assert text["version"] == version
        assert float(text["duration_ms"]) >= 0
        assert "id" in text
        assert "session" in text
    # Every request of the connection names its session (its id is the server's).
    assert len({t["session"] for t in texts}) == 1
    # Arguments are left out by default: they may hold secrets.
    assert not any("hunter2" in record.getMessage() for record in lines.records)


async def test_json_lines_with_arguments_capped_and_error_level() -> None:
    middleware = RequestLogging(
        format="json", include_arguments=True, max_value_chars=40, error_level=logging.WARNING
    )
    with captured() as lines:
        async with connect(make_server(middleware)) as client:
            await client.call_tool("login", {"user": "ann", "password": "x" * 100})
            await client.call_tool("fail")
    objects = [json.loads(record.getMessage()) for record in lines.records]
    login = next(o for o in objects if o.get("target") == "login")
    assert list(login)[:4] == ["method", "target", "outcome", "duration_ms"]
    # Cut to 40 characters, saying how much was left out; still one JSON object per line.
    assert login["arguments"].startswith('{"user":"ann","password":"xxxx')
    sent = json.dumps({"user": "ann", "password": "x" * 100}, separators=(",", ":"))
    assert login["arguments"] == f"{sent[:40]}...(+{len(sent) - 40} chars)"
    fail = next(record for record in lines.records if mcp(record).get("target") == "fail")
    assert fail.levelno == logging.WARNING
    assert all("\n" not in record.getMessage() for record in lines.records)


async def test_excluded_methods_and_a_quiet_logger_cost_no_line() -> None:
    with captured() as lines:
        async with connect(make_server(RequestLogging(exclude=("ping",)))) as client:
            await client.ping()
            await client.call_tool("fail")
    assert [f["method"] for f in lines.fields] == ["tools/call"]
    quiet = logging.getLogger("trio_mcp.requests.quiet")
    quiet.setLevel(logging.ERROR)
    quiet_lines = Lines()
    quiet.addHandler(quiet_lines)
    try:
        async with connect(make_server(RequestLogging(logger=quiet))) as client:
            await client.call_tool("fail")
    finally:
        quiet.removeHandler(quiet_lines)
    assert quiet_lines.records == []


async def test_a_cancelled_call_is_logged_as_cancelled() -> None:
    started = trio.Event()
    server = make_server(RequestLogging())

    @server.tool()
    async def wait() -> str:
        started.set()
        await trio.sleep_forever()
        return "never"

    with captured() as lines:
        async with connect(server) as client:
            with trio.fail_after(TIMEOUT):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "wait")
                    await started.wait()
                    nursery.cancel_scope.cancel()  # the client sends notifications/cancelled
                record = await lines.wait("cancelled")
    assert mcp(record)["target"] == "wait"


class Confirm(BaseModel):
    ok: bool


async def test_each_2026_input_round_is_a_line_of_its_own() -> None:
    server = make_server(RequestLogging())

    @server.tool()
    async def confirm(ctx: Context) -> str:
        await ctx.elicit("Sure?", Confirm)
        return "done"

    async def accept(request: ElicitRequest) -> AcceptedElicitation[Any]:
        return AcceptedElicitation({"ok": True})

    with captured() as lines:
        async with connect(
            server, protocol_version=MODERN, asking=Asking(elicitation=accept)
        ) as client:
            await client.call_tool("confirm")
    rounds = [f["outcome"] for f in lines.by_method("tools/call")]
    assert rounds == ["input_required", "ok"]


class People:
    async def verify(self, token: str) -> AuthInfo | None:
        return AuthInfo(subject=token, client_id="app", issuer="https://as.example")


async def test_over_streamable_http_the_line_names_the_principal() -> None:
    with captured() as lines, trio.fail_after(TIMEOUT):
        async with serve(make_server(RequestLogging(format="json")), auth=People()) as served:
            client = served.client(authorization="Bearer alice")
            await client.initialize()
            reply = await client.call("login", {"user": "alice", "password": "p"})
    assert reply.result["content"][0]["text"] == "welcome alice"
    (line,) = [
        json.loads(r.getMessage()) for r in lines.records if mcp(r)["method"] == "tools/call"
    ]
    assert line["principal"] == {
        "issuer": "https://as.example",
        "subject": "alice",
        "client": "app",
    }
    # The server's own id of the session (the same in every line of it), never the
    # Mcp-Session-Id header's value: whoever reads the log cannot take the session over.
    assert line["session"] != client.session_id
    assert line["session"] in {f["session"] for f in lines.fields}
    assert line["outcome"] == "ok"
