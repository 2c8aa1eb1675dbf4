"""The Warhammer 40k codex as MCP resources and prompts, declared like the tools.

- `wh40k://codex/factions`: every faction and its units (a static JSON resource).
- `wh40k://units/{faction}/{unit_id}`: one unit's datasheet, a template whose variables are
  typed (`faction` a `Literal`, `unit_id` an `int`), so both validate and `faction` completes.
- `wh40k://battles/latest`: the report of the latest `wh40k.battle_simulation`; clients that
  subscribe hear when a new battle is over (`chronicle`).
- `wh40k.battle_briefing`: a prompt whose `Literal` arguments complete from their values.
"""

import weakref
from typing import Annotated, Any, Literal

from trio_mcp import Param, PromptMessage, ResourceNotFoundError, Server, prompt, resource

__all__ = [
    "LATEST_BATTLE",
    "UNITS",
    "BattleChronicle",
    "Faction",
    "battle_briefing",
    "chronicle",
    "factions",
    "latest_battle",
    "unit",
]

Faction = Literal["space_marines", "orks", "necrons", "tyranids"]
Battlefield = Literal["hive_city", "ash_wastes", "ice_world", "space_hulk"]

#: Faction -> its units: (name, points, toughness, save, what they do).
UNITS: dict[str, tuple[tuple[str, int, int, str, str], ...]] = {
    "space_marines": (
        ("Intercessor Squad", 90, 4, "3+", "Line infantry with bolt rifles"),
        ("Terminator Squad", 185, 5, "2+", "Veterans in tactical dreadnought armour"),
        ("Redemptor Dreadnought", 210, 10, "2+", "A walking tomb armed with a macro plasma"),
    ),
    "orks": (
        ("Boyz", 85, 5, "5+", "A green tide of choppas and sluggas"),
        ("Meganobz", 110, 6, "2+", "Bosses in mega armour"),
        ("Gorkanaut", 280, 13, "3+", "A stompy effigy of Gork (or possibly Mork)"),
    ),
    "necrons": (
        ("Necron Warriors", 90, 4, "4+", "Deathless soldiers with gauss flayers"),
        ("Lychguard", 85, 5, "3+", "The overlord's bodyguard"),
        ("Doomsday Ark", 200, 10, "3+", "A gun that can crack a bastion"),
    ),
    "tyranids": (
        ("Termagants", 60, 3, "5+", "Chitinous swarms with fleshborers"),
        ("Genestealers", 75, 4, "5+", "Lightning-fast infiltrators"),
        ("Hive Tyrant", 215, 10, "2+", "The synaptic heart of a swarm"),
    ),
}

#: The URI of the latest battle report.
LATEST_BATTLE = "wh40k://battles/latest"


class BattleChronicle:
    """The latest battle report, and the servers whose subscribers hear of a new one."""

    def __init__(self) -> None:
        self.latest: str | None = None
        self._servers: weakref.WeakSet[Server] = weakref.WeakSet()

    def announce_to(self, server: Server) -> None:
        """Tell the clients of `server` that subscribed to `LATEST_BATTLE` of each new report."""
        self._servers.add(server)

    async def record(self, report: str) -> None:
        """Keep `report` as the latest and announce it (`server.resource_updated`)."""
        self.latest = report
        for server in list(self._servers):
            await server.resource_updated(LATEST_BATTLE)


chronicle = BattleChronicle()


@resource(
    "wh40k://codex/factions",
    name="factions",
    title="Factions of the codex",
    mime_type="application/json",
)
def factions() -> dict[str, list[str]]:
    """Every faction of the codex and the names of its units (read them by number)."""
    return {name: [unit[0] for unit in units] for name, units in UNITS.items()}


@resource(
    "wh40k://units/{faction}/{unit_id}",
    name="unit",
    title="Unit datasheet",
    mime_type="application/json",
)
def unit(
    faction: Annotated[Faction, Param("The faction")],
    unit_id: Annotated[int, Param("The unit's number in its faction, from 0")],
) -> dict[str, Any]:
    """One unit's datasheet: points, toughness, save and role."""
    units = UNITS[faction]
    if not 0 <= unit_id < len(units):
        raise ResourceNotFoundError(f"the {faction} have units 0 to {len(units) - 1}")
    name, points, toughness, save, role = units[unit_id]
    return {
        "faction": faction,
        "unit_id": unit_id,
        "name": name,
        "points": points,
        "toughness": toughness,
        "save": save,
        "role": role,
    }


@resource(LATEST_BATTLE, name="latest_battle", title="Latest battle report", mime_type="text/plain")
def latest_battle() -> str:
    """The report of the latest simulated battle; subscribe to hear of the next one."""
    return chronicle.latest or "No battle has been fought yet."


@prompt("wh40k.battle_briefing", title="Battle briefing")
def battle_briefing(
    attacker: Annotated[Faction, Param("The attacking faction")],
    defender: Annotated[Faction, Param("The defending faction")],
    battlefield: Annotated[Battlefield, Param("Where the battle is fought")] = "hive_city",
) -> list[PromptMessage]:
    """Brief a model as a tactician for a battle between two factions."""
    attackers = ", ".join(u[0] for u in UNITS[attacker])
    defenders = ", ".join(u[0] for u in UNITS[defender])
    where = battlefield.replace("_", " ")
    return [
        PromptMessage(
            "user",
            f"You are a tactician of the {attacker.replace('_', ' ')}. Your forces ({attackers}) "
            f"attack the {defender.replace('_', ' ')} ({defenders}) in a {where}. "
            "Give a three-step battle plan.",
        )
    ]
