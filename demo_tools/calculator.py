"""Calculator tools: pure arithmetic, so every one runs inline on the event loop."""

from typing import Annotated

from trio_mcp import Param, ToolError, tool

__all__ = ["add", "divide", "multiply", "power", "subtract"]


@tool("calculator.add", "Add two numbers", inline=True)
def add(
    a: Annotated[float, Param("First number")],
    b: Annotated[float, Param("Second number")],
) -> float:
    """Return a + b."""
    return a + b


@tool("calculator.subtract", "Subtract one number from another", inline=True)
def subtract(
    a: Annotated[float, Param("Number to subtract from")],
    b: Annotated[float, Param("Number to subtract")],
) -> float:
    """Return a - b."""
    return a - b


@tool("calculator.multiply", "Multiply two numbers", inline=True)
def multiply(
    a: Annotated[float, Param("First number")],
    b: Annotated[float, Param("Second number")],
) -> float:
    """Return a * b."""
    return a * b


@tool("calculator.divide", "Divide one number by another", inline=True)
def divide(
    a: Annotated[float, Param("Dividend (number to be divided)")],
    b: Annotated[float, Param("Divisor (number to divide by)")],
) -> float:
    """Return a / b; dividing by zero is a tool error the model can see."""
    if b == 0:
        raise ToolError("Cannot divide by zero")
    return a / b


@tool("calculator.power", "Raise a number to a power", inline=True)
def power(
    base: Annotated[float, Param("Base number")],
    exponent: Annotated[float, Param("Exponent")],
) -> float:
    """Return base ** exponent; results that are not real numbers are tool errors."""
    try:
        result: float | complex = base**exponent
    except (OverflowError, ZeroDivisionError) as exc:
        raise ToolError(f"Cannot compute {base} ** {exponent}: {exc}") from None
    if isinstance(result, complex):
        raise ToolError(f"{base} ** {exponent} is not a real number")
    return result
