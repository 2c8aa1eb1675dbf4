"""Every error of resources, prompts and completion, over a real subprocess (stdio) and HTTP.

One table (`ERRORS`): the revision a request speaks, the request, and the JSON-RPC error it must
get. The stdio test runs the fixture server (`tests/fixtures/primitives_server.py`) as a
subprocess with `python -m trio_mcp run`; the HTTP test serves it on loopback. Each answer is
validated against the official schema of its revision, and the server keeps answering after
each error.
"""

from __future__ import annotations

import sys
from typing import Any

import trio

from tests.fixtures import primitives_server as fixture
from tests.helpers import MODERN, MODERN_META
from tests.http_helpers import McpHttp, serve
from tests.schema_check import validate_server_message
from tests.stdio_peer import ROOT, open_server
from tests.timing import scaled

HANDSHAKE = "2025-11-25"
SERVER = str(ROOT / "tests" / "fixtures" / "primitives_server.py")
BRIEFING = {"type": "ref/prompt", "name": "wh40k.battle_briefing"}
NOWHERE = "wh40k://nowhere"

# (revision, method, params, code, a fragment of the message, data or None)
ERRORS: list[tuple[str, str, dict[str, Any], int, str, dict[str, Any] | None]] = [
    # unknown resource: -32002 before 2026-07-28, -32602 from it (SEP-2164); data.uri always
    (HANDSHAKE, "resources/read", {"uri": NOWHERE}, -32002, "Resource not found", {"uri": NOWHERE}),
    (MODERN, "resources/read", {"uri": NOWHERE}, -32602, "Resource not found", {"uri": NOWHERE}),
    # a template function that says there is no such resource
    (
        HANDSHAKE,
        "resources/read",
        {"uri": "wh40k://units/orks/9"},
        -32002,
        "Resource not found",
        {"uri": "wh40k://units/orks/9"},
    ),
    (
        MODERN,
        "resources/read",
        {"uri": "wh40k://units/orks/9"},
        -32602,
        "Resource not found",
        {"uri": "wh40k://units/orks/9"},
    ),
    # template variables that fail validation: invalid params naming the variable
    (
        HANDSHAKE,
        "resources/read",
        {"uri": "wh40k://units/tau/1"},
        -32602,
        "- faction: expected 'orks', 'necrons' or 'space_marines'; got \"tau\"",
        {"uri": "wh40k://units/tau/1"},
    ),
    (
        MODERN,
        "resources/read",
        {"uri": "wh40k://units/orks/one"},
        -32602,
        "- unit_id: expected a valid integer",
        {"uri": "wh40k://units/orks/one"},
    ),
    (
        HANDSHAKE,
        "resources/read",
        {"uri": "wh40k://search?limit=lots"},
        -32602,
        "- limit: expected a valid integer",
        {"uri": "wh40k://search?limit=lots"},
    ),
    # the function failed
    (
        HANDSHAKE,
        "resources/read",
        {"uri": "wh40k://broken"},
        -32603,
        "Internal error in resource wh40k://broken: RuntimeError: the archive is on fire",
        {"uri": "wh40k://broken"},
    ),
    (
        MODERN,
        "resources/read",
        {"uri": "wh40k://sealed"},
        -32603,
        "the archive is sealed",
        {"uri": "wh40k://sealed"},
    ),
    # malformed requests
    (HANDSHAKE, "resources/read", {}, -32602, '"uri" must be a string', None),
    (
        HANDSHAKE,
        "resources/subscribe",
        {"uri": NOWHERE},
        -32002,
        "Resource not found",
        {"uri": NOWHERE},
    ),
    (
        MODERN,
        "resources/subscribe",
        {"uri": "wh40k://battle/latest"},
        -32601,
        "Method not found: resources/subscribe",
        {"method": "resources/subscribe"},
    ),
    # prompts
    (HANDSHAKE, "prompts/get", {"name": "nope"}, -32602, "Unknown prompt: nope", {"name": "nope"}),
    (
        MODERN,
        "prompts/get",
        {"name": "wh40k.battle_briefing", "arguments": {"attacker": "orks"}},
        -32602,
        "for prompt wh40k.battle_briefing:\n- defender: missing required argument",
        {"name": "wh40k.battle_briefing"},
    ),
    (
        HANDSHAKE,
        "prompts/get",
        {
            "name": "wh40k.battle_briefing",
            "arguments": {"attacker": "orks", "defender": "orks", "turns": "many"},
        },
        -32602,
        "- turns: expected a valid integer",
        {"name": "wh40k.battle_briefing"},
    ),
    (
        HANDSHAKE,
        "prompts/get",
        {"name": "wh40k.greeting", "arguments": "Bob"},
        -32602,
        '"arguments" must be an object',
        None,
    ),
    (
        MODERN,
        "prompts/get",
        {"name": "wh40k.failing"},
        -32603,
        "no briefing today",
        {"name": "wh40k.failing"},
    ),
    # completion
    (
        HANDSHAKE,
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}},
        -32602,
        "Unknown prompt: nope",
        {"name": "nope"},
    ),
    (
        MODERN,
        "completion/complete",
        {"ref": BRIEFING, "argument": {"name": "nope", "value": ""}},
        -32602,
        "has no argument 'nope' (it has: attacker, defender, turns, detail)",
        None,
    ),
    (
        HANDSHAKE,
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "x://none/{a}"},
            "argument": {"name": "a", "value": ""},
        },
        -32602,
        "Unknown resource template: x://none/{a}",
        {"uri": "x://none/{a}"},
    ),
    (
        HANDSHAKE,
        "completion/complete",
        {"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}},
        -32602,
        '"ref" must be of type',
        None,
    ),
]


def with_meta(version: str, params: dict[str, Any]) -> dict[str, Any]:
    return {**params, "_meta": MODERN_META} if version == MODERN else params


def check(answer: Any, version: str, case: tuple[Any, ...]) -> None:
    _, method, _, code, fragment, data = case
    assert "error" in answer, (case, answer)
    error = answer["error"]
    assert error["code"] == code, (case, error)
    assert fragment in error["message"], (case, error)
    assert error.get("data") == data, (case, error)
    validate_server_message(answer, version, method)


async def test_every_error_over_a_subprocess() -> None:
    with trio.fail_after(scaled(120)):
        async with open_server([sys.executable, "-m", "trio_mcp", "run", SERVER]) as peer:
            await peer.initialize(HANDSHAKE)
            for case in ERRORS:
                version, method, params = case[:3]
                check(await peer.request(method, with_meta(version, params)), version, case)
                await peer.ping_answers()
            assert await peer.finish() == 0
            assert b"Traceback (most recent call last)" in peer.stderr  # logged, not sent


async def test_every_error_over_http() -> None:
    with trio.fail_after(scaled(120)):
        async with serve(fixture.server) as served:
            handshake = served.client(HANDSHAKE)
            assert (await handshake.initialize()).status == 200
            modern = served.client(MODERN)
            clients: dict[str, McpHttp] = {HANDSHAKE: handshake, MODERN: modern}
            for case in ERRORS:
                version, method, params = case[:3]
                reply = await clients[version].request(method, with_meta(version, params))
                assert reply.status in (200, 400, 404), (
                    case,
                    reply.status,
                )  # 2026: -32601 is a 404
                check(reply.last, version, case)
