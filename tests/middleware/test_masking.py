"""`ErrorMasking`: unexpected errors' details hidden from clients, logged with a reference."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
import trio

from tests.http_helpers import serve
from trio_mcp import Context, RequestError, Server, ToolError
from trio_mcp.middleware import CallNext, ErrorMasking, Middleware, ResolvedRequest
from trio_mcp.testing import connect

TIMEOUT = 30
MODERN = "2026-07-28"
MASKED = re.compile(r"Internal error in (tool|resource|prompt) \S+ \(reference ([0-9a-f]{8})\)")


def make_server(*middleware: Any, **options: Any) -> Server:
    server = Server("masked", middleware=list(middleware), **options)

    @server.tool()
    def secret() -> str:
        raise RuntimeError("password=hunter2")

    @server.tool()
    def refuse() -> str:
        raise ToolError("not today")

    @server.tool()
    def fine(x: int) -> int:
        return x

    @server.resource("vault://{name}")
    def vault(name: str) -> str:
        raise KeyError(f"key hunter2 for {name}")

    @server.prompt()
    def leak(who: str) -> str:
        raise ValueError(f"hunter2 of {who}")

    return server


def reference_of(text: str) -> str:
    match = MASKED.fullmatch(text)
    assert match, text
    return match.group(2)


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
async def test_unexpected_errors_are_masked_and_logged_with_a_reference(
    version: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, "trio_mcp.errors")
    async with connect(make_server(ErrorMasking()), protocol_version=version) as client:
        secret = await client.call_tool("secret")
        refused = await client.call_tool("refuse")
        fine = await client.call_tool("fine", {"x": 3})
        with pytest.raises(RequestError) as read:
            await client.read_resource("vault://a")
        with pytest.raises(RequestError) as got:
            await client.get_prompt("leak", {"who": "me"})
    assert secret.is_error
    assert "hunter2" not in secret.text
    tool_ref = reference_of(secret.text)
    # What the tool said on purpose, and a good result, pass as they are.
    assert refused.is_error
    assert refused.text == "not today"
    assert fine.structured == {"result": 3}
    # A read and a prompt have no isError: -32603 with the masked message, data kept.
    assert read.value.code == -32603
    assert "hunter2" not in read.value.message
    read_ref = reference_of(read.value.message)
    assert read.value.data == {"uri": "vault://a"}
    assert got.value.code == -32603
    prompt_ref = reference_of(got.value.message)
    # The log has the details, under the same reference as the client's message.
    lines = [r.getMessage() for r in caplog.records if r.name == "trio_mcp.errors"]
    assert len(lines) == 3
    assert any(line.startswith(f"[{tool_ref}] tool secret raised RuntimeError") for line in lines)
    assert any(f"[{read_ref}] resource vault://a raised KeyError" in line for line in lines)
    assert any(f"[{prompt_ref}] prompt leak raised ValueError: hunter2" in line for line in lines)
    assert all("hunter2" in line for line in lines)
    assert len({tool_ref, read_ref, prompt_ref}) == 3


async def test_middleware_inside_sees_the_details_those_outside_do_not() -> None:
    seen: dict[str, list[str]] = {"outside": [], "inside": []}

    def watcher(where: str) -> Middleware:
        class Watch(Middleware):
            async def on_call_tool(
                self, request: ResolvedRequest, call_next: CallNext
            ) -> dict[str, Any]:
                result = await call_next(request)
                seen[where].append(result["content"][0]["text"])
                return result

        return Watch()

    server = make_server(watcher("outside"), ErrorMasking(), watcher("inside"))
    async with connect(server) as client:
        await client.call_tool("secret")
    assert seen["inside"] == ["RuntimeError: password=hunter2"]
    reference_of(seen["outside"][0])


async def test_what_a_middleware_inside_raises_is_masked_and_its_traceback_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Buggy(Middleware):
        async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
            if request.method == "tools/call":
                raise ZeroDivisionError("hunter2")
            return await call_next(request)

    caplog.set_level(logging.ERROR, "trio_mcp.errors")
    async with connect(make_server(ErrorMasking(), Buggy())) as client:
        with pytest.raises(RequestError) as failed:
            await client.call_tool("fine", {"x": 1})
    assert failed.value.code == -32603
    assert failed.value.message.startswith("Internal error in tools/call (reference ")
    (record,) = [r for r in caplog.records if r.name == "trio_mcp.errors"]
    assert record.exc_info is not None  # nobody else logged this one
    assert "ZeroDivisionError: hunter2" in record.getMessage()


async def test_without_a_reference_the_message_is_the_flags_and_both_can_be_used() -> None:
    async with connect(make_server(ErrorMasking(reference=False))) as client:
        plain = await client.call_tool("secret")
    assert plain.text == "Internal error in tool secret"
    # The server's flag masks at the error boundary; the middleware still adds its reference.
    flagged = make_server(ErrorMasking(), mask_error_details=True)
    async with connect(flagged) as client:
        both = await client.call_tool("secret")
    reference_of(both.text)
    async with connect(make_server(mask_error_details=True)) as client:
        flag = await client.call_tool("secret")
    assert flag.text == "Internal error in tool secret"


async def test_a_tool_that_becomes_a_task_has_its_failure_masked() -> None:
    server = make_server(ErrorMasking())

    @server.tool(task=0)
    async def background(ctx: Context) -> str:
        await trio.lowlevel.checkpoint()
        raise OSError("disk hunter2 is full")

    async with connect(server, tasks=True) as client:
        result = await client.call_tool("background")
    assert result.is_error
    assert "hunter2" not in result.text
    reference_of(result.text)


async def test_over_streamable_http_the_client_gets_the_masked_message() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(make_server(ErrorMasking())) as served:
            client = served.client()
            await client.initialize()
            called = await client.call("secret")
            read = await client.request("resources/read", {"uri": "vault://b"})
    reference_of(called.result["content"][0]["text"])
    assert called.result["isError"] is True
    error = read.last["error"]
    assert error["code"] == -32603
    reference_of(error["message"])
    assert "hunter2" not in read.response.text + called.response.text
