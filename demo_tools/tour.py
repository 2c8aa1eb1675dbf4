"""What `trio-mcp demo` shows: the codex's resources and prompt, the rules skill, each demo tool.

Two of the tools ask the client: `wh40k.wager` asks the user (elicitation) and
`wh40k.battle_report` asks the client's model (sampling). The tour answers both with canned
handlers (`canned_answers`), printing each exchange as it happens. The last call,
`wh40k.campaign`, runs as a task (the tour's client declares the tasks extension), whose states
are printed as they change.

The tour lives beside the tools it calls; trio-mcp's command line only knows how to run a list
of calls against a server (its `walkthrough`) and hands it to `run_tour`, which uses the public
client API only: listing and reading resources, reading a template, getting a prompt,
completing its arguments, loading the rules primer skill (the skills extension: its files
checked against their digests), and a subscription whose update arrives during the battle.
"""

import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TextIO

from trio_mcp import (
    AcceptedElicitation,
    Client,
    ElicitRequest,
    SamplingRequest,
    SamplingResult,
    TextContent,
)

from .codex import LATEST_BATTLE

__all__ = ["TOUR", "canned_answers", "run_tour"]

#: (tool, arguments), in the order the tour calls them.
TOUR: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    ("calculator.add", {"a": 5, "b": 3}),
    ("calculator.subtract", {"a": 10, "b": 4}),
    ("calculator.multiply", {"a": 6, "b": 7}),
    ("calculator.divide", {"a": 20, "b": 4}),
    ("calculator.divide", {"a": 10, "b": 0}),
    ("calculator.power", {"base": 2, "exponent": 8}),
    ("wh40k.inquisitor_name", {}),
    ("wh40k.roll_dice", {"dice_count": 3, "dice_sides": 6, "flavor": "hit"}),
    ("wh40k.battle_simulation", {"imperial_force": "Space Marines", "enemy_force": "Orks"}),
    ("wh40k.wager", {"imperial_force": "Cadian 8th", "enemy_force": "Black Legion"}),
    ("wh40k.battle_report", {"imperial_force": "Space Wolves", "enemy_force": "Necrons"}),
    # A long job: the client declared the tasks extension, so the call becomes a task whose
    # status the tour shows as it changes.
    ("wh40k.campaign", {"battles": 2}),
)

#: What the tour's user answers `wh40k.wager`, and what its "model" writes.
WAGER_ANSWER: Final = {"side": "foe", "thrones": 20}
NARRATION: Final = (
    "Frost cracked under ceramite as the Wolves closed. The tomb-guard did not flinch, and "
    "neither did the sagas. By dusk only one host still stood."
)


def canned_answers(out: TextIO | None = None) -> dict[str, Any]:
    """Handlers for `open_client` that answer the asking tools, printing the exchange."""

    def say(text: str) -> None:
        print(text, file=out or sys.stdout, flush=True)

    async def elicit(request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
        say(f"     the server asks the user: {request.message}")
        fields = (request.requested_schema or {}).get("properties", {})
        defaults = {name: spec.get("default") for name, spec in fields.items()}
        say(f"       form fields (defaults): {json.dumps(defaults)}")
        say(f"       the user answers (canned): {json.dumps(WAGER_ANSWER)}")
        return AcceptedElicitation(dict(WAGER_ANSWER))

    async def sample(request: SamplingRequest) -> SamplingResult:
        say(f"     the server asks the client's model: {request.messages[-1].text}")
        say("       the model answers (canned)")
        return SamplingResult(TextContent(NARRATION), "demo-remembrancer", "endTurn")

    return {"elicitation_handler": elicit, "sampling_handler": sample}


async def show_skills(client: Client, say: Callable[[str], None]) -> None:
    """List the skills (nothing of them is fetched), then load the first and read a file of it.

    Each file is checked against the skill's entry (its size, its SHA-256 digest and, for
    SKILL.md, its front matter) before it is shown.
    """
    skills = await client.list_skills()
    say("Skills:")
    for skill in skills:
        say(f"  {skill.uri}  {skill.name} ({len(skill.files or ())} files, {skill.size:,} bytes)")
    if not skills:
        return
    loaded = await client.load_skill(skills[0])
    heading = next(line for line in loaded.body.splitlines() if line.strip())
    say(f"load {loaded.info.uri} (size, digest and front matter checked)\n  = {heading}")
    for listed in (loaded.info.files or ())[1:2]:
        read = await client.read_skill_file(loaded, listed.uri)
        say(f"read {listed.uri} (checked)\n  = {(read.text or '').splitlines()[0]}")
    say("")


Walkthrough = Callable[
    [Client, Sequence[tuple[str, dict[str, Any]]], TextIO | None], Awaitable[int]
]


async def run_tour(client: Client, walkthrough: Walkthrough, out: TextIO | None = None) -> int:
    """Show the codex's resources and prompt, then make the calls of `TOUR` with `walkthrough`.

    Returns:
        What `walkthrough` returns (the command's exit status).
    """
    out = out or sys.stdout

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    say("Resources:")
    for listed in await client.list_resources():
        say(f"  {listed.uri}  {listed.title or listed.name} ({listed.mime_type})")
    for template in await client.list_resource_templates():
        say(f"  {template.uri_template}  {template.title or template.name} (template)")
    say(
        f"read wh40k://codex/factions\n  = {(await client.read_resource('wh40k://codex/factions')).text}"
    )
    unit = "wh40k://units/orks/1"
    say(f"read {unit}\n  = {(await client.read_resource(unit)).text}")

    (briefing,) = [p for p in await client.list_prompts() if p.name == "wh40k.battle_briefing"]
    shown = ", ".join(a.name + ("" if a.required else "?") for a in briefing.arguments)
    say(f"\nPrompt {briefing.name}({shown})")
    completed = await client.complete(briefing, "defender", "n")
    say(f"complete defender='n'  = {', '.join(completed.values)}")
    arguments = {"attacker": "space_marines", "defender": completed.values[0]}
    got = await client.get_prompt(briefing.name, arguments)
    say(f"get {briefing.name}({arguments})\n  = {got.text}\n")
    await show_skills(client, say)

    # Updates travel on the connection's own stream: stdio has one, in order with the battle's
    # result. A Streamable HTTP session's come on its GET stream, in no set order with the
    # result of the call that made them, which would jumble the tour's printout.
    subscribed = client.session_id is None

    def on_update(uri: str) -> None:
        # A plain function runs as the notification is read, so this line comes before the
        # battle's result (an async handler would run later, in a task of its own).
        say(f"     resource updated: {uri}")

    if subscribed:
        await client.subscribe(LATEST_BATTLE, on_update)
        say(f"Subscribed to {LATEST_BATTLE}: the battle below updates it.\n")
    else:
        say(f"(Not subscribing to {LATEST_BATTLE}: over HTTP its updates race the results.)\n")
    return await walkthrough(client, TOUR, out)
