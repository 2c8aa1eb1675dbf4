"""Interop: our server asks the official `mcp` SDK client (elicitation, sampling, roots).

The SDK client answers with its own callbacks (`elicitation_callback`, `sampling_callback`,
`list_roots_callback`; a callback given declares the capability). The server is
`tests/fixtures/asking_server.py`: over stdio as a subprocess, and in this process on a
loopback port (`tests/http_helpers.serve`) for legacy HTTP+SSE and for Streamable HTTP. The
SDK runs on anyio: here on trio, and once on asyncio (over stdio), so the client's side uses
anyio's primitives.

Two eras. With `mode="legacy"` the SDK settles on 2025-11-25, and each question is a request
of the server's (on the connection, on the SSE event stream, or on the asking call's POST
stream). With `mode="auto"` it settles on 2026-07-28, and each question comes back in an
`input_required` result that the SDK answers with the same callbacks and sends again with
`inputResponses` and the `requestState` (its `mcp/client/_input_required.py`). The legacy
HTTP+SSE transport is a handshake-era transport: it is tested in that era only.

Every SDK transport is wrapped in a tap (`tapped`) that keeps the JSON-RPC messages it carries
each way, so the tests check the wire as well as what the tool and the callbacks saw: which
questions came as requests, the `notifications/cancelled` each side sent, the rounds of a
2026-07-28 call.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import anyio
import pytest
import trio
from mcp import Client, MCPError
from mcp.client.context import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitCompleteNotification,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    Root,
    TextContent,
)

from tests.fixtures import asking_server
from tests.http_helpers import serve
from tests.stdio_peer import ROOT
from tests.timing import scaled
from trio_mcp import Timeouts

pytestmark = pytest.mark.slow  # every test here starts processes: seconds each

#: Bounds one test: spawning or serving, the SDK session, its calls and its shutdown.
TIMEOUT = scaled(60)
FIXTURE = str(ROOT / "tests" / "fixtures" / "asking_server.py")
#: SDK connect mode -> the version it settles on with our server.
VERSIONS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
#: (transport, SDK mode): stdio and Streamable HTTP in both eras, legacy HTTP+SSE in its own.
CONNECTIONS = [
    ("stdio", "legacy"),
    ("stdio", "auto"),
    ("streamable", "legacy"),
    ("streamable", "auto"),
    ("sse", "legacy"),
]
HANDSHAKE_CONNECTIONS = [c for c in CONNECTIONS if c[1] == "legacy"]
#: What the SDK's elicitation callback fills in (squads left out: the form's default applies).
FILLED = {"commander": "Yarrick", "side": "chaos"}
SIGN_IN_URL = asking_server.SIGN_IN_URL
COMPLETE = "notifications/elicitation/complete"
ROOTS = [Root(uri="file:///work/cadia", name="cadia")]
MISSING_SAMPLING = (
    "the client did not declare the 'sampling' capability, so the server cannot ask it for that"
)
TIMED_OUT = (
    f"the client did not answer elicitation/create within {asking_server.IMPATIENT_SECONDS:g} s"
)


# -- the wire, as the SDK's transport carries it ---------------------------------------------------


@dataclass
class Wire:
    """Every JSON-RPC message an SDK transport carried: `received` from the server, `sent` to it."""

    received: list[dict[str, Any]] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)

    def server_requests(self) -> list[dict[str, Any]]:
        """The requests the server sent the client."""
        return [m for m in self.received if "method" in m and "id" in m]

    def cancelled(self, messages: list[dict[str, Any]]) -> list[Any]:
        """The request ids `notifications/cancelled` named, in `messages`."""
        return [
            m["params"]["requestId"]
            for m in messages
            if m.get("method") == "notifications/cancelled"
        ]

    def rounds(self, tool: str) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Each `tools/call` of `tool` the client sent, with the answer it got (None if none)."""
        answers = {m["id"]: m for m in self.received if "method" not in m and "id" in m}
        return [
            (m, answers.get(m["id"]))
            for m in self.sent
            if m.get("method") == "tools/call" and m["params"]["name"] == tool
        ]


def _as_dict(item: object) -> dict[str, Any] | None:
    if isinstance(item, SessionMessage):
        dumped: dict[str, Any] = item.message.model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
        return dumped
    return None


class _Tap:
    """One of the SDK's streams, keeping each message that passes through it in `kept`."""

    def __init__(self, inner: Any, kept: list[dict[str, Any]]) -> None:
        self._inner = inner
        self._kept = kept

    def __getattr__(self, name: str) -> Any:  # last_context, for the context-carrying streams
        return getattr(self._inner, name)

    def _keep(self, item: object) -> None:
        message = _as_dict(item)
        if message is not None:
            self._kept.append(message)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        result: bool | None = await self._inner.__aexit__(kind, exc, tb)
        return result


class _TapRead(_Tap):
    """The SDK's read stream, keeping each message it yields."""

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._keep(item)
        return item

    def __aiter__(self) -> _TapRead:
        return self

    async def __anext__(self) -> Any:
        item = await self._inner.__anext__()
        self._keep(item)
        return item


class _TapWrite(_Tap):
    """The SDK's write stream, keeping each message sent through it."""

    async def send(self, item: Any, /) -> None:
        self._keep(item)
        await self._inner.send(item)


@asynccontextmanager
async def tapped(
    transport: AbstractAsyncContextManager[tuple[Any, Any]], wire: Wire
) -> AsyncIterator[tuple[Any, Any]]:
    """An SDK transport whose messages, both ways, are kept in `wire`."""
    async with transport as (read, write):
        yield _TapRead(read, wire.received), _TapWrite(write, wire.sent)


# -- the SDK client's side: its callbacks, and a connection to our server --------------------------


class Answerer:
    """The SDK callbacks, keeping what they were asked.

    `action` is what the elicitation callback does: "accept" (with `content`), "decline",
    "cancel", or "hold": wait until cancelled (`holding` is set once it waits, `released`
    once it was cancelled).
    """

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = FILLED if content is None else content
        self.forms: list[ElicitRequestFormParams] = []
        self.urls: list[ElicitRequestURLParams] = []
        self.samplings: list[CreateMessageRequestParams] = []
        self.roots_asked = 0
        #: When set, the sampling callback answers with this error (the user said no).
        self.refusal: ErrorData | None = None
        self.holding = anyio.Event()
        self.released = anyio.Event()

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        if isinstance(params, ElicitRequestURLParams):
            self.urls.append(params)
            return ElicitResult(action="accept")
        self.forms.append(params)
        if self.action == "hold":
            self.holding.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.released.set()
        if self.action == "accept":
            return ElicitResult(action="accept", content=dict(self.content))
        return ElicitResult(action=self.action)

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        self.samplings.append(params)
        if self.refusal is not None:
            return self.refusal
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="Waaagh!"), model="sdk-test"
        )

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.roots_asked += 1
        return ListRootsResult(roots=ROOTS)

    def callbacks(self, *, sampling: bool = True) -> dict[str, Any]:
        """The Client options that install these callbacks (and so declare the capabilities)."""
        options: dict[str, Any] = {
            "elicitation_callback": self.elicit,
            "list_roots_callback": self.roots,
        }
        if sampling:
            options["sampling_callback"] = self.sample
        return options


@dataclass
class Connection:
    client: Client
    wire: Wire
    #: The server's stderr (stdio only), once the connection is closed.
    stderr: str = ""


@asynccontextmanager
async def connect(
    transport: str,
    mode: str,
    answerer: Answerer,
    *,
    impatient: bool = False,
    sampling: bool = True,
    command: list[str] | None = None,
    **client_options: Any,
) -> AsyncIterator[Connection]:
    """The SDK client with `answerer`'s callbacks, connected to the asking fixture server.

    `impatient` serves `impatient_server` (it gives up on an answer after 0.5 s); over stdio,
    `command` runs `python <command>` instead of the fixture. `client_options` go to `Client`.
    """
    wire = Wire()
    options = {"mode": mode, **answerer.callbacks(sampling=sampling), **client_options}
    if transport == "stdio":
        target = FIXTURE + (":impatient_server" if impatient else "")
        args = command or ["-m", "trio_mcp", "run", target]
        params = StdioServerParameters(command=sys.executable, args=args, cwd=ROOT)
        with tempfile.TemporaryFile("w+") as errlog:
            connection = Connection(
                Client(tapped(stdio_client(params, errlog=errlog), wire), **options), wire
            )
            async with connection.client:
                assert connection.client.protocol_version == VERSIONS[mode]
                yield connection
            errlog.seek(0)
            connection.stderr = errlog.read()
        assert_no_unexpected_traceback(connection.stderr)
        return
    server = asking_server.build(
        timeouts=Timeouts(ask=asking_server.IMPATIENT_SECONDS if impatient else 60)
    )
    async with serve(server) as served:
        url = served.url if transport == "streamable" else served.base + "/sse"
        sdk_transport = (
            streamable_http_client(url) if transport == "streamable" else sse_client(url)
        )
        connection = Connection(Client(tapped(sdk_transport, wire), **options), wire)
        async with connection.client:
            assert connection.client.protocol_version == VERSIONS[mode]
            yield connection


def assert_no_unexpected_traceback(stderr: str) -> None:
    """No traceback on the server's side (a question that times out is a plain error too)."""
    assert "Traceback" not in stderr, stderr


async def journal(client: Client, entries: int) -> list[str]:
    """The server's journal once it has `entries` entries (a cancelled tool writes its own
    entry as it unwinds, which may come a moment after the client heard of it)."""
    while True:
        result = await client.call_tool("journal", {})
        assert result.structured_content is not None
        found: list[str] = result.structured_content["result"]
        if len(found) >= entries:
            return found
        await anyio.sleep(0.02)


async def released(answerer: Answerer) -> None:
    """Wait until the held elicitation callback was cancelled (TIMEOUT at most)."""
    with anyio.move_on_after(TIMEOUT):
        await answerer.released.wait()
    assert answerer.released.is_set(), "the held SDK callback was never cancelled"


def only_text(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


# -- a tool that elicits, samples and lists roots completes ----------------------------------------


def assert_mustered(result: Any) -> None:
    """The result of `muster` answered by an `Answerer()`."""
    assert not result.is_error, result
    assert result.structured_content == {
        "outcome": "Accepted",
        "commander": "Yarrick",
        "side": "chaos",
        "squads": 3,  # left out of the answer: the form's default
        "cry": "Waaagh!",
        "model": "sdk-test",
        "roots": [{"uri": "file:///work/cadia", "name": "cadia"}],
    }


@pytest.mark.parametrize(("transport", "mode"), CONNECTIONS)
async def test_a_tool_that_elicits_samples_and_lists_roots_completes(
    transport: str, mode: str
) -> None:
    answerer = Answerer()
    with trio.fail_after(TIMEOUT):
        async with connect(transport, mode, answerer) as connection:
            result = await connection.client.call_tool("muster", {"battle": "Armageddon"})
            assert await journal(connection.client, 1) == ["done"]
    wire = connection.wire
    assert_mustered(result)
    (form,) = answerer.forms
    assert form.message == "Muster your army for Armageddon"
    assert form.requested_schema["properties"] == {
        "commander": {"type": "string", "default": "Creed", "description": "Who leads"},
        "side": {"type": "string", "enum": ["imperium", "chaos"], "default": "imperium"},
        "squads": {
            "type": "integer",
            "default": 3,
            "minimum": 1,
            "maximum": 10,
            "description": "Squads to field",
        },
    }
    (sampling,) = answerer.samplings
    assert sampling.max_tokens == 40
    assert sampling.system_prompt == "Be brief."
    (message,) = sampling.messages
    assert message.role == "user"
    assert message.content == TextContent(
        type="text", text="A battle cry for Yarrick at Armageddon"
    )
    assert answerer.roots_asked == 1

    asked = ["elicitation/create", "sampling/createMessage", "roots/list"]
    rounds = wire.rounds("muster")
    if mode == "legacy":  # three requests of the server's, one call
        assert [m["method"] for m in wire.server_requests()] == asked
        assert len(rounds) == 1
        return
    # 2026-07-28: no request of the server's; the call was sent four times, each question in
    # an input_required result of its own (keys numbered in asking order), answered in the
    # next attempt, which echoes the state it was given.
    assert wire.server_requests() == []
    assert len(rounds) == 4
    sent_state, open_keys = None, set[str]()
    for (call, answer), method in zip(rounds, [*asked, None], strict=True):
        assert answer is not None
        params = call["params"]
        assert params.get("requestState") == sent_state
        assert set(params.get("inputResponses", {})) == open_keys
        outcome = answer["result"]
        if method is None:
            assert outcome.get("resultType", "complete") == "complete"
            break
        assert outcome["resultType"] == "input_required"
        ((key, request),) = outcome["inputRequests"].items()
        assert key == f"{method.split('/')[0]}-{asked.index(method) + 1}"
        assert request["method"] == method
        sent_state, open_keys = outcome["requestState"], {key}


def test_the_sdk_on_asyncio_answers_over_stdio() -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            for mode in VERSIONS:
                async with connect("stdio", mode, Answerer()) as connection:
                    assert_mustered(await connection.client.call_tool("muster", {}))

    anyio.run(main, backend="asyncio")


@pytest.mark.parametrize(("transport", "mode"), CONNECTIONS)
async def test_gathered_questions_are_answered_in_one_round(transport: str, mode: str) -> None:
    answerer = Answerer()
    with trio.fail_after(TIMEOUT):
        async with connect(transport, mode, answerer) as connection:
            result = await connection.client.call_tool("council", {})
    assert result.structured_content == {
        "outcome": "Accepted",
        "cry": "Waaagh!",
        "roots": ["file:///work/cadia"],
    }
    assert (len(answerer.forms), len(answerer.samplings), answerer.roots_asked) == (1, 1, 1)
    rounds = connection.wire.rounds("council")
    if mode == "legacy":  # asked one after another, as requests
        assert len(connection.wire.server_requests()) == 3
        assert len(rounds) == 1
        return
    # 2026-07-28: one input_required result with the three, under the tool's keys; one retry.
    first, retry = rounds
    assert first[1] is not None
    questions = first[1]["result"]["inputRequests"]
    assert {key: q["method"] for key, q in questions.items()} == {
        "army": "elicitation/create",
        "cry": "sampling/createMessage",
        "roots": "roots/list",
    }
    assert set(retry[0]["params"]["inputResponses"]) == {"army", "cry", "roots"}
    assert retry[0]["params"]["requestState"] == first[1]["result"]["requestState"]


@pytest.mark.parametrize(("transport", "mode"), CONNECTIONS)
async def test_url_mode_elicitation_and_its_completion(transport: str, mode: str) -> None:
    answerer = Answerer()
    surfaced: list[Any] = []

    async def on_message(message: Any) -> None:
        surfaced.append(message)

    with trio.fail_after(TIMEOUT):
        async with connect(transport, mode, answerer, message_handler=on_message) as connection:
            result = await connection.client.call_tool("sign_in", {})
            await connection.client.call_tool("journal", {})  # anything sent before it has come
    (asked,) = answerer.urls
    assert (asked.message, asked.url) == ("Sign in to the Administratum", SIGN_IN_URL)
    assert not result.is_error
    assert only_text(result).startswith("signed in: ")
    chosen = only_text(result).removeprefix("signed in: ")
    notices = [m for m in connection.wire.received if m.get("method") == COMPLETE]
    if mode == "legacy":  # 2025-11-25: the id in the request, and the completion notice
        assert asked.elicitation_id == chosen
        assert [n["params"] for n in notices] == [{"elicitationId": chosen}]
        assert [
            m.params.elicitation_id for m in surfaced if isinstance(m, ElicitCompleteNotification)
        ] == [chosen]
        return
    # 2026-07-28 removed both (its changelog, item 11): the client learns the outcome by
    # retrying, so the server sends neither the id nor the notice.
    assert asked.elicitation_id is None
    ((_, answer), _) = connection.wire.rounds("sign_in")
    assert answer is not None
    (question,) = answer["result"]["inputRequests"].values()
    assert "elicitationId" not in question["params"]
    assert notices == []


# -- declined and cancelled elicitations ----------------------------------------------------------


@pytest.mark.parametrize("action", ["decline", "cancel"])
@pytest.mark.parametrize(("transport", "mode"), CONNECTIONS)
async def test_declined_and_cancelled_elicitations_reach_the_tool(
    transport: str, mode: str, action: str
) -> None:
    answerer = Answerer(action)
    with trio.fail_after(TIMEOUT):
        async with connect(transport, mode, answerer) as connection:
            result = await connection.client.call_tool("muster", {})
            entries = await journal(connection.client, 1)
    record = {"decline": "Declined", "cancel": "Cancelled"}[action]
    assert not result.is_error
    assert result.structured_content == {"outcome": record}
    assert entries == [record.lower()]
    assert len(answerer.forms) == 1
    assert answerer.samplings == []  # the tool stopped at the answer
    assert answerer.roots_asked == 0


# -- a client without the sampling callback --------------------------------------------------------


@pytest.mark.parametrize(("transport", "mode"), CONNECTIONS)
async def test_a_client_without_sampling_gets_the_missing_capability_named(
    transport: str, mode: str
) -> None:
    answerer = Answerer()
    with trio.fail_after(TIMEOUT):
        async with connect(transport, mode, answerer, sampling=False) as connection:
            if mode == "legacy":  # no error code for it in this era: an isError result
                result = await connection.client.call_tool("muster", {})
                assert result.is_error
                assert only_text(result) == MISSING_SAMPLING
            else:  # 2026-07-28: -32021 MissingRequiredClientCapability, naming what is missing
                with pytest.raises(MCPError) as refused:
                    await connection.client.call_tool("muster", {})
                assert refused.value.error.code == -32021
                assert MISSING_SAMPLING in refused.value.error.message
                assert refused.value.error.data == {"requiredCapabilities": {"sampling": {}}}
            assert await journal(connection.client, 1) == [f"missing: {MISSING_SAMPLING}"]
    wire = connection.wire
    # The SDK declared no sampling capability, and the server asked nothing it could not answer.
    declared = [
        m["params"]["capabilities"] for m in wire.sent if m.get("method") == "initialize"
    ] or [
        m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        for m in wire.sent
        if m.get("method") == "tools/call"
    ]
    assert declared
    assert all("sampling" not in c and "elicitation" in c for c in declared)
    assert [m["method"] for m in wire.server_requests()] == (
        ["elicitation/create"] if mode == "legacy" else []
    )
    assert len(answerer.forms) == 1  # it elicited first; the sampling was never sent


# -- a client that does not answer in time ---------------------------------------------------------

NO_SERVER_TIMEOUT_IN_2026 = (
    "2026-07-28 has no server-side wait to time out: the question travels in an input_required "
    "result and the server holds nothing open while the SDK callback answers (ask_timeout is a "
    "handshake-era bound; docs/reference.md, Asking the client)"
)


@pytest.mark.parametrize(
    ("transport", "mode"),
    [
        *HANDSHAKE_CONNECTIONS,
        pytest.param("stdio", "auto", marks=pytest.mark.skip(reason=NO_SERVER_TIMEOUT_IN_2026)),
    ],
)
async def test_a_question_the_client_does_not_answer_times_out_and_is_cancelled(
    transport: str, mode: str
) -> None:
    answerer = Answerer("hold")
    with trio.fail_after(TIMEOUT):
        async with connect(transport, mode, answerer, impatient=True) as connection:
            result = await connection.client.call_tool("muster", {})
            # The server's notifications/cancelled reached the SDK, which cancelled the callback.
            await released(answerer)
            entries = await journal(connection.client, 1)
    assert result.is_error
    assert only_text(result) == TIMED_OUT
    assert entries == [f"timeout: {TIMED_OUT}"]
    wire = connection.wire
    (asked,) = wire.server_requests()
    assert asked["method"] == "elicitation/create"
    assert wire.cancelled(wire.received) == [asked["id"]]
    assert not any("id" in m and m["id"] == asked["id"] and "method" not in m for m in wire.sent)


# -- the client cancels its call while its callback is still answering -----------------------------


@pytest.mark.parametrize(("transport", "mode"), CONNECTIONS)
async def test_cancelling_the_call_while_the_callback_answers_cancels_the_question(
    transport: str, mode: str
) -> None:
    answerer = Answerer("hold")
    with trio.fail_after(TIMEOUT):
        async with connect(transport, mode, answerer) as connection:
            client = connection.client
            with trio.CancelScope() as call_scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "muster", {})
                    await answerer.holding.wait()
                    call_scope.cancel()  # how an SDK user gives up on a call
            assert call_scope.cancelled_caught
            await released(answerer)
            # The session goes on: the same tool, answered this time, completes.
            answerer.action = "accept"
            after = await client.call_tool("muster", {})
            entries = await journal(client, 2 if mode == "legacy" else 1)
    assert after.structured_content is not None
    assert after.structured_content["outcome"] == "Accepted"
    wire = connection.wire
    if mode == "legacy":
        # The SDK cancelled its call; the server cancelled the tool and, with it, its question.
        (first_call, _), *_ = wire.rounds("muster")
        (asked, *_) = wire.server_requests()
        assert asked["method"] == "elicitation/create"
        assert first_call["id"] in wire.cancelled(wire.sent)
        assert wire.cancelled(wire.received) == [asked["id"]]
        assert entries == ["cancelled", "done"]
        return
    # 2026-07-28: the question came in the first attempt's input_required result; the callback
    # ran in the SDK alone, so cancelling it sent nothing, and the server held nothing open.
    assert wire.server_requests() == []
    assert wire.cancelled(wire.sent) == wire.cancelled(wire.received) == []
    assert entries == ["done"]


READ_TIMEOUT_SPARES_CALLBACKS_IN_2026 = (
    "SDK 2.3.0 limitation: under 2026-07-28 read_timeout_seconds bounds each tools/call round "
    "trip, not the callbacks its input_required driver runs between rounds "
    "(mcp/client/_input_required.py: _dispatch_all awaits them with no deadline), so a "
    "callback that never answers is never timed out; cancel the call instead (tested above)"
)


@pytest.mark.parametrize(
    ("transport", "mode"),
    [
        *HANDSHAKE_CONNECTIONS,
        pytest.param(
            "stdio", "auto", marks=pytest.mark.skip(reason=READ_TIMEOUT_SPARES_CALLBACKS_IN_2026)
        ),
    ],
)
async def test_the_sdk_read_timeout_cancels_the_call_and_the_server_its_question(
    transport: str, mode: str
) -> None:
    answerer = Answerer("hold")
    with trio.fail_after(TIMEOUT):
        async with connect(transport, mode, answerer) as connection:
            client = connection.client
            with pytest.raises(MCPError) as timed_out:
                await client.call_tool("muster", {}, read_timeout_seconds=1)
            assert answerer.holding.is_set()  # it timed out while the callback was answering
            await released(answerer)
            entries = await journal(client, 1)
    assert timed_out.value.error.code == -32001  # the SDK's REQUEST_TIMEOUT
    assert entries == ["cancelled"]
    wire = connection.wire
    ((call, answer),) = wire.rounds("muster")
    # A cancelled call is not answered. (When the call's stream ends without an answer, the
    # SDK's Streamable HTTP transport resumes it, is told with 410 that nothing follows, and
    # in the end makes up an error for the id, below the tap: never an answer of the server's.)
    if transport == "streamable" and answer is not None:
        assert answer["error"]["message"].startswith("SSE stream ended")
    else:
        assert answer is None
    (asked,) = wire.server_requests()
    assert wire.cancelled(wire.sent) == [call["id"]]
    assert wire.cancelled(wire.received) == [asked["id"]]


# -- the demo's asking tools -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_demo_wager_and_battle_report_ask_the_sdk_client(mode: str) -> None:
    answerer = Answerer(content={"side": "foe", "thrones": 7})
    forces = {"imperial_force": "Space Wolves", "enemy_force": "Black Legion"}
    with trio.fail_after(TIMEOUT):
        async with connect("stdio", mode, answerer, command=["-m", "demo_tools"]) as connection:
            wager = await connection.client.call_tool("wh40k.wager", forces)
            narrated = await connection.client.call_tool("wh40k.battle_report", forces)
        async with connect(
            "stdio", mode, Answerer(), sampling=False, command=["-m", "demo_tools"]
        ) as connection:
            plain = await connection.client.call_tool("wh40k.battle_report", forces)
    # The wager's form: titled choices (oneOf) and bounds, each with its default.
    (form,) = answerer.forms
    assert form.requested_schema["properties"]["side"]["default"] == "imperium"
    assert form.requested_schema["properties"]["side"]["oneOf"] == [
        {"const": "imperium", "title": "The Imperium of Man"},
        {"const": "foe", "title": "The foe"},
    ]
    assert form.requested_schema["properties"]["thrones"]["default"] == 10
    assert re.fullmatch(
        r"The (Space Wolves|Black Legion) carried the day: you (won 14|lost 7) Thrones\.",
        only_text(wager),
    ), only_text(wager)
    # With sampling, the client's model narrates; without, the template tells the same battle.
    assert only_text(narrated) == "Waaagh!"
    (sampling,) = answerer.samplings
    assert sampling.max_tokens == 300
    assert sampling.system_prompt is not None
    assert sampling.system_prompt.startswith("You are a Remembrancer")
    (message,) = sampling.messages
    assert isinstance(message.content, TextContent)
    asked = re.fullmatch(
        r"Write a three-sentence battle report: on (.+), the (.+) defeated the (.+)\.",
        message.content.text,
    )
    assert asked is not None, message.content.text
    battlefield, victor, vanquished = asked.groups()
    assert not plain.is_error
    assert only_text(plain) == (
        f"On {battlefield}, the {victor} broke the {vanquished}. The Emperor protects."
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_sampling_callback_that_refuses(mode: str) -> None:
    answerer = Answerer()
    answerer.refusal = ErrorData(code=-1, message="The user would not let the model write")
    with trio.fail_after(TIMEOUT):
        async with connect("stdio", mode, answerer, command=["-m", "demo_tools"]) as connection:
            if mode == "legacy":
                # The refusal is an error answer: RequestError in the tool, which the demo's
                # battle report catches, falling back to its template text.
                report = await connection.client.call_tool("wh40k.battle_report", {})
                assert not report.is_error
                assert re.fullmatch(
                    r"On .+, the .+ broke the .+\. The Emperor protects\.", only_text(report)
                )
                (asked,) = connection.wire.server_requests()
                sent = connection.wire.sent
                (answered,) = [m for m in sent if m.get("id") == asked["id"] and "method" not in m]
                assert answered["error"]["message"] == "The user would not let the model write"
            else:
                # 2026-07-28 has no error answer to an input request (InputResponse is a
                # result), so the SDK ends the call on its side with the callback's error and
                # sends nothing more: the server, holding nothing open, never hears of it.
                with pytest.raises(MCPError) as refused:
                    await connection.client.call_tool("wh40k.battle_report", {})
                assert refused.value.error.message == "The user would not let the model write"
                assert len(connection.wire.rounds("wh40k.battle_report")) == 1
            # Either way the session goes on.
            assert not (
                await connection.client.call_tool("calculator.add", {"a": 1, "b": 2})
            ).is_error
    assert len(answerer.samplings) == 1
