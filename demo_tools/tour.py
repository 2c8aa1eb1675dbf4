"""The calls of `trio-mcp demo`: each demo tool in turn, a division by zero among them.

The tour lives beside the tools it calls; trio-mcp's command line only knows how to run a list
of calls against a server and show what comes back.
"""

from typing import Any, Final

__all__ = ["TOUR"]

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
)
