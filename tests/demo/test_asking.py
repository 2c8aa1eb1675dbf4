"""The demo's tools that ask the client: `wh40k.wager` (elicitation), `wh40k.battle_report`
(sampling, with template text when the client cannot sample), in the 2026-07-28 round trips,
seen on the wire through a raw peer."""

from __future__ import annotations

from typing import Any

from demo_tools import build_server
from tests.helpers import RawPeer, open_memory_peer

CAPS: dict[str, Any] = {"elicitation": {}, "sampling": {}}


def meta(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


async def call(peer: RawPeer, name: str, capabilities: dict[str, Any], **extra: Any) -> Any:
    response = await peer.request(
        "tools/call",
        {
            "name": name,
            "arguments": extra.pop("arguments", {}),
            "_meta": meta(capabilities),
            **extra,
        },
    )
    return response["result"]


async def test_the_wager_asks_first_with_defaults_and_settles_on_the_answer() -> None:
    async with open_memory_peer(build_server(), initialize=False) as peer:
        first = await call(peer, "wh40k.wager", CAPS)
        (ask,) = first["inputRequests"].values()
        schema = ask["params"]["requestedSchema"]
        assert schema["properties"]["side"]["default"] == "imperium"
        assert [o["const"] for o in schema["properties"]["side"]["oneOf"]] == ["imperium", "foe"]
        assert schema["properties"]["thrones"]["default"] == 10
        key = next(iter(first["inputRequests"]))
        done = await call(
            peer,
            "wh40k.wager",
            CAPS,
            inputResponses={key: {"action": "accept", "content": {"side": "foe", "thrones": 7}}},
            requestState=first["requestState"],
        )
        text = done["content"][0]["text"]
        assert "carried the day: you " in text
        assert ("won 14 Thrones" in text) or ("lost 7 Thrones" in text)
        declined = await call(
            peer, "wh40k.wager", CAPS, inputResponses={key: {"action": "decline"}}
        )
        assert declined["content"][0]["text"] == "No wager: the Emperor protects your purse."


async def test_the_battle_report_is_narrated_by_the_client_or_falls_back() -> None:
    arguments = {"imperial_force": "Cadians", "enemy_force": "Orks"}
    async with open_memory_peer(build_server(), initialize=False) as peer:
        plain = await call(peer, "wh40k.battle_report", {}, arguments=arguments)
        assert plain["content"][0]["text"].endswith("The Emperor protects.")
        first = await call(peer, "wh40k.battle_report", CAPS, arguments=arguments)
        (key,) = first["inputRequests"]
        prompt = first["inputRequests"][key]["params"]["messages"][0]["content"]["text"]
        # The battle follows from the forces: the retry describes the same one.
        again = await call(peer, "wh40k.battle_report", CAPS, arguments=arguments)
        assert again["inputRequests"][key]["params"]["messages"][0]["content"]["text"] == prompt
        battlefield = prompt.split(": on ")[1].split(",")[0]
        assert f"On {battlefield}," in plain["content"][0]["text"]
        narrated = await call(
            peer,
            "wh40k.battle_report",
            CAPS,
            arguments=arguments,
            inputResponses={
                key: {
                    "role": "assistant",
                    "content": {"type": "text", "text": "The ash fell like snow."},
                    "model": "remembrancer-1",
                }
            },
            requestState=first["requestState"],
        )
        assert narrated["content"][0]["text"] == "The ash fell like snow."
