"""The trio-mcp demo server: calculator and Warhammer 40k tools, the codex as resources.

Serve it with `trio-mcp run demo_tools` or `python -m demo_tools`. It uses the public
`trio_mcp` API only, like any user's package would.
"""

from trio_mcp import Server

from . import calculator, codex, wh40k

__all__ = ["build_server", "server"]


def build_server() -> Server:
    """A server with every demo tool, resource and prompt registered."""
    demo = Server(
        "trio-mcp-demo",
        instructions=(
            "Calculator tools (calculator.*) do arithmetic on numbers; Warhammer 40k tools "
            "(wh40k.*) generate Inquisitor names, roll dice and simulate battles. The codex "
            "is in resources (wh40k://codex/factions, wh40k://units/{faction}/{unit_id}); "
            "wh40k://battles/latest holds the latest battle report."
        ),
    )
    demo.add_tools(calculator)
    demo.add_tools(wh40k)
    demo.add_resources(codex)
    demo.add_prompts(codex)
    codex.chronicle.announce_to(demo)
    return demo


server = build_server()
