"""The server asks the client (issue 14): elicitation, sampling and roots in both eras.

One tool function, unchanged, serves a handshake-era client (real requests on the connection)
and a 2026-07-28 client (input-required results, answers replayed from `inputResponses` and the
sealed `requestState`). The client here is a raw peer over memory channels, so every message on
the wire is visible; the `trio_mcp` client's side has its own tests.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from typing import Annotated, Any, Literal

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from tests.helpers import RawPeer, init_params, open_memory_peer
from tests.timing import scaled
from trio_mcp import AcceptedElicitation, CancelledElicitation, Context, DeclinedElicitation, Server
from trio_mcp._core.request_state import StateSeal, binding
from trio_mcp._exceptions import RemoteProtocolError
from trio_mcp._features.asking import Choices, elicit_form

MODERN = "2026-07-28"
EVERYTHING: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
TIMEOUT = scaled(60)


def meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": EVERYTHING
        if capabilities is None
        else capabilities,
    }


class Name(BaseModel):
    name: str


class Side(enum.Enum):
    IMPERIUM = "imperium"
    CHAOS = "chaos"


class Backing(BaseModel):
    side: Side = Side.IMPERIUM
    stake: int = Field(10, ge=0, description="Thrones wagered")


def asking_server(runs: list[str] | None = None) -> Server:
    """Tools that ask; `runs` records every attempt that reached the tool body."""
    server = Server("asking", request_state_key=b"k" * 32)
    runs = runs if runs is not None else []

    @server.tool()
    async def greet(ctx: Context, style: str = "") -> str:
        """Ask a name, then have the client's model write a greeting."""
        runs.append("greet")
        outcome = await ctx.elicit("What is your name?", Name)
        if not isinstance(outcome, AcceptedElicitation):
            return f"no name ({type(outcome).__name__})"
        reply = await ctx.sample(f"Greet {outcome.data.name}", max_tokens=20)
        return f"{reply.text} [{reply.model}]"

    @server.tool()
    async def everything(ctx: Context) -> str:
        """Ask three things in one round."""
        runs.append("everything")
        name, reply, roots = await ctx.gather(
            ctx.elicit("Name?", Name, key="user_name"),
            ctx.sample("Hello", max_tokens=5, key="greeting"),
            ctx.list_roots(key="client_roots"),
        )
        assert isinstance(name, AcceptedElicitation)
        return f"{name.data.name}|{reply.text}|{','.join(r.uri for r in roots)}"

    @server.tool()
    async def back(ctx: Context) -> str:
        """Ask which side the user backs (with defaults)."""
        outcome = await ctx.elicit("Which side?", Backing)
        if isinstance(outcome, AcceptedElicitation):
            return f"{outcome.data.side.value} for {outcome.data.stake}"
        return type(outcome).__name__

    @server.tool()
    async def polite(ctx: Context) -> str:
        """Sample only when the client can; otherwise a fixed text."""
        if "sampling" not in ctx.client_capabilities:
            return "template text"
        return (await ctx.sample("Say hi", max_tokens=5)).text

    @server.tool()
    async def needs_sampling(ctx: Context) -> str:
        """Sample, whatever the client declared."""
        return (await ctx.sample("Say hi", max_tokens=5)).text

    @server.prompt()
    async def briefing(ctx: Context, topic: str) -> str:
        """A prompt that asks for context first."""
        outcome = await ctx.elicit(
            "Context?", {"type": "object", "properties": {"c": {"type": "string"}}}
        )
        assert isinstance(outcome, AcceptedElicitation)
        return f"Brief on {topic} given {outcome.data['c']}"

    @server.resource("mem://secret")
    async def secret(ctx: Context) -> str:
        """A resource that needs the client's roots."""
        roots = await ctx.list_roots()
        return f"{len(roots)} roots"

    return server


async def modern_call(
    peer: RawPeer, name: str, capabilities: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return await peer.request(  # type: ignore[no-any-return]
        "tools/call", {"name": name, "arguments": {}, "_meta": meta(capabilities), **extra}
    )


def accept(content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def sampled(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m1"}


# -- 2026-07-28: input-required results -------------------------------------------------------


async def test_a_tool_that_asks_twice_takes_three_rounds_and_replays_from_the_start() -> None:
    runs: list[str] = []
    async with open_memory_peer(asking_server(runs), initialize=False) as peer:
        first = (await modern_call(peer, "greet"))["result"]
        assert first["resultType"] == "input_required"
        assert first["inputRequests"] == {
            "elicitation-1": {
                "method": "elicitation/create",
                "params": {
                    "message": "What is your name?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                    },
                },
            }
        }
        state = first["requestState"]
        second = (
            await modern_call(
                peer,
                "greet",
                inputResponses={"elicitation-1": accept({"name": "Ada"})},
                requestState=state,
            )
        )["result"]
        assert second["resultType"] == "input_required"
        assert list(second["inputRequests"]) == ["sampling-2"]
        assert second["inputRequests"]["sampling-2"]["params"]["messages"][0]["content"] == {
            "type": "text",
            "text": "Greet Ada",
        }
        # Only this round's answer is sent: the first one rides in the new state.
        third = (
            await modern_call(
                peer,
                "greet",
                inputResponses={"sampling-2": sampled("Hail, Ada")},
                requestState=second["requestState"],
            )
        )["result"]
        assert third["resultType"] == "complete"
        assert third["content"] == [{"type": "text", "text": "Hail, Ada [m1]"}]
        assert runs == ["greet"] * 3  # the tool ran from the start on every round


async def test_gather_asks_every_question_in_one_round() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        first = (await modern_call(peer, "everything"))["result"]
        assert first["resultType"] == "input_required"
        assert [(k, v["method"]) for k, v in first["inputRequests"].items()] == [
            ("user_name", "elicitation/create"),
            ("greeting", "sampling/createMessage"),
            ("client_roots", "roots/list"),
        ]
        answers = {
            "user_name": accept({"name": "Ada"}),
            "greeting": sampled("hi"),
            "client_roots": {"roots": [{"uri": "file:///a", "name": "a"}]},
            "unasked": {"anything": True},  # ignored
        }
        done = await modern_call(
            peer, "everything", inputResponses=answers, requestState=first["requestState"]
        )
        assert done["result"]["content"][0]["text"] == "Ada|hi|file:///a"


async def test_a_missing_answer_is_asked_for_again_not_an_error() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        first = (await modern_call(peer, "greet"))["result"]
        again = await modern_call(
            peer, "greet", inputResponses={"wrong": accept({})}, requestState=first["requestState"]
        )
        assert again["result"]["resultType"] == "input_required"
        assert list(again["result"]["inputRequests"]) == ["elicitation-1"]


async def test_answers_without_a_state_count_as_the_first_round() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        response = await modern_call(
            peer,
            "everything",
            inputResponses={
                "user_name": accept({"name": "Bo"}),
                "greeting": sampled("yo"),
                "client_roots": {"roots": []},
            },
        )
        assert response["result"]["content"][0]["text"] == "Bo|yo|"


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (12345, "must be an object"),
        ({"action": "maybe"}, '"action"'),
        (accept({"name": 7}), "does not fit the form"),
        (accept("Ada"), "must be an object"),
    ],
)
async def test_a_malformed_answer_is_invalid_params_and_never_reaches_the_tool(
    answer: Any, needle: str
) -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        response = await modern_call(peer, "greet", inputResponses={"elicitation-1": answer})
        assert response["error"]["code"] == -32602
        assert needle in response["error"]["message"]


async def test_declined_and_cancelled_reach_the_tool_as_their_records() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        for action, name in (
            ("decline", "DeclinedElicitation"),
            ("cancel", "CancelledElicitation"),
        ):
            response = await modern_call(
                peer, "greet", inputResponses={"elicitation-1": {"action": action}}
            )
            assert response["result"]["content"][0]["text"] == f"no name ({name})"


async def test_defaults_and_enums_travel_in_the_form_and_validate_the_answer() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        first = (await modern_call(peer, "back"))["result"]
        schema = first["inputRequests"]["elicitation-1"]["params"]["requestedSchema"]
        assert schema == {
            "type": "object",
            "properties": {
                "side": {"type": "string", "enum": ["imperium", "chaos"], "default": "imperium"},
                "stake": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Thrones wagered",
                    "default": 10,
                },
            },
        }
        done = await modern_call(
            peer, "back", inputResponses={"elicitation-1": accept({"side": "chaos"})}
        )
        assert done["result"]["content"][0]["text"] == "chaos for 10"
        bad = await modern_call(
            peer, "back", inputResponses={"elicitation-1": accept({"side": "orks"})}
        )
        assert bad["error"]["code"] == -32602


async def test_a_missing_capability_is_32021_naming_it() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        response = await modern_call(peer, "needs_sampling", {"elicitation": {}})
        assert response["error"]["code"] == -32021
        assert response["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
        # A tool that checks first carries on without.
        polite = await modern_call(peer, "polite", {})
        assert polite["result"]["content"][0]["text"] == "template text"
        asking = await modern_call(peer, "polite", {"sampling": {}})
        assert list(asking["result"]["inputRequests"]) == ["sampling-1"]


async def test_prompts_and_resources_may_ask_too() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        params = {"name": "briefing", "arguments": {"topic": "Orks"}, "_meta": meta()}
        first = (await peer.request("prompts/get", params))["result"]
        assert first["resultType"] == "input_required"
        done = await peer.request(
            "prompts/get",
            {
                **params,
                "inputResponses": {"elicitation-1": accept({"c": "Armageddon"})},
                "requestState": first["requestState"],
            },
        )
        assert done["result"]["messages"][0]["content"]["text"] == "Brief on Orks given Armageddon"
        read = {"uri": "mem://secret", "_meta": meta()}
        first = (await peer.request("resources/read", read))["result"]
        assert first["inputRequests"] == {"roots-1": {"method": "roots/list", "params": {}}}
        done = await peer.request(
            "resources/read", {**read, "inputResponses": {"roots-1": {"roots": []}}}
        )
        assert done["result"]["contents"][0]["text"] == "0 roots"


# -- requestState: attacker-controlled input ------------------------------------------------


async def first_state(peer: RawPeer) -> str:
    first = (await modern_call(peer, "greet"))["result"]
    second = await modern_call(
        peer,
        "greet",
        inputResponses={"elicitation-1": accept({"name": "Ada"})},
        requestState=first["requestState"],
    )
    return str(second["result"]["requestState"])


@pytest.mark.parametrize(
    "tamper",
    [
        lambda s: s + "-TAMPERED",
        lambda s: s[:-5],
        lambda s: s.split(".")[0],
        lambda s: "x" + s[1:],
        lambda s: s.replace(".", ".A"),
        lambda s: 12345,
        lambda s: "",
    ],
)
async def test_a_tampered_state_is_refused_before_the_tool_runs(tamper: Any) -> None:
    runs: list[str] = []
    async with open_memory_peer(asking_server(runs), initialize=False) as peer:
        state = await first_state(peer)
        runs.clear()
        response = await modern_call(
            peer,
            "greet",
            inputResponses={"sampling-2": sampled("hi")},
            requestState=tamper(state),
        )
        assert response["error"]["code"] == -32602
        assert "requestState" in response["error"]["message"]
        assert runs == []


async def test_a_state_for_another_tool_or_other_arguments_is_refused() -> None:
    runs: list[str] = []
    async with open_memory_peer(asking_server(runs), initialize=False) as peer:
        state = await first_state(peer)
        runs.clear()
        other = await modern_call(peer, "everything", requestState=state)
        assert other["error"]["code"] == -32602
        assert "another request" in other["error"]["message"]
        assert runs == []


async def test_an_oversized_state_is_refused_unread() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        response = await modern_call(peer, "greet", requestState="A" * (300 * 1024))
        assert response["error"]["code"] == -32602
        assert "longer than" in response["error"]["message"]


def test_the_state_binds_expires_and_needs_the_key() -> None:
    seal = StateSeal(b"s" * 32, ttl=60)
    bound = binding("tools/call", "greet", {"a": 1})
    token = seal.seal(bound, {"k": {"action": "decline"}}, now=1000.0)
    assert seal.open(token, bound, now=1059.0) == {"k": {"action": "decline"}}
    with pytest.raises(RemoteProtocolError, match="expired"):
        seal.open(token, bound, now=1061.0)
    with pytest.raises(RemoteProtocolError, match="another request"):
        seal.open(token, binding("tools/call", "greet", {"a": 2}), now=1001.0)
    with pytest.raises(RemoteProtocolError, match="integrity"):
        StateSeal(b"t" * 32).open(token, bound, now=1001.0)
    # A fleet shares a key: another seal with the same key opens it.
    assert (
        StateSeal("73" * 32, ttl=60).open(
            StateSeal(bytes.fromhex("73" * 32), ttl=60).seal(bound, {}, now=5.0), bound, now=6.0
        )
        == {}
    )
    with pytest.raises(ValueError, match="16 bytes"):
        StateSeal("short")


# -- the handshake era: real requests on the connection -------------------------------------


async def initialized(peer: RawPeer, capabilities: dict[str, Any]) -> None:
    params = init_params("2025-11-25")
    params["capabilities"] = capabilities
    await peer.request("initialize", params)
    await peer.notify("notifications/initialized")


async def answer_requests(peer: RawPeer, call_id: int, answers: dict[str, Any]) -> dict[str, Any]:
    """Answer each server request by method until the call's response comes; return it."""
    while True:
        message = await peer.receive()
        if message.get("id") == call_id and "method" not in message:
            return message  # type: ignore[no-any-return]
        if "method" in message and "id" in message:
            await peer.send(
                {"jsonrpc": "2.0", "id": message["id"], "result": answers[message["method"]]}
            )


async def test_the_same_tool_asks_with_real_requests_in_the_handshake_era() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        await initialized(peer, EVERYTHING)
        with trio.fail_after(TIMEOUT):
            call = await peer.start_request("tools/call", {"name": "greet", "arguments": {}})
            response = await answer_requests(
                peer,
                call,
                {
                    "elicitation/create": accept({"name": "Ada"}),
                    "sampling/createMessage": sampled("Hail"),
                },
            )
        assert response["result"]["content"] == [{"type": "text", "text": "Hail [m1]"}]
        asked = [m["method"] for m in peer.log if "method" in m and "id" in m]
        assert asked == ["elicitation/create", "sampling/createMessage"]


async def test_handshake_era_missing_capability_is_a_tool_error() -> None:
    async with open_memory_peer(asking_server(), initialize=False) as peer:
        await initialized(peer, {"elicitation": {}})
        response = await peer.call("needs_sampling")
        assert response["result"]["isError"] is True
        assert "'sampling' capability" in response["result"]["content"][0]["text"]


async def test_handshake_era_timeout_cancels_the_question(autojump_clock: Any) -> None:
    server = asking_server()
    server._dispatcher.ask_timeout = 5.0
    async with open_memory_peer(server, initialize=False) as peer:
        await initialized(peer, EVERYTHING)
        with trio.fail_after(TIMEOUT):
            call = await peer.start_request("tools/call", {"name": "greet", "arguments": {}})
            asked = await peer.receive()
            assert asked["method"] == "elicitation/create"
            cancelled = await peer.receive()  # nobody answers: 5 s later
            assert cancelled["method"] == "notifications/cancelled"
            assert cancelled["params"]["requestId"] == asked["id"]
            response = await peer.receive()
        assert response["id"] == call
        assert response["result"]["isError"] is True
        assert (
            "did not answer elicitation/create within 5 s"
            in response["result"]["content"][0]["text"]
        )


# -- answer types become flat forms ---------------------------------------------------------


class Fields(TypedDict):
    email: Annotated[str, Field(json_schema_extra={"format": "email"})]
    born: datetime.date


@dataclasses.dataclass
class Choice:
    pick: Annotated[str, Choices({"v1": "First", "v2": "Second"})]
    many: Annotated[list[str], Choices({"a": "A", "b": "B"})] = dataclasses.field(
        default_factory=list
    )
    modes: list[Literal["x", "y"]] = dataclasses.field(default_factory=list)
    note: str | None = None
    ok: bool = True
    score: float = 9.5


def test_answer_types_compile_into_the_spec_flat_shapes() -> None:
    assert elicit_form(Fields).schema == {
        "type": "object",
        "properties": {
            "email": {"type": "string", "format": "email"},
            "born": {"type": "string", "format": "date"},
        },
        "required": ["email", "born"],
    }
    props = elicit_form(Choice).schema["properties"]
    assert props["pick"] == {
        "type": "string",
        "oneOf": [{"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}],
    }
    assert props["many"]["items"] == {
        "anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]
    }
    assert props["modes"]["items"] == {"type": "string", "enum": ["x", "y"]}
    assert props["note"] == {"type": "string"}
    assert props["ok"] == {"type": "boolean", "default": True}
    assert props["score"] == {"type": "number", "default": 9.5}
    assert elicit_form(Choice).schema["required"] == ["pick"]
    assert elicit_form(Choice).validate({"pick": "v1", "many": ["b"]}).many == ["b"]
    with pytest.raises(Exception, match="not one of"):
        elicit_form(Choice).validate({"pick": "v3"})


class Nested(BaseModel):
    inner: Name


class Table(BaseModel):
    table: dict[str, int]


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (Nested, "Nested.inner cannot be asked"),
        (Table, "Table.table cannot be asked"),
        (int, "use a pydantic model"),
        ({"type": "string"}, "raw elicitation schema"),
    ],
)
def test_a_shape_the_spec_cannot_express_fails_clearly(answer: Any, needle: str) -> None:
    with pytest.raises(TypeError, match=needle):
        elicit_form(answer)


async def test_elicit_with_an_inexpressible_type_is_a_tool_error_naming_the_field() -> None:
    server = Server("bad")

    @server.tool()
    async def bad(ctx: Context) -> str:
        """Ask for a nested model."""
        await ctx.elicit("?", Nested)
        return "unreachable"

    async with open_memory_peer(server, initialize=False) as peer:
        response = await modern_call(peer, "bad")
        assert response["result"]["isError"] is True
        assert "Nested.inner cannot be asked" in response["result"]["content"][0]["text"]
    assert json.dumps(DeclinedElicitation().to_wire()) == '{"action": "decline"}'
    assert CancelledElicitation().to_wire() == {"action": "cancel"}


# -- properties: no change to a state survives, and none runs the tool ------------------------

_SEAL = StateSeal(b"p" * 32, ttl=60)
_BOUND = binding("tools/call", "greet", {})
_TOKEN = _SEAL.seal(_BOUND, {"elicitation-1": {"action": "accept", "content": {"name": "A"}}}, 0)


@settings(max_examples=300, deadline=None)
@given(
    position=st.integers(min_value=0, max_value=len(_TOKEN) - 1),
    replacement=st.text(min_size=0, max_size=3),
)
def test_any_edit_of_a_state_is_refused(position: int, replacement: str) -> None:
    edited = _TOKEN[:position] + replacement + _TOKEN[position + 1 :]
    if edited == _TOKEN:
        return
    with pytest.raises(RemoteProtocolError) as caught:
        _SEAL.open(edited, _BOUND, now=1.0)
    assert caught.value.code == -32602


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=400), st.binary(max_size=64).map(lambda b: b.hex())))
def test_arbitrary_text_is_never_a_state(text: str) -> None:
    with pytest.raises(RemoteProtocolError):
        _SEAL.open(text, _BOUND, now=1.0)


@settings(max_examples=25, deadline=None)
@given(
    tamper=st.sampled_from(["edit", "truncate", "other-tool", "other-arguments", "oversize"]),
    cut=st.integers(min_value=1, max_value=40),
)
def test_a_bad_state_never_runs_tool_code(tamper: str, cut: int) -> None:
    runs: list[str] = []

    async def scenario() -> dict[str, Any]:
        async with open_memory_peer(asking_server(runs), initialize=False) as peer:
            state = await first_state(peer)
            runs.clear()
            name, arguments = "greet", dict[str, Any]()
            if tamper == "edit":
                state = state[:cut] + ("A" if state[cut] != "A" else "B") + state[cut + 1 :]
            elif tamper == "truncate":
                state = state[:-cut]
            elif tamper == "other-tool":
                name = "everything"
            elif tamper == "other-arguments":
                arguments = {"style": str(cut)}
            else:
                state = state + "A" * (256 * 1024)
            return await peer.request(  # type: ignore[no-any-return]
                "tools/call",
                {
                    "name": name,
                    "arguments": arguments,
                    "_meta": meta(),
                    "inputResponses": {"sampling-2": sampled("hi")},
                    "requestState": state,
                },
            )

    response = trio.run(scenario)
    assert response["error"]["code"] == -32602
    assert runs == []


def test_no_other_spelling_of_the_mac_is_accepted() -> None:
    # base64 leaves the last character's low bits unused: decoding before comparing would
    # accept three other spellings of the same MAC.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    accepted = []
    for char in alphabet:
        try:
            _SEAL.open(_TOKEN[:-1] + char, _BOUND, now=1.0)
        except RemoteProtocolError:
            continue
        accepted.append(char)
    assert accepted == [_TOKEN[-1]]


async def test_cancelling_the_call_cancels_its_open_question(autojump_clock: Any) -> None:
    runs: list[str] = []
    async with open_memory_peer(asking_server(runs), initialize=False) as peer:
        await initialized(peer, EVERYTHING)
        with trio.fail_after(TIMEOUT):
            call = await peer.start_request("tools/call", {"name": "greet", "arguments": {}})
            asked = await peer.receive()
            assert asked["method"] == "elicitation/create"
            await peer.notify("notifications/cancelled", {"requestId": call})
            told = await peer.receive()
        assert told == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": asked["id"], "reason": "cancelled by the server"},
        }
        # The call gets no answer (it was cancelled); the connection still serves.
        assert (await peer.request("ping"))["result"] == {}
        assert not any(m.get("id") == call and "method" not in m for m in peer.log)


async def test_url_mode_elicitation_and_its_completion_notice() -> None:
    server = Server("url")

    @server.tool()
    async def connect(ctx: Context) -> str:
        """Send the user to a consent page, then say it is done."""
        outcome = await ctx.elicit_url("Authorize the archive", "https://example.com/consent")
        if not isinstance(outcome, AcceptedElicitation):
            return "not authorized"
        await ctx.complete_elicitation(outcome.data)
        return f"authorized {outcome.data}"

    async with open_memory_peer(server, initialize=False) as peer:
        await initialized(peer, {"elicitation": {"url": {}}})
        with trio.fail_after(TIMEOUT):
            call = await peer.start_request("tools/call", {"name": "connect", "arguments": {}})
            asked = await peer.receive()
            params = asked["params"]
            assert params["mode"] == "url"
            assert params["url"] == "https://example.com/consent"
            await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}})
            notice = await peer.receive()
            response = await peer.receive()
        assert notice["method"] == "notifications/elicitation/complete"
        assert notice["params"] == {"elicitationId": params["elicitationId"]}
        assert response["id"] == call
        assert response["result"]["content"][0]["text"] == f"authorized {params['elicitationId']}"

    async with open_memory_peer(server, initialize=False) as peer:
        await initialized(peer, {"elicitation": {}})  # {} means form mode only
        with trio.fail_after(TIMEOUT):
            response = await peer.call("connect")
        assert response["result"]["isError"] is True
        assert "url-mode elicitation" in response["result"]["content"][0]["text"]


async def test_a_roots_change_runs_the_handler_which_may_list_them() -> None:
    server = Server("roots")
    seen: list[list[str]] = []
    handled = trio.Event()

    @server.on_roots_changed
    async def reread(ctx: Context) -> None:
        seen.append([root.uri for root in await ctx.list_roots()])
        handled.set()

    async with open_memory_peer(server, initialize=False) as peer:
        await initialized(peer, {"roots": {"listChanged": True}})
        with trio.fail_after(TIMEOUT):
            await peer.notify("notifications/roots/list_changed")
            asked = await peer.receive()
            assert asked["method"] == "roots/list"
            await peer.send(
                {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file:///new"}]}}
            )
            await handled.wait()
        assert seen == [["file:///new"]]


async def test_a_failing_roots_handler_is_logged_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server("roots")
    ran = trio.Event()

    @server.on_roots_changed
    async def broken(ctx: Context) -> None:
        ran.set()
        raise RuntimeError("boom")

    async with open_memory_peer(server, initialize=False) as peer:
        await initialized(peer, {"roots": {}})
        with trio.fail_after(TIMEOUT):
            await peer.notify("notifications/roots/list_changed")
            await ran.wait()
            assert (await peer.request("ping"))["result"] == {}
    assert "the roots/list_changed handler raised" in caplog.text


async def test_a_function_that_swallows_the_signal_still_gets_input_required() -> None:
    server = Server("stubborn")

    @server.tool()
    async def stubborn(ctx: Context) -> str:
        """Catches everything, even what it should not."""
        try:
            await ctx.list_roots()
        except BaseException:
            return "carried on regardless"
        return "answered"

    @server.tool()
    async def twice(ctx: Context) -> str:
        """Uses one key for two questions."""
        await ctx.gather(ctx.list_roots(key="same"), ctx.list_roots(key="same"))
        return "unreachable"

    async with open_memory_peer(server, initialize=False) as peer:
        first = (await modern_call(peer, "stubborn"))["result"]
        assert first["resultType"] == "input_required"
        assert list(first["inputRequests"]) == ["roots-1"]
        done = await modern_call(peer, "stubborn", inputResponses={"roots-1": {"roots": []}})
        assert done["result"]["content"][0]["text"] == "answered"
        twice_result = (await modern_call(peer, "twice"))["result"]
        assert twice_result["isError"] is True
        assert "'same' was used twice" in twice_result["content"][0]["text"]


async def test_url_mode_under_2026_07_28_sends_no_elicitation_id() -> None:
    server = Server("url")

    @server.tool()
    async def connect(ctx: Context) -> str:
        """Send the user to a consent page."""
        outcome = await ctx.elicit_url("Authorize", "https://example.com/consent", key="consent")
        await ctx.complete_elicitation("ignored")  # no such notification in this revision
        return f"accepted={isinstance(outcome, AcceptedElicitation)}"

    async with open_memory_peer(server, initialize=False) as peer:
        first = (await modern_call(peer, "connect"))["result"]
        assert first["inputRequests"]["consent"]["params"] == {
            "mode": "url",
            "message": "Authorize",
            "url": "https://example.com/consent",
        }
        done = await modern_call(peer, "connect", inputResponses={"consent": {"action": "accept"}})
        assert done["result"]["content"][0]["text"] == "accepted=True"
        assert not any(m.get("method") == "notifications/elicitation/complete" for m in peer.log)


async def test_a_timeout_is_a_plain_error_even_with_masked_details(
    autojump_clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = asking_server()
    server._dispatcher.ask_timeout = 1.0
    server._dispatcher.mask_error_details = True
    async with open_memory_peer(server, initialize=False) as peer:
        await initialized(peer, EVERYTHING)
        with trio.fail_after(TIMEOUT):
            call = await peer.start_request("tools/call", {"name": "greet", "arguments": {}})
            while True:
                message = await peer.receive()
                if message.get("id") == call and "method" not in message:
                    break
    text = message["result"]["content"][0]["text"]
    assert text == "the client did not answer elicitation/create within 1 s"
    assert "Traceback" not in caplog.text
    assert "raised" not in caplog.text
