"""Warhammer 40k tools: Inquisitor names, flavoured dice rolls, and a (slow) battle simulation.

Every random choice comes from the module's `rng`, so tests can make results repeatable with
`demo_tools.wh40k.rng.seed(...)`, or a served process with the TRIO_MCP_DEMO_SEED variable.
"""

import os
import random
from dataclasses import dataclass
from typing import Annotated, Literal

import trio
from pydantic import Field

from trio_mcp import Context, Param, tool

from .codex import chronicle

__all__ = [
    "BATTLE_SECONDS",
    "BattleReport",
    "DiceRoll",
    "Inquisitor",
    "battle_simulation",
    "inquisitor_name",
    "rng",
    "roll_dice",
]

rng = random.Random(os.environ.get("TRIO_MCP_DEMO_SEED"))

_FIRST_NAMES = ("Gregor", "Hestia", "Tobias", "Ravenor", "Helena", "Coteaz", "Aemos", "Kryptman")
_SURNAMES = ("Eisenhorn", "Vane", "Valdor", "Karamazov", "Quixos", "Drake", "Lazarus", "Czevak")
_TITLES = ("Lord Inquisitor", "Inquisitor", "Interrogator", "Inquisitor-Lord", "Grand Master")
_ORDOS = {
    "Ordo Hereticus": "hunts heretics, witches and mutants within the Imperium",
    "Ordo Malleus": "stands against the daemons of the warp",
    "Ordo Xenos": "guards the Imperium from alien threats",
}
_IMPERIAL_FORCES = (
    "Ultramarines",
    "Space Wolves",
    "Cadian 8th",
    "Adepta Sororitas",
    "Grey Knights",
)
_ENEMY_FORCES = ("Orks of the Goff clan", "Black Legion", "Hive Fleet Leviathan", "Necron Dynasty")
_BATTLEFIELDS = (
    "the ash wastes of Armageddon",
    "a shattered hive spire",
    "the ice fields of Fenris",
)
_FLAVOR_TEXT = {
    "hit": "The guns of the faithful roar",
    "wound": "Blades bite into the foe",
    "save": "Armour blessed by the Omnissiah holds",
}
# Successes: 3+ to hit, 4+ to wound, 3+ to save (a marine's power armour save).
_TARGETS = {"hit": 3, "wound": 4, "save": 3}

#: Seconds a battle takes in all (three phases).
BATTLE_SECONDS = 0.5


@dataclass(frozen=True)
class Inquisitor:
    """A generated Inquisitor."""

    name: str
    full_title: str
    ordo: str
    description: str


@dataclass(frozen=True)
class DiceRoll:
    """The outcome of a roll."""

    rolls: list[int]
    total: int
    successes: int
    flavor_text: str


@dataclass(frozen=True)
class BattleReport:
    """How a simulated battle went."""

    imperial_force: str
    enemy_force: str
    battlefield: str
    imperial_victory: bool
    imperial_casualties: int
    enemy_casualties: int
    report: str


@tool("wh40k.inquisitor_name", "Generate a Warhammer 40k Inquisitor name")
def inquisitor_name(
    include_title: Annotated[
        bool, Param("Prefix the name with a rank such as Lord Inquisitor")
    ] = True,
) -> Inquisitor:
    """Generate a random Inquisitor with an ordo and a short description."""
    name = f"{rng.choice(_FIRST_NAMES)} {rng.choice(_SURNAMES)}"
    ordo = rng.choice(sorted(_ORDOS))
    full_title = f"{rng.choice(_TITLES)} {name} of the {ordo}" if include_title else name
    return Inquisitor(name, full_title, ordo, f"{name} {_ORDOS[ordo]}.")


@tool("wh40k.roll_dice", "Roll dice with Warhammer 40k flavor", inline=True)
def roll_dice(
    dice_count: Annotated[int, Param("Number of dice to roll"), Field(ge=1, le=100)],
    dice_sides: Annotated[int, Param("Sides on each die"), Field(ge=1, le=20)] = 6,
    flavor: Annotated[
        Literal["hit", "wound", "save"], Param("What the roll is for: hit, wound or save")
    ] = "hit",
) -> DiceRoll:
    """Roll the dice and count successes (3+ to hit or save, 4+ to wound)."""
    rolls = [rng.randint(1, dice_sides) for _ in range(dice_count)]
    target = _TARGETS[flavor]
    successes = sum(1 for r in rolls if r >= target)
    text = f"{_FLAVOR_TEXT[flavor]}: {successes} of {dice_count} succeed on {target}+."
    return DiceRoll(rolls, sum(rolls), successes, text)


@tool("wh40k.battle_simulation", "Simulate a battle in the Warhammer 40k universe")
async def battle_simulation(
    ctx: Context,
    imperial_force: Annotated[str, Param("Imperial force (random when empty)")] = "",
    enemy_force: Annotated[str, Param("Enemy force (random when empty)")] = "",
) -> BattleReport:
    """Simulate a battle in three phases, reporting progress; takes about half a second.

    The report becomes the resource wh40k://battles/latest, whose subscribers are told.
    """
    imperial = imperial_force or rng.choice(_IMPERIAL_FORCES)
    enemy = enemy_force or rng.choice(_ENEMY_FORCES)
    battlefield = rng.choice(_BATTLEFIELDS)
    phases = ("Deployment", "Engagement", "Resolution")
    for step, phase in enumerate(phases, start=1):
        await trio.sleep(BATTLE_SECONDS / len(phases))
        await ctx.report_progress(step, len(phases), f"{phase} on {battlefield}")
    imperial_losses = rng.randint(0, 100)
    enemy_losses = rng.randint(0, 100)
    victory = enemy_losses >= imperial_losses
    outcome = "triumphed over" if victory else "was driven back by"
    report = f"On {battlefield}, the {imperial} {outcome} the {enemy}."
    # The latest report is a resource: its subscribers hear of it now.
    await chronicle.record(report)
    return BattleReport(
        imperial, enemy, battlefield, victory, imperial_losses, enemy_losses, report
    )
