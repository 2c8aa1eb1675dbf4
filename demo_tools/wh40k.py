"""Warhammer 40k tools: Inquisitor names, dice, battles, two that ask, and a long campaign.

`wh40k.wager` asks the user which side they back (elicitation); `wh40k.battle_report` has the
client's model narrate a battle (sampling), with template text when the client cannot sample.
`wh40k.campaign` fights battle after battle as a task (the tasks extension) for a client that
declared it, its status message naming each battle.

Every random choice (but the campaign's, seeded by its arguments) comes from the module's
`rng`, so tests can make results repeatable with
`demo_tools.wh40k.rng.seed(...)`, or a served process with the TRIO_MCP_DEMO_SEED variable.
"""

import os
import random
from dataclasses import dataclass
from typing import Annotated, Literal

import trio
from pydantic import Field

from trio_mcp import (
    AcceptedElicitation,
    Choices,
    ClientCapabilityError,
    Context,
    DeclinedElicitation,
    Param,
    RequestError,
    tool,
)
from trio_mcp.tasks import TaskSupport

from .codex import chronicle

__all__ = [
    "BATTLE_SECONDS",
    "CAMPAIGN_BATTLE_SECONDS",
    "BattleReport",
    "CampaignReport",
    "DiceRoll",
    "Inquisitor",
    "Wager",
    "battle_report",
    "battle_simulation",
    "campaign",
    "inquisitor_name",
    "rng",
    "roll_dice",
    "wager",
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

ImperialForce = Annotated[str, Param("Imperial force (random when empty)")]
EnemyForce = Annotated[str, Param("Enemy force (random when empty)")]

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
    imperial_force: ImperialForce = "",
    enemy_force: EnemyForce = "",
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


@dataclass
class Wager:
    """What the user backs in `wh40k.wager`."""

    side: Annotated[
        str, Choices({"imperium": "The Imperium of Man", "foe": "The foe"}), Field(title="Side")
    ] = "imperium"
    thrones: Annotated[int, Field(ge=1, le=1000, description="Thrones wagered")] = 10


@tool("wh40k.wager", "Back a side in a battle, then watch it fought")
async def wager(
    ctx: Context,
    imperial_force: ImperialForce = "",
    enemy_force: EnemyForce = "",
) -> str:
    """Ask which side the user backs (default: the Imperium, 10 Thrones), then fight it out.

    It asks before it rolls anything: under 2026-07-28 the call runs again from the start once
    the answer arrives, and a roll made before the question would be made twice.
    """
    outcome = await ctx.elicit("Which side do you back, and for how many Thrones?", Wager)
    if isinstance(outcome, DeclinedElicitation):
        return "No wager: the Emperor protects your purse."
    if not isinstance(outcome, AcceptedElicitation):
        return "The bookmaker shrugs: the wager is off."
    imperial = imperial_force or rng.choice(_IMPERIAL_FORCES)
    enemy = enemy_force or rng.choice(_ENEMY_FORCES)
    imperial_won = rng.random() < 0.5
    won = imperial_won == (outcome.data.side == "imperium")
    victor = imperial if imperial_won else enemy
    result = f"won {2 * outcome.data.thrones}" if won else f"lost {outcome.data.thrones}"
    return f"The {victor} carried the day: you {result} Thrones."


@tool("wh40k.battle_report", "A battle report, narrated by the client's model when it can")
async def battle_report(
    ctx: Context,
    imperial_force: Annotated[str, Param("Imperial force")] = "Ultramarines",
    enemy_force: Annotated[str, Param("Enemy force")] = "Orks of the Goff clan",
) -> str:
    """Ask the client's model to narrate a battle; the template text when it cannot sample.

    The battle follows from the forces alone (its own seeded generator): under 2026-07-28 the
    call runs again when the narration arrives, and it must describe the same battle.
    """
    fate = random.Random(f"{imperial_force}|{enemy_force}")
    battlefield = fate.choice(_BATTLEFIELDS)
    victor, vanquished = (
        (imperial_force, enemy_force) if fate.random() < 0.5 else (enemy_force, imperial_force)
    )
    template = f"On {battlefield}, the {victor} broke the {vanquished}. The Emperor protects."
    try:
        reply = await ctx.sample(
            f"Write a three-sentence battle report: on {battlefield}, the {victor} defeated the "
            f"{vanquished}.",
            max_tokens=300,
            system_prompt="You are a Remembrancer of the Imperium, grim and brief.",
        )
    except (ClientCapabilityError, RequestError):
        return template  # the client cannot (or would not) sample
    return reply.text or template


#: Seconds each battle of a campaign takes: five battles, the default, in three seconds.
CAMPAIGN_BATTLE_SECONDS = 0.6


@dataclass(frozen=True)
class CampaignReport:
    """How a campaign went, battle by battle."""

    imperial_force: str
    enemy_force: str
    battles: list[str]
    imperial_victories: int
    enemy_victories: int
    verdict: str


@tool(
    "wh40k.campaign",
    "Fight a campaign of battles; a long job that runs as a task",
    task=TaskSupport(poll_interval=0.25),
)
async def campaign(
    ctx: Context,
    battles: Annotated[int, Param("Battles to fight"), Field(ge=1, le=100)] = 5,
    seed: Annotated[int, Param("Seeds the campaign: the same seed, the same campaign")] = 40_000,
    imperial_force: Annotated[str, Param("Imperial force")] = "Cadian 8th",
    enemy_force: Annotated[str, Param("Enemy force")] = "Black Legion",
) -> CampaignReport:
    """Fight `battles` battles, 0.6 s each, and report who won the campaign.

    For a client that declared the tasks extension the call becomes a task at once: its status
    message names each battle as it is fought, and cancelling the task stops the campaign
    between blows. Other clients get the same as progress notifications. The campaign follows
    from its arguments alone (its own generator, seeded with them).
    """
    fate = random.Random(f"{seed}|{battles}|{imperial_force}|{enemy_force}")
    fought: list[str] = []
    imperial_wins = 0
    for number in range(1, battles + 1):
        battlefield = fate.choice(_BATTLEFIELDS)
        await ctx.report_progress(
            number - 1, battles, f"battle {number} of {battles}: on {battlefield}"
        )
        await trio.sleep(CAMPAIGN_BATTLE_SECONDS)
        won = fate.random() < 0.55
        imperial_wins += won
        victor = imperial_force if won else enemy_force
        fought.append(f"Battle {number}, {battlefield}: the {victor} held the field.")
    await ctx.report_progress(battles, battles, "the campaign is over")
    enemy_wins = battles - imperial_wins
    if imperial_wins > enemy_wins:
        verdict = f"The {imperial_force} won the campaign, {imperial_wins} to {enemy_wins}."
    elif enemy_wins > imperial_wins:
        verdict = f"The {enemy_force} won the campaign, {enemy_wins} to {imperial_wins}."
    else:
        verdict = f"Neither side broke: {imperial_wins} battles each."
    return CampaignReport(imperial_force, enemy_force, fought, imperial_wins, enemy_wins, verdict)
