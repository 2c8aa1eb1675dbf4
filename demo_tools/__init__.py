"""The trio-mcp demo server: calculator and Warhammer 40k tools, the codex, a rules primer skill.

Serve it with `trio-mcp run demo_tools` or `python -m demo_tools`. It uses the public
`trio_mcp` API only, like any user's package would.
"""

from pathlib import Path

from trio_mcp import Server

from . import calculator, codex, wh40k

__all__ = ["SKILLS", "build_server", "server"]

#: The demo's skills (the skills extension): a Warhammer 40k rules primer.
SKILLS = Path(__file__).resolve().parent / "skills"


def build_server() -> Server:
    """A server with every demo tool, resource and prompt registered."""
    demo = Server(
        "trio-mcp-demo",
        instructions=(
            "Calculator tools (calculator.*) do arithmetic on numbers; Warhammer 40k tools "
            "(wh40k.*) generate Inquisitor names, roll dice and simulate battles. The codex "
            "is in resources (wh40k://codex/factions, wh40k://units/{faction}/{unit_id}); "
            "wh40k://battles/latest holds the latest battle report. The skill "
            "skill://wh40k-rules/SKILL.md explains the rules the wh40k tools roll by."
        ),
    )
    demo.add_tools(calculator)
    demo.add_tools(wh40k)
    demo.add_resources(codex)
    demo.add_prompts(codex)
    codex.chronicle.announce_to(demo)
    demo.add_skills(SKILLS)
    return demo


server = build_server()
