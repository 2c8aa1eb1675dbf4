"""Tasks and `requestState` belong to the principal of the verified token that made them.

A trio-mcp HTTP server on loopback verifies tokens with `Tokens`, a `TokenVerifier` of the
test's own (the protocol servers implement), which knows a few people: alice (twice: her token
and her refreshed one), mallory (another subject), alice's subject through another client, and
the same subject from another issuer. Another principal's task is answered exactly as an
unknown task id; the same principal reaches it from another session, another worker, or with a
refreshed token. Two workers sharing a store and a broker bus carry a task's states only to its
principal's listen streams; for those, the in-memory connections stand in for the transport by
carrying a verified token (`serve_connection(auth=...)`), as the HTTP transport's requests do.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from pydantic import BaseModel

from tests.helpers import LATEST, MODERN, RawPeer, open_memory_peer
from tests.http_helpers import McpHttp, Served, serve
from tests.timing import scaled
from trio_mcp import AuthInfo, Context, InProcessBroker, RemoteProtocolError, Server
from trio_mcp._core.request_state import StateSeal, binding
from trio_mcp.tasks import MemoryTaskStore, TaskRecord

TASKS = "io.modelcontextprotocol/tasks"
DECLARED: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS: {}}}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": DECLARED,
}
#: A handshake-era request opts into the extension for itself (SEP-2575).
OPT_IN = {"io.modelcontextprotocol/clientCapabilities": DECLARED}
ISSUER = "https://as.example"

PEOPLE = {
    "alice": AuthInfo(subject="alice", client_id="app", issuer=ISSUER),
    "alice-refreshed": AuthInfo(
        subject="alice", client_id="app", issuer=ISSUER, scopes=frozenset({"x"})
    ),
    "mallory": AuthInfo(subject="mallory", client_id="app", issuer=ISSUER),
    "alice-other-app": AuthInfo(subject="alice", client_id="other-app", issuer=ISSUER),
    "alice-other-issuer": AuthInfo(subject="alice", client_id="app", issuer="https://evil.example"),
}
STRANGERS = ("mallory", "alice-other-app", "alice-other-issuer")


class Tokens:
    """A `TokenVerifier` that knows the tokens of `PEOPLE` (each token is the person's name)."""

    async def verify(self, token: str) -> AuthInfo | None:
        return PEOPLE.get(token)


class Confirm(BaseModel):
    confirm: bool


def make_server(**options: Any) -> Server:
    server = Server("bound", **options)

    @server.tool(task=True)
    async def confirm(ctx: Context) -> str:
        """Asks one question, as a task: it waits for `tasks/update`."""
        outcome = await ctx.elicit("Sure?", Confirm)
        return f"answered {type(outcome).__name__}"

    @server.tool
    async def ask(ctx: Context, topic: str) -> str:
        """Asks one question in the request (2026-07-28: an input-required round)."""
        outcome = await ctx.elicit(f"Sure about {topic}?", Confirm)
        return f"{topic}: {type(outcome).__name__}"

    return server


@asynccontextmanager
async def bound_server(server: Server | None = None, **options: Any) -> AsyncIterator[Served]:
    async with serve(server or make_server(), auth=Tokens(), **options) as served:
        yield served


def as_user(served: Served, who: str, version: str = MODERN) -> McpHttp:
    return served.client(version, authorization=f"Bearer {who}")


async def task_request(client: McpHttp, method: str, task_id: str, **params: Any) -> Any:
    meta = META if client.version == MODERN else OPT_IN
    reply = await client.request(method, {"taskId": task_id, "_meta": meta, **params})
    assert reply.status == 200, reply.response.text
    return reply.last


async def started(client: McpHttp) -> tuple[str, str]:
    """Start `confirm` as a task and wait for its question: its id and the question's key."""
    meta = META if client.version == MODERN else OPT_IN
    created = (await client.call("confirm", **meta)).result
    task_id = created["taskId"]
    while True:
        got = (await task_request(client, "tasks/get", task_id))["result"]
        if got["status"] == "input_required":
            return task_id, next(iter(got["inputRequests"]))
        await trio.sleep(0.01)


def unknown_shape(answer: dict[str, Any], task_id: str) -> str:
    """The error of `answer`, with the task id taken out: comparable across ids."""
    return json.dumps(answer["error"], sort_keys=True).replace(task_id, "<id>")


@pytest.mark.parametrize("stranger", STRANGERS)
async def test_another_principals_task_is_an_unknown_task(stranger: str) -> None:
    async with bound_server() as served:
        alice = as_user(served, "alice")
        task_id, key = await started(alice)
        other = as_user(served, stranger)
        unknown = await task_request(other, "tasks/get", "no-such-task")
        got = await task_request(other, "tasks/get", task_id)
        updated = await task_request(
            other, "tasks/update", task_id, inputResponses={key: {"action": "decline"}}
        )
        cancelled = await task_request(other, "tasks/cancel", task_id)
        unknown_update = await task_request(
            other, "tasks/update", "no-such-task", inputResponses={key: {}}
        )
        unknown_cancel = await task_request(other, "tasks/cancel", "no-such-task")
        # Nothing the stranger sent reached the task: it still waits for alice's answer.
        still = (await task_request(alice, "tasks/get", task_id))["result"]
    assert got["error"]["code"] == -32602
    assert unknown_shape(got, task_id) == unknown_shape(unknown, "no-such-task")
    assert unknown_shape(updated, task_id) == unknown_shape(unknown_update, "no-such-task")
    assert unknown_shape(cancelled, task_id) == unknown_shape(unknown_cancel, "no-such-task")
    assert still["status"] == "input_required"
    assert list(still["inputRequests"]) == [key]


async def test_the_same_principal_answers_and_cancels_with_a_refreshed_token() -> None:
    async with bound_server() as served:
        alice = as_user(served, "alice")
        first, key = await started(alice)
        second, _ = await started(alice)
        refreshed = as_user(served, "alice-refreshed")
        got = (await task_request(refreshed, "tasks/get", first))["result"]
        answered = await task_request(
            refreshed, "tasks/update", first, inputResponses={key: {"action": "decline"}}
        )
        cancelled = await task_request(refreshed, "tasks/cancel", second)
        with trio.fail_after(scaled(60)):
            while got["status"] != "completed":
                await trio.sleep(0.01)
                got = (await task_request(alice, "tasks/get", first))["result"]
        stopped = (await task_request(alice, "tasks/get", second))["result"]
    assert answered["result"] == {"resultType": "complete"}
    assert cancelled["result"] == {"resultType": "complete"}
    assert got["result"]["content"][0]["text"] == "answered DeclinedElicitation"
    assert stopped["status"] == "cancelled"


async def test_a_handshake_era_session_reaches_its_users_tasks_only() -> None:
    # (A handshake-era call that becomes a task keeps its POST's stream open to follow it, so
    # the task is made by a stateless request here; the sessions only look it up.)
    async with bound_server() as served:
        task_id, _ = await started(as_user(served, "alice"))
        alice = as_user(served, "alice-refreshed", LATEST)
        await alice.initialize()
        mallory = as_user(served, "mallory", LATEST)
        await mallory.initialize()
        mine = await task_request(alice, "tasks/get", task_id)
        theirs = await task_request(mallory, "tasks/get", task_id)
    assert alice.session_id is not None
    assert mine["result"]["status"] == "input_required"
    assert theirs["error"]["code"] == -32602


async def test_another_worker_keeps_the_binding() -> None:
    store = MemoryTaskStore()
    async with (
        bound_server(make_server(task_store=store)) as first,
        bound_server(make_server(task_store=store)) as second,
    ):
        task_id, key = await started(as_user(first, "alice"))
        theirs = await task_request(as_user(second, "mallory"), "tasks/get", task_id)
        mine = await task_request(as_user(second, "alice"), "tasks/get", task_id)
    assert theirs["error"]["code"] == -32602
    assert mine["result"]["status"] == "input_required"
    assert list(mine["result"]["inputRequests"]) == [key]


async def test_without_a_token_tasks_belong_to_no_one() -> None:
    async with serve(make_server()) as served:
        client = served.client(MODERN)
        task_id, _ = await started(client)
        again = await task_request(served.client(MODERN), "tasks/get", task_id)
    assert again["result"]["status"] == "input_required"


# -- the record ----------------------------------------------------------------------------------


def test_a_record_carries_its_principal_through_dump_and_load() -> None:
    record = TaskRecord("t1", 1.0, 60.0, 1.0, principal=(ISSUER, "alice", "app"))
    anonymous = TaskRecord("t2", 1.0, 60.0, 1.0)
    loaded = TaskRecord.load(json.loads(json.dumps(record.dump())))
    old = record.dump()
    del old["principal"]  # a record written before records named one
    assert loaded.principal == (ISSUER, "alice", "app")
    assert TaskRecord.load(anonymous.dump()).principal is None
    assert TaskRecord.load(old).principal is None
    assert loaded.visible_to((ISSUER, "alice", "app"))
    assert not loaded.visible_to((ISSUER, "mallory", "app"))
    assert not loaded.visible_to(None)
    assert anonymous.visible_to((ISSUER, "mallory", "app"))
    with pytest.raises(ValueError, match="principal"):
        TaskRecord.load({**record.dump(), "principal": ["a", "b"]})
    with pytest.raises(ValueError, match="principal"):
        TaskRecord.load({**record.dump(), "principal": "alice"})


# -- listen streams across workers ---------------------------------------------------------------


@asynccontextmanager
async def peer_as(server: Server, who: str | None) -> AsyncIterator[RawPeer]:
    """An in-memory connection whose requests carry `who`'s verified token, as HTTP's would."""
    auth = None if who is None else PEOPLE[who]
    async with open_memory_peer(server, initialize=False, auth=auth) as peer:
        yield peer


async def listen(peer: RawPeer, task_id: str) -> None:
    await peer.start_request(
        "subscriptions/listen", {"_meta": META, "notifications": {"taskIds": [task_id]}}
    )
    ack = await peer.receive()
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    assert ack["params"]["notifications"]["taskIds"] == [task_id]


async def test_a_tasks_states_reach_only_its_principals_listen_streams_on_every_worker() -> None:
    store = MemoryTaskStore()
    bus = InProcessBroker()
    a, b = (
        make_server(task_store=store, broker=bus),
        make_server(task_store=store, broker=bus.peer()),
    )
    with trio.fail_after(scaled(60)):
        async with trio.open_nursery() as nursery:
            for server in (a, b):
                await nursery.start(server.relay)
            async with (
                peer_as(b, "alice") as alice_on_b,
                peer_as(a, "alice-refreshed") as alice_on_a,
                peer_as(a, "mallory") as mallory_on_a,
                peer_as(a, None) as anonymous_on_a,
            ):
                created = await alice_on_b.call("confirm", {}, _meta=META)
                task_id = created["result"]["taskId"]
                for peer in (alice_on_a, mallory_on_a, anonymous_on_a):
                    await listen(peer, task_id)
                got = await alice_on_b.request("tasks/get", {"taskId": task_id, "_meta": META})
                while got["result"]["status"] != "input_required":
                    await trio.sleep(0.01)
                    got = await alice_on_b.request("tasks/get", {"taskId": task_id, "_meta": META})
                key = next(iter(got["result"]["inputRequests"]))
                await alice_on_b.request(
                    "tasks/update",
                    {
                        "taskId": task_id,
                        "_meta": META,
                        "inputResponses": {key: {"action": "decline"}},
                    },
                )
                heard: list[dict[str, Any]] = []
                while not heard or heard[-1]["params"]["status"] != "completed":
                    heard.append(await alice_on_a.receive())
                await trio.testing.wait_all_tasks_blocked()
                for peer in (mallory_on_a, anonymous_on_a):
                    asked = await peer.start_request("server/discover", {"_meta": META})
                    answer = await peer.receive()  # nothing came before it
                    assert answer.get("id") == asked, answer
            nursery.cancel_scope.cancel()
    assert {message["method"] for message in heard} == {"notifications/tasks"}
    assert heard[-1]["params"]["taskId"] == task_id


# -- requestState --------------------------------------------------------------------------------


async def ask(client: McpHttp, topic: str, **retry: Any) -> dict[str, Any]:
    params = {"name": "ask", "arguments": {"topic": topic}, "_meta": META, **retry}
    reply = await client.request("tools/call", params)
    assert reply.status == 200, reply.response.text
    answer: dict[str, Any] = reply.last
    return answer


@pytest.mark.parametrize("stranger", STRANGERS)
async def test_a_request_state_is_refused_with_another_users_token(stranger: str) -> None:
    async with bound_server() as served:
        alice = as_user(served, "alice")
        first = (await ask(alice, "rain"))["result"]
        assert first["resultType"] == "input_required"
        key = next(iter(first["inputRequests"]))
        retry = {
            "requestState": first["requestState"],
            "inputResponses": {key: {"action": "decline"}},
        }
        stolen = await ask(as_user(served, stranger), "rain", **retry)
        other_request = await ask(alice, "snow", **retry)
        refreshed = await ask(as_user(served, "alice-refreshed"), "rain", **retry)
    assert stolen["error"]["code"] == -32602
    assert stolen["error"] == other_request["error"]  # no hint of which check refused it
    assert refreshed["result"]["content"][0]["text"] == "rain: DeclinedElicitation"


def test_the_binding_names_the_principal_and_is_unchanged_without_one() -> None:
    plain = binding("tools/call", "ask", {"topic": "rain"})
    alice = binding("tools/call", "ask", {"topic": "rain"}, (ISSUER, "alice", "app"))
    mallory = binding("tools/call", "ask", {"topic": "rain"}, (ISSUER, "mallory", "app"))
    assert plain == binding("tools/call", "ask", {"topic": "rain"}, None)
    assert len({plain, alice, mallory}) == 3
    seal = StateSeal(b"k" * 32)
    state = seal.seal(alice, {"a": 1}, 0.0)
    assert seal.open(state, alice, 1.0) == {"a": 1}
    with pytest.raises(RemoteProtocolError, match="another request") as refused:
        seal.open(state, mallory, 1.0)
    assert refused.value.code == -32602
