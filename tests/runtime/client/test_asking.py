"""The client answers what a server asks: elicitation, sampling and roots, in both eras.

Handshake era: trio-mcp's own server (`tests/fixtures/asking_tools.py`, whose tools ask
through the private `Context._request`) in-process and over stdio, and legacy SSE. 2026-07-28:
the multi round-trip loop of `call_tool`, `get_prompt` and `read_resource` against scripted
servers that check each retry on the wire (ids, `inputResponses`, `requestState`). And the
official MCP SDK's server (`tests/fixtures/sdk_asking_server.py`), which asks with requests
under the handshake revisions and with `input_required` results under 2026-07-28, over stdio
and Streamable HTTP.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from tests.fixtures import asking_tools
from tests.helpers import LATEST, MODERN, REPO_ROOT, ScriptedServer, scripted
from tests.http_helpers import serve
from tests.sdk_servers import SDK_ASKING_SERVER, sdk_http_server
from tests.timing import scaled
from trio_mcp import (
    AcceptedElicitation,
    Asking,
    CancelledElicitation,
    Client,
    Context,
    DeclinedElicitation,
    ElicitRequest,
    LocalProtocolError,
    RemoteProtocolError,
    RequestError,
    Root,
    SamplingRequest,
    SamplingResult,
    Server,
    TextContent,
    open_client,
)
from trio_mcp._core.meta import CAPABILITIES

FIXTURES = REPO_ROOT / "tests" / "fixtures"
ASKING_TOOLS = str(FIXTURES / "asking_tools.py")
#: Bounds a test's waits (virtual seconds under the autojump clock, real ones elsewhere).
TIMEOUT = scaled(60)

FORM: dict[str, Any] = {
    "message": "Your details?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "nickname": {"type": "string"},
        },
    },
}
URL: dict[str, Any] = {
    "mode": "url",
    "message": "Sign in, please",
    "url": "https://example.com/connect?x=1",
    "elicitationId": "e-1",
}
SAMPLE: dict[str, Any] = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "A haiku?"}}],
    "maxTokens": 50,
    "systemPrompt": "You are a poet.",
}
ROOTS = [Root("file:///work", "work"), Root("file:///tmp")]


def modern(server: ScriptedServer, **asking: Any) -> AbstractAsyncContextManager[Client]:
    """A client of the scripted `server` under 2026-07-28, answering as `Asking(**asking)`."""
    return scripted(server, protocol_version=MODERN, asking=Asking(**asking))


async def sample(request: SamplingRequest) -> SamplingResult:
    return SamplingResult(TextContent(f"echo: {request.messages[0].text}"), "test-model", "endTurn")


def target(kind: str) -> Any:
    """What `open_client` takes to reach the asking tools over `kind`."""
    if kind == "memory":
        return asking_tools.server
    return [sys.executable, "-m", "trio_mcp", "run", ASKING_TOOLS]


async def ask(client: Client, method: str, params: dict[str, Any] | None = None) -> Any:
    """Have the server send `method` to the client; what the client answered (or its error)."""
    arguments: dict[str, Any] = {"method": method}
    if params is not None:
        arguments["params"] = params
    result = await client.call_tool("ask", arguments)
    assert not result.is_error, result.text
    return result.structured


# -- capabilities ---------------------------------------------------------------------------------


async def test_capabilities_are_declared_only_for_what_has_a_handler() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(asking_tools.server) as client:
            assert (await client.call_tool("capabilities")).structured == {}
        async with open_client(
            asking_tools.server,
            asking=Asking(elicitation=_never_elicit, sampling=sample, roots=[]),
        ) as client:
            assert (await client.call_tool("capabilities")).structured == {
                "elicitation": {"form": {}, "url": {}},
                "sampling": {},
                "roots": {"listChanged": True},
            }
        async with open_client(
            asking_tools.server,
            asking=Asking(elicitation=_never_elicit, elicitation_modes=["form"]),
        ) as client:
            assert (await client.call_tool("capabilities")).structured == {
                "elicitation": {"form": {}}
            }
        # 2025-06-18 has forms only, and names no mode.
        async with open_client(
            asking_tools.server,
            asking=Asking(elicitation=_never_elicit),
            protocol_version="2025-06-18",
        ) as client:
            assert (await client.call_tool("capabilities")).structured == {"elicitation": {}}


async def test_each_modern_request_declares_them_in_its_meta() -> None:
    seen: list[Any] = []

    async def server(message: Any, send: Callable[[Any], Any]) -> None:
        seen.append(message.get("params", {}).get("_meta", {}).get(CAPABILITIES))
        await send({"jsonrpc": "2.0", "id": message["id"], "result": DISCOVERED})

    with trio.fail_after(TIMEOUT):
        async with modern(server, roots=ROOTS, elicitation=_never_elicit) as client:
            assert client.protocol_version == MODERN
    assert seen == [{"elicitation": {"form": {}, "url": {}}, "roots": {}}]


def test_options_are_checked_when_the_client_is_made() -> None:
    with pytest.raises(ValueError, match="elicitation_modes"):
        trio.run(_open, Asking(elicitation=_never_elicit, elicitation_modes=["voice"]))
    with pytest.raises(ValueError, match="elicitation_modes"):
        trio.run(_open, Asking(elicitation=_never_elicit, elicitation_modes=[]))
    with pytest.raises(ValueError, match="file:// URI"):
        trio.run(_open, Asking(roots=[Root("https://example.com")]))
    with pytest.raises(TypeError, match=r"trio_mcp\.Root"):
        trio.run(_open, Asking(roots=["file:///work"]))  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_input_rounds"):
        Asking(max_input_rounds=-1)


async def _open(asking: Asking) -> None:
    async with open_client(asking_tools.server, asking=asking):
        pass


async def _never_elicit(request: ElicitRequest) -> AcceptedElicitation[Any]:
    raise AssertionError(f"not asked: {request}")


# -- elicitation, handshake era -------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "stdio"])
async def test_a_form_elicitation_is_answered_with_the_schemas_defaults(kind: str) -> None:
    asked: list[ElicitRequest] = []

    async def elicit(request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
        asked.append(request)
        return AcceptedElicitation({"age": 41})

    with trio.fail_after(TIMEOUT):
        async with open_client(
            target(kind),
            asking=Asking(elicitation=elicit),
        ) as client:
            answer = await ask(client, "elicitation/create", FORM)
    assert answer == {"result": {"action": "accept", "content": {"name": "John Doe", "age": 41}}}
    assert asked == [ElicitRequest("Your details?", FORM["requestedSchema"])]


async def test_declined_and_cancelled_elicitations() -> None:
    outcomes: list[DeclinedElicitation | CancelledElicitation] = [
        DeclinedElicitation(),
        CancelledElicitation(),
    ]

    async def elicit(request: ElicitRequest) -> DeclinedElicitation | CancelledElicitation:
        return outcomes.pop(0)

    with trio.fail_after(TIMEOUT):
        async with open_client(
            asking_tools.server,
            asking=Asking(elicitation=elicit),
        ) as client:
            assert await ask(client, "elicitation/create", FORM) == {
                "result": {"action": "decline"}
            }
            assert await ask(client, "elicitation/create", FORM) == {"result": {"action": "cancel"}}


async def test_a_url_elicitation_and_its_completion() -> None:
    completed: list[str] = []
    asked: list[ElicitRequest] = []
    answered = trio.Event()

    async def elicit(request: ElicitRequest) -> AcceptedElicitation[None]:
        asked.append(request)
        return AcceptedElicitation({"ignored": True})  # type: ignore[arg-type]  # URL mode drops data

    async def server(message: Any, send: Callable[[Any], Any]) -> None:
        method = message.get("method")
        if method == "initialize":
            await send(_initialized(message))
        elif method == "ping":
            await send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif method == "tools/list":
            await send(
                {"jsonrpc": "2.0", "id": "u1", "method": "elicitation/create", "params": URL}
            )
            await send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
        elif message.get("id") == "u1":
            assert message["result"] == {"action": "accept"}
            complete = "notifications/elicitation/complete"
            for elicitation_id in ("unknown", "e-1", "e-1"):  # only the one asked, once
                await send(
                    {
                        "jsonrpc": "2.0",
                        "method": complete,
                        "params": {"elicitationId": elicitation_id},
                    }
                )
            answered.set()

    with trio.fail_after(TIMEOUT):
        async with scripted(
            server,
            asking=Asking(elicitation=elicit, on_elicitation_complete=completed.append),
        ) as client:
            await client.list_tools()
            await answered.wait()
            await client.ping()  # the notices before its answer have been read
    assert asked == [ElicitRequest(URL["message"], None, "url", URL["url"], "e-1")]
    assert completed == ["e-1"]


def _initialized(message: Any) -> dict[str, Any]:
    result = {"protocolVersion": LATEST, "capabilities": {}, "serverInfo": {"name": "s"}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


async def test_an_undeclared_mode_gets_invalid_params() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(
            asking_tools.server,
            asking=Asking(elicitation=_never_elicit, elicitation_modes=("form",)),
        ) as client:
            answer = await ask(client, "elicitation/create", URL)
    assert answer["error"]["code"] == -32602
    assert "url-mode" in answer["error"]["message"]


async def test_malformed_requests_get_invalid_params_naming_the_field() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(
            asking_tools.server,
            asking=Asking(elicitation=_never_elicit, sampling=sample),
        ) as client:
            bad_form = await ask(client, "elicitation/create", {"message": 5})
            bad_sample = await ask(client, "sampling/createMessage", {"messages": []})
    assert bad_form["error"] == {
        "code": -32602,
        "message": 'Invalid params: elicitation/create needs "message" (a string)',
    }
    assert bad_sample["error"] == {
        "code": -32602,
        "message": 'Invalid params: sampling/createMessage needs "maxTokens" (an integer)',
    }


async def test_what_has_no_handler_is_not_found() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(
            asking_tools.server,
            asking=Asking(sampling=sample),
        ) as client:
            for method in ("elicitation/create", "roots/list"):
                answer = await ask(client, method, FORM)
                assert answer["error"] == {"code": -32601, "message": f"Method not found: {method}"}


# -- sampling and roots, handshake era ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "stdio"])
async def test_a_sampling_request_is_answered(kind: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(
            target(kind),
            asking=Asking(sampling=sample),
        ) as client:
            answer = await ask(client, "sampling/createMessage", SAMPLE)
    assert answer == {
        "result": {
            "role": "assistant",
            "content": {"type": "text", "text": "echo: A haiku?"},
            "model": "test-model",
            "stopReason": "endTurn",
        }
    }


async def test_roots_from_a_list_or_a_function() -> None:
    calls: list[int] = []

    def current() -> list[Root]:
        calls.append(1)
        return ROOTS[:1]

    async def later() -> list[Root]:
        return ROOTS[1:]

    with trio.fail_after(TIMEOUT):
        async with open_client(
            asking_tools.server,
            asking=Asking(roots=ROOTS),
        ) as client:
            assert await ask(client, "roots/list") == {
                "result": {
                    "roots": [{"uri": "file:///work", "name": "work"}, {"uri": "file:///tmp"}]
                }
            }
        async with open_client(
            asking_tools.server,
            asking=Asking(roots=current),
        ) as client:
            assert await ask(client, "roots/list") == {
                "result": {"roots": [{"uri": "file:///work", "name": "work"}]}
            }
            await client.set_roots(later)
            assert await ask(client, "roots/list") == {
                "result": {"roots": [{"uri": "file:///tmp"}]}
            }
    assert calls == [1]


async def test_set_roots_tells_the_server() -> None:
    received: list[Any] = []

    async def server(message: Any, send: Callable[[Any], Any]) -> None:
        received.append(message)
        if message.get("method") == "initialize":
            await send(_initialized(message))
        elif message.get("method") == "ping":
            await send({"jsonrpc": "2.0", "id": message["id"], "result": {}})

    with trio.fail_after(TIMEOUT):
        async with scripted(
            server,
            asking=Asking(roots=[]),
        ) as client:
            await client.set_roots(ROOTS)
            await client.ping()
    methods = [m.get("method") for m in received]
    assert methods == [
        "initialize",
        "notifications/initialized",
        "notifications/roots/list_changed",
        "ping",
    ]
    assert received[0]["params"]["capabilities"] == {"roots": {"listChanged": True}}


async def test_set_roots_needs_roots_declared() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(asking_tools.server) as client:
            with pytest.raises(LocalProtocolError, match="roots=\\[\\.\\.\\.\\]"):
                await client.set_roots(ROOTS)
            async with open_client(
                asking_tools.server,
                asking=Asking(roots=[]),
            ) as other:
                with pytest.raises(ValueError, match="file:// URI"):
                    await other.set_roots([Root("/work")])


async def test_a_roots_function_with_a_bad_root_fails_that_request() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(
            asking_tools.server,
            asking=Asking(roots=lambda: [Root("work")]),
        ) as client:
            answer = await ask(client, "roots/list")
            assert answer["error"]["code"] == -32603
            assert "file:// URI" in answer["error"]["message"]


# -- handlers: errors, concurrency, calling back --------------------------------------------------


async def test_a_failing_handler_is_an_error_answer_and_the_connection_lives_on() -> None:
    async def broken(request: ElicitRequest) -> AcceptedElicitation[Any]:
        raise ValueError("the form fell over")

    async def refusing(request: SamplingRequest) -> SamplingResult:
        raise RequestError("User rejected sampling request", -1)

    async def wrong(request: SamplingRequest) -> Any:
        return {"role": "assistant"}

    with trio.fail_after(TIMEOUT):
        async with open_client(
            asking_tools.server,
            asking=Asking(elicitation=broken, sampling=refusing),
        ) as client:
            failed = await ask(client, "elicitation/create", FORM)
            refused = await ask(client, "sampling/createMessage", SAMPLE)
            assert (await client.call_tool("echo", {"text": "still here"})).text == "still here"
        async with open_client(
            asking_tools.server,
            asking=Asking(sampling=wrong),
        ) as client:
            mistyped = await ask(client, "sampling/createMessage", SAMPLE)
    assert failed["error"] == {
        "code": -32603,
        "message": "Internal error in elicitation/create: ValueError: the form fell over",
    }
    assert refused["error"] == {"code": -1, "message": "User rejected sampling request"}
    assert mistyped["error"]["code"] == -32603
    assert "must return a SamplingResult, not dict" in mistyped["error"]["message"]


async def test_handlers_run_concurrently(autojump_clock: trio.testing.MockClock) -> None:
    both = trio.Event()
    waiting: list[str] = []

    async def elicit(request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
        waiting.append(request.message)
        if len(waiting) == 2:
            both.set()
        await both.wait()  # each waits for the other: only concurrent handlers get past
        return AcceptedElicitation({"who": request.message})

    first = {"message": "first", "requestedSchema": {"type": "object", "properties": {}}}
    second = {**first, "message": "second"}
    with trio.fail_after(TIMEOUT):
        async with open_client(
            asking_tools.server,
            asking=Asking(elicitation=elicit),
        ) as client:
            result = await client.call_tool(
                "ask_both", {"method": "elicitation/create", "first": first, "second": second}
            )
    assert result.structured == {
        "result": [
            {"result": {"action": "accept", "content": {"who": "first"}}},
            {"result": {"action": "accept", "content": {"who": "second"}}},
        ]
    }


@pytest.mark.parametrize("kind", ["memory", "stdio"])
async def test_a_handler_may_call_the_server(kind: str) -> None:
    async def elicit(request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
        echoed = await client.call_tool("echo", {"text": "from inside"})
        return AcceptedElicitation({"name": echoed.text})

    with trio.fail_after(TIMEOUT):
        async with open_client(
            target(kind),
            asking=Asking(elicitation=elicit),
        ) as client:
            answer = await ask(client, "elicitation/create", FORM)
    assert answer["result"]["content"] == {"name": "from inside", "age": 30}


async def test_over_legacy_sse_the_client_answers() -> None:
    async def elicit(request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
        return AcceptedElicitation({})

    with trio.fail_after(TIMEOUT):
        async with (
            serve(asking_tools.server) as served,
            open_client(
                served.base + "/sse",
                asking=Asking(elicitation=elicit),
            ) as client,
        ):
            answer = await ask(client, "elicitation/create", FORM)
    assert answer["result"]["content"] == {"name": "John Doe", "age": 30}


# -- 2026-07-28: the multi round-trip loop --------------------------------------------------------

DISCOVERED = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mrtr", "version": "1"}},
}


class Rounds:
    """A scripted 2026-07-28 server: answers each `tools/call` (or prompts/get, resources/read)
    with the next of `results`, and keeps every request it got."""

    def __init__(self, *results: dict[str, Any]) -> None:
        self.results = list(results)
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, message: Any, send: Callable[[Any], Any]) -> None:
        if message.get("method") == "server/discover":
            await send({"jsonrpc": "2.0", "id": message["id"], "result": DISCOVERED})
        elif "id" in message and "method" in message:
            self.calls.append(message)
            result = self.results.pop(0) if self.results else {"content": []}
            await send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def params(self, index: int) -> dict[str, Any]:
        """The params of call `index`, without their `_meta`."""
        return {k: v for k, v in self.calls[index]["params"].items() if k != "_meta"}


def needs(requests: dict[str, Any], state: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
    if state is not None:
        result["requestState"] = state
    return result


DONE = {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}
STATE = 'AEAD-protected blob "with quotes" \u2028 and ünïcode, not to be touched'


async def test_call_tool_answers_every_input_request_and_sends_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started: list[str] = []
    all_started = trio.Event()

    async def together() -> None:
        # Each handler waits until all three run: only answers given concurrently get past.
        if len(started) == 3:
            all_started.set()
        await all_started.wait()

    async def elicit(request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
        started.append("elicit")
        await together()
        return AcceptedElicitation({"name": "octocat"})

    async def sample_together(request: SamplingRequest) -> SamplingResult:
        started.append("sample")
        await together()
        return await sample(request)

    async def roots() -> list[Root]:
        started.append("roots")
        await together()
        return ROOTS[:1]

    server = Rounds(
        needs(
            {
                "login": {"method": "elicitation/create", "params": FORM},
                "capital": {"method": "sampling/createMessage", "params": SAMPLE},
                "where": {"method": "roots/list"},
            },
            STATE,
        ),
        needs({"again": {"method": "roots/list"}}),  # a second round, without state
        DONE,
    )
    with trio.fail_after(TIMEOUT):
        async with modern(
            server, elicitation=elicit, sampling=sample_together, roots=roots
        ) as client:
            result = await client.call_tool("deploy", {"env": "prod"})
    assert result.text == "done"
    assert [call["method"] for call in server.calls] == ["tools/call"] * 3
    ids = [call["id"] for call in server.calls]
    assert len(set(ids)) == 3  # a fresh id each time
    assert server.params(0) == {"name": "deploy", "arguments": {"env": "prod"}}
    assert server.params(1) == {
        "name": "deploy",
        "arguments": {"env": "prod"},
        "inputResponses": {
            "login": {"action": "accept", "content": {"name": "octocat", "age": 30}},
            "capital": {
                "role": "assistant",
                "content": {"type": "text", "text": "echo: A haiku?"},
                "model": "test-model",
                "stopReason": "endTurn",
            },
            "where": {"roots": [{"uri": "file:///work", "name": "work"}]},
        },
        "requestState": STATE,
    }
    assert server.params(2) == {
        "name": "deploy",
        "arguments": {"env": "prod"},
        "inputResponses": {"again": {"roots": [{"uri": "file:///work", "name": "work"}]}},
    }
    # Every retry still says who the client is and what it can answer.
    capabilities = server.calls[2]["params"]["_meta"][CAPABILITIES]
    assert capabilities == {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}


async def test_a_state_without_input_requests_is_sent_back_at_once() -> None:
    server = Rounds(needs({}, STATE), DONE)
    with trio.fail_after(TIMEOUT):
        async with scripted(server, protocol_version=MODERN) as client:
            assert (await client.call_tool("t")).text == "done"
    # The state exactly as received, and no inputResponses: nothing was asked.
    assert server.params(1) == {"name": "t", "arguments": {}, "requestState": STATE}


async def test_prompts_and_resources_go_through_the_loop_too() -> None:
    asked = {"who": {"method": "elicitation/create", "params": FORM}}
    prompt = {"resultType": "complete", "messages": []}
    read = {"resultType": "complete", "contents": [{"uri": "x://a", "text": "hi"}]}
    server = Rounds(needs(asked, "p"), prompt, needs(asked, "r"), read)

    async def elicit(request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
        return AcceptedElicitation({})

    with trio.fail_after(TIMEOUT):
        async with modern(server, elicitation=elicit) as client:
            assert (await client.get_prompt("greet", {"who": "me"})).messages == ()
            assert (await client.read_resource("x://a")).contents[0].text == "hi"
    answer = {"who": {"action": "accept", "content": {"name": "John Doe", "age": 30}}}
    assert server.params(1) == {
        "name": "greet",
        "arguments": {"who": "me"},
        "inputResponses": answer,
        "requestState": "p",
    }
    assert server.params(3) == {"uri": "x://a", "inputResponses": answer, "requestState": "r"}


async def test_rounds_are_bounded() -> None:
    server = Rounds(*[needs({}, f"s{i}") for i in range(10)])
    with trio.fail_after(TIMEOUT):
        async with modern(server, max_input_rounds=3) as client:
            with pytest.raises(RemoteProtocolError, match="after 3 round"):
                await client.call_tool("t")
            assert len(server.calls) == 4  # the call and three retries
            # The raw request is left alone: it gives the result as it came.
            assert await client.request("tools/call", {"name": "t"}) == needs({}, "s4")


async def test_asking_for_what_was_not_declared_is_a_protocol_error() -> None:
    server = Rounds(needs({"poem": {"method": "sampling/createMessage", "params": SAMPLE}}))
    with trio.fail_after(TIMEOUT):
        async with modern(server, elicitation=_never_elicit) as client:
            with pytest.raises(RemoteProtocolError, match="'poem' \\(sampling/createMessage\\)"):
                await client.call_tool("t")
    assert len(server.calls) == 1  # not sent again


async def test_malformed_input_requests_are_a_protocol_error() -> None:
    server = Rounds(
        needs({"f": {"method": "elicitation/create", "params": {"message": 1}}}),
        {"resultType": "input_required"},
        needs({"x": {"method": "tools/list"}}),
    )
    with trio.fail_after(TIMEOUT):
        async with modern(server, elicitation=_never_elicit) as client:
            with pytest.raises(RemoteProtocolError, match='needs "message"'):
                await client.call_tool("t")
            with pytest.raises(RemoteProtocolError, match="neither inputRequests"):
                await client.call_tool("t")
            with pytest.raises(RemoteProtocolError, match="'tools/list'"):
                await client.call_tool("t")
    assert len(server.calls) == 3


async def test_a_handler_that_raises_ends_the_call_with_its_exception() -> None:
    class BoomError(Exception):
        pass

    cancelled = trio.Event()

    async def elicit(request: ElicitRequest) -> AcceptedElicitation[Any]:
        raise BoomError("no answer")

    async def slow_sample(request: SamplingRequest) -> SamplingResult:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()  # the other answer in the round is abandoned
        raise AssertionError

    server = Rounds(
        needs(
            {
                "slow": {"method": "sampling/createMessage", "params": SAMPLE},
                "fails": {"method": "elicitation/create", "params": FORM},
            },
            "s",
        ),
        DONE,
    )
    with trio.fail_after(TIMEOUT):
        async with modern(server, elicitation=elicit, sampling=slow_sample) as client:
            with pytest.raises(BoomError, match="no answer"):
                await client.call_tool("t")
            assert cancelled.is_set()
            assert (await client.call_tool("t")).text == "done"  # the connection lives on
    assert len(server.calls) == 2
    assert "inputResponses" not in server.params(1)  # the next call is a new one


async def test_a_handshake_era_result_that_asks_for_input_is_refused() -> None:
    async def server(message: Any, send: Callable[[Any], Any]) -> None:
        if message.get("method") == "initialize":
            await send(_initialized(message))
        elif message.get("method") == "tools/call":
            await send({"jsonrpc": "2.0", "id": message["id"], "result": needs({}, "s")})

    with trio.fail_after(TIMEOUT):
        async with scripted(
            server,
            asking=Asking(roots=[]),
        ) as client:
            with pytest.raises(RemoteProtocolError, match="input_required"):
                await client.call_tool("t")


# -- the official SDK's server --------------------------------------------------------------------


class Answering:
    """Handlers for the SDK server's questions, noting each one."""

    def __init__(
        self, side: AcceptedElicitation[dict[str, Any]] | DeclinedElicitation | CancelledElicitation
    ) -> None:
        self.side = side
        self.asked: list[str] = []

    async def elicit(
        self, request: ElicitRequest
    ) -> AcceptedElicitation[dict[str, Any]] | DeclinedElicitation | CancelledElicitation:
        self.asked.append(request.message)
        if request.message == "Who are you?":
            return AcceptedElicitation({"name": "Gaunt"})
        if request.message.startswith("And a title"):
            return AcceptedElicitation({"name": "Colonel-Commissar"})
        return self.side

    async def sample(self, request: SamplingRequest) -> SamplingResult:
        assert request.system_prompt == "You are a poet."
        self.asked.append(request.messages[0].text)
        return SamplingResult(TextContent("old pond, a frog"), "test-model", "endTurn")

    def asking(self) -> Asking:
        return Asking(
            elicitation=self.elicit, sampling=self.sample, roots=[Root("file:///work", "work")]
        )


async def exercise_sdk(client: Client, answering: Answering) -> None:
    backing = json.loads((await client.call_tool("backing")).text)
    assert backing == {"action": "accept", "content": {"side": "imperium", "confident": True}}
    poem = json.loads((await client.call_tool("poem")).text)
    assert poem == {"model": "test-model", "text": "old pond, a frog"}
    roots = json.loads((await client.call_tool("roots")).text)
    assert roots == [{"uri": "file:///work", "name": "work"}]
    everything = json.loads((await client.call_tool("everything")).text)
    assert everything == {"side": "imperium", "poem": "old pond, a frog", "roots": ["file:///work"]}
    greeted = await client.call_tool("greet")  # two rounds: the second question needs the first
    assert greeted.text == "Hail, Colonel-Commissar Gaunt"
    assert answering.asked[-2:] == ["Who are you?", "And a title for Gaunt?"]


@pytest.mark.slow
@pytest.mark.parametrize("version", [LATEST, MODERN])
async def test_the_sdk_server_asks_over_stdio(version: str) -> None:
    answering = Answering(AcceptedElicitation({"confident": True}))
    with trio.fail_after(TIMEOUT):
        async with open_client(
            [sys.executable, SDK_ASKING_SERVER], protocol_version=version, asking=answering.asking()
        ) as client:
            assert client.protocol_version == version
            await exercise_sdk(client, answering)
            answering.side = DeclinedElicitation()
            declined = json.loads((await client.call_tool("backing")).text)
            assert declined == {"action": "decline"}
            answering.side = CancelledElicitation()
            cancelled = json.loads((await client.call_tool("backing")).text)
            assert cancelled == {"action": "cancel"}


@pytest.mark.slow
@pytest.mark.parametrize("version", [LATEST, MODERN])
async def test_the_sdk_server_asks_over_streamable_http(version: str) -> None:
    # Handshake era: its requests come on the SSE stream of the POST that carries the call.
    answering = Answering(AcceptedElicitation({"confident": True}))
    with trio.fail_after(TIMEOUT):
        async with (
            sdk_http_server(SDK_ASKING_SERVER) as url,
            open_client(url, protocol_version=version, asking=answering.asking()) as client,
        ):
            assert client.protocol_version == version
            await exercise_sdk(client, answering)


async def test_a_request_tied_to_no_call_comes_on_the_get_stream() -> None:
    # The SDK sends a request that belongs to no call on the session's GET stream, which a
    # client with handlers opens once the session is initialized.
    with trio.fail_after(TIMEOUT):
        async with (
            sdk_http_server(SDK_ASKING_SERVER) as url,
            open_client(
                url,
                asking=Asking(roots=[Root("file:///aside")]),
            ) as client,
        ):
            aside = await client.call_tool("roots_aside")
    assert json.loads(aside.text) == ["file:///aside"]


async def test_a_server_without_a_get_stream_is_let_be(caplog: pytest.LogCaptureFixture) -> None:
    # trio-mcp's server answers GET with 405: the client carries on, saying nothing above debug.
    with trio.fail_after(TIMEOUT):
        async with (
            serve(asking_tools.server) as served,
            open_client(
                served.url,
                asking=Asking(roots=ROOTS),
            ) as client,
        ):
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
            assert (await client.call_tool("capabilities")).structured == {
                "roots": {"listChanged": True}
            }
    assert not [r for r in caplog.records if r.levelno > logging.DEBUG and "GET" in r.message]


async def test_cancelling_the_call_cancels_the_answers_it_waits_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ended = trio.Event()

    async def stuck(request: ElicitRequest) -> AcceptedElicitation[Any]:
        try:
            await trio.sleep_forever()
        finally:
            ended.set()
        raise AssertionError

    server = Rounds(needs({"q": {"method": "elicitation/create", "params": FORM}}, "s"), DONE)
    with trio.fail_after(TIMEOUT):
        async with modern(server, elicitation=stuck) as client:
            with trio.move_on_after(1) as scope:
                await client.call_tool("t")
            assert scope.cancelled_caught
            assert ended.is_set()
            assert client.in_flight == 0
            assert (await client.call_tool("t")).text == "done"
    assert len(server.calls) == 2  # the cancelled call was not sent again
    assert "inputResponses" not in server.params(1)


# -- trio-mcp's own server, asking as a tool author does ------------------------------------------


@asynccontextmanager
async def reach(kind: str) -> AsyncIterator[Any]:
    """What `open_client` takes to reach the asking tools over `kind`, HTTP included."""
    if kind in ("memory", "stdio"):
        yield target(kind)
    else:
        async with serve(asking_tools.server) as served:
            yield served.url if kind == "http" else served.base + "/sse"


@pytest.mark.parametrize("version", [LATEST, MODERN])
@pytest.mark.parametrize("kind", ["memory", "stdio", "http", "sse"])
async def test_a_trio_mcp_tool_asks_in_both_eras(kind: str, version: str) -> None:
    completed: list[str] = []
    asked: list[str] = []

    async def elicit(request: ElicitRequest) -> AcceptedElicitation[Any] | DeclinedElicitation:
        asked.append(request.mode)
        return (
            AcceptedElicitation(None) if request.mode == "url" else AcceptedElicitation({"age": 41})
        )

    with trio.fail_after(TIMEOUT):
        async with (
            reach(kind) as where,
            open_client(
                where,
                protocol_version=version,
                asking=Asking(
                    elicitation=elicit,
                    sampling=sample,
                    roots=ROOTS,
                    on_elicitation_complete=completed.append,
                ),
            ) as client,
        ):
            assert client.protocol_version == version
            details = await client.call_tool("details")
            everything = await client.call_tool("everything")
            signed = await client.call_tool("sign_in")
            await client.call_tool("echo", {"text": "after"})  # the notices before it are read
    assert details.structured == {"action": "accept", "data": {"name": "John Doe", "age": 41}}
    assert everything.structured == {
        "details": {"action": "accept", "data": {"name": "John Doe", "age": 41}},
        "reply": {"text": "echo: A haiku?", "model": "test-model"},
        "roots": ["file:///work", "file:///tmp"],
    }
    assert signed.structured is not None
    assert signed.structured["action"] == "accept"
    if version == LATEST:
        # Handshake era: the completion comes on the connection; 2026-07-28 has none.
        assert completed == [signed.structured["data"]]
    assert "url" in asked


async def test_a_trio_mcp_tool_hears_a_decline_in_both_eras() -> None:
    async def decline(request: ElicitRequest) -> DeclinedElicitation:
        return DeclinedElicitation()

    for version in (LATEST, MODERN):
        with trio.fail_after(TIMEOUT):
            async with open_client(
                asking_tools.server,
                protocol_version=version,
                asking=Asking(elicitation=decline),
            ) as client:
                assert (await client.call_tool("details")).structured == {"action": "declined"}


async def test_set_roots_reaches_the_servers_roots_handler() -> None:
    server = Server("roots-watcher")
    heard: list[list[str]] = []
    changed = trio.Event()

    @server.on_roots_changed
    async def roots_changed(ctx: Context) -> None:
        heard.append([root.uri for root in await ctx.list_roots()])
        changed.set()

    with trio.fail_after(TIMEOUT):
        async with open_client(
            server,
            asking=Asking(roots=ROOTS[:1]),
        ) as client:
            await client.set_roots(ROOTS)
            await changed.wait()
    assert heard == [["file:///work", "file:///tmp"]]
