"""The trio-mcp demo server: calculator and Warhammer 40k dice tools.

Serve it with `trio-mcp run demo_tools` or `python -m demo_tools`. It uses the public
`trio_mcp` API only, like any user's package would.
"""

from trio_mcp import Server

from . import calculator, wh40k

__all__ = ["build_server", "server"]


def build_server() -> Server:
    """A server with every demo tool registered."""
    demo = Server(
        "trio-mcp-demo",
        instructions=(
            "Calculator tools (calculator.*) do arithmetic on numbers; Warhammer 40k tools "
            "(wh40k.*) generate Inquisitor names, roll dice and simulate battles."
        ),
    )
    demo.add_tools(calculator)
    demo.add_tools(wh40k)
    return demo


server = build_server()
