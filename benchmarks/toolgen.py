"""Generated tool functions with varied signatures, for the registration workload.

The functions are real: generated as source text and executed, so that both libraries read
ordinary annotations through `inspect` exactly as they would read hand-written tools. The same
seed gives the same functions, and the text is built before any clock starts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final

__all__ = ["PARAM_KINDS", "generate_tools"]

# (annotation, default or None for required). Every kind the issue names: int, str, float,
# bool, list, optional, Literal; some with defaults.
PARAM_KINDS: Final = (
    ("int", None),
    ("str", None),
    ("float", None),
    ("bool", None),
    ("list[int]", None),
    ("list[str]", None),
    ("int | None", "None"),
    ("str | None", "None"),
    ('Literal["red", "green", "blue"]', None),
    ('Literal["asc", "desc"]', '"asc"'),
    ("int", "10"),
    ("float", "0.5"),
    ("bool", "False"),
)
RETURNS: Final = ("str", "int", "float", "dict[str, int]")
BODIES: Final = {"str": '"ok"', "int": "1", "float": "1.5", "dict[str, int]": '{"n": 1}'}


def _source(count: int, seed: int) -> str:
    rng = random.Random(seed)
    lines = ["from typing import Literal", ""]
    for index in range(count):
        kinds = [rng.choice(PARAM_KINDS) for _ in range(rng.randint(1, 6))]
        # Required parameters first, as Python requires.
        kinds.sort(key=lambda kind: kind[1] is not None)
        params = ", ".join(
            f"p{i}: {annotation}" + ("" if default is None else f" = {default}")
            for i, (annotation, default) in enumerate(kinds)
        )
        returns = rng.choice(RETURNS)
        lines += [
            f"def tool_{index:04d}({params}) -> {returns}:",
            f'    """Generated tool number {index} with {len(kinds)} parameter(s)."""',
            f"    return {BODIES[returns]}",
            "",
        ]
    return "\n".join(lines)


def generate_tools(count: int, seed: int = 3) -> list[Callable[..., Any]]:
    """`count` functions named `tool_0000`, ... with 1 to 6 parameters of mixed kinds."""
    namespace: dict[str, Any] = {"__name__": "benchmark_generated_tools"}
    exec(compile(_source(count, seed), "<generated tools>", "exec"), namespace)
    return [namespace[f"tool_{index:04d}"] for index in range(count)]
