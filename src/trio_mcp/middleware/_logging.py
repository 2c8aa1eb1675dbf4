"""`RequestLogging`: one log line per request, as `key=value` text or one JSON object.

Fields, in this order (a field with nothing to say is left out):

- `method`: the JSON-RPC method; `target`: the tool's or prompt's name, the resource's URI,
  the task's id;
- `outcome`: "ok", "isError", "input_required", "error" (then `code` and `error`, the JSON-RPC
  error's code and message) or "cancelled" (no answer was sent);
- `duration_ms`: from the chain reaching this middleware to its result, in milliseconds;
- `id`: the request's JSON-RPC id; `session`: its session's id; `version`: its revision;
- `principal`: who the verified token stands for (`subject`, `issuer`, `client` in text);
- `arguments`: the arguments as sent, as JSON, only with `include_arguments=True`.

Arguments stay out by default: they may hold secrets (a password to a login tool, a token).
Long values (arguments, error messages) are cut to `max_value_chars`. The fields also ride on
the log record as `record.mcp` (a dict) for a formatter of your own. Nothing is formatted when
the logger would drop the line.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Final, Literal

from .._core.jsonrpc import dumps
from .._dispatch.middleware import CallNext, Middleware
from .._dispatch.resolve import ResolvedRequest
from ._outcome import Outcome, outcome_of_exception, outcome_of_result

__all__ = ["RequestLogging"]

#: The logger's name unless told otherwise.
DEFAULT_REQUEST_LOGGER: Final = "trio_mcp.requests"
# Characters of one value (arguments, an error message) kept in a line: 1,000 is about twelve
# lines of a terminal, enough to see what was asked, while a 10 MB argument cannot make a
# 10 MB log line (nginx caps a logged request line at 1 KB for the same reason).
DEFAULT_MAX_VALUE_CHARS: Final = 1000
#: The fields whose values the server makes (a method reaches middleware only if it knows it).
_PLAIN: Final = frozenset({"method", "outcome", "code", "duration_ms", "version"})
#: The source file named by the records (`LogRecord.pathname`).
_SOURCE: Final = "(trio_mcp request log)"
#: What makes a text value need quotes: anything but letters, digits and `-_./:@+`.
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9\-_./:@+]")


class RequestLogging(Middleware):
    """Log one line per request: method, target, outcome, duration, who, which session.

    Args:
        logger: The logger, or its name.
        level: The level of the lines of requests that went well ("ok", "input_required").
        error_level: The level of the others ("isError", "error", "cancelled"); default: `level`.
        format: "text" (`key=value` pairs, values quoted when needed) or "json" (one JSON
            object per line).
        include_arguments: Log the arguments as sent (off by default: they may hold secrets).
        max_value_chars: The longest argument text or error message logged; longer ones are
            cut, with how much was left out.
        exclude: Methods not logged ("ping", say).
    """

    inline = True  # its hooks never wait: calls answered at once stay on the reader

    def __init__(
        self,
        *,
        logger: logging.Logger | str = DEFAULT_REQUEST_LOGGER,
        level: int = logging.INFO,
        error_level: int | None = None,
        format: Literal["text", "json"] = "text",
        include_arguments: bool = False,
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
        exclude: tuple[str, ...] | frozenset[str] = (),
    ) -> None:
        if format not in ("text", "json"):
            raise ValueError(f'format must be "text" or "json", not {format!r}')
        if max_value_chars < 1:
            raise ValueError("max_value_chars must be positive")
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level
        self.error_level = level if error_level is None else error_level
        self.format = format
        self.include_arguments = include_arguments
        self.max_value_chars = max_value_chars
        self.exclude = frozenset(exclude)

    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """Time the rest of the chain and log how the request ended."""
        if request.method in self.exclude or not self.logger.isEnabledFor(
            min(self.level, self.error_level)
        ):
            return await call_next(request)
        started = time.perf_counter()
        try:
            result = await call_next(request)
        except BaseException as exc:
            outcome = outcome_of_exception(request, exc)
            self._log(request, outcome, time.perf_counter() - started)
            raise
        self._log(request, outcome_of_result(result), time.perf_counter() - started)
        return result

    def fields(self, request: ResolvedRequest, outcome: Outcome, seconds: float) -> dict[str, Any]:
        """The fields of one request's line (module docstring), in their order."""
        label, code, message = outcome
        fields: dict[str, Any] = {"method": request.method}
        if request.name is not None:
            fields["target"] = request.name
        fields["outcome"] = label
        if code is not None:
            fields["code"] = code
        if message is not None:
            fields["error"] = self._cut(message)
        fields["duration_ms"] = round(seconds * 1000, 3)
        fields["id"] = request.id
        if request.session_id is not None:
            fields["session"] = request.session_id
        if request.version is not None:
            fields["version"] = request.version
        principal = request.principal
        if principal is not None:
            issuer, subject, client = principal
            fields["principal"] = {"issuer": issuer, "subject": subject, "client": client}
        if self.include_arguments and request.kind in ("tool", "prompt"):
            fields["arguments"] = self._cut(dumps(dict(request.arguments)).decode())
        return fields

    def _log(self, request: ResolvedRequest, outcome: Outcome, seconds: float) -> None:
        level = self.level if outcome[0] in ("ok", "input_required") else self.error_level
        if not self.logger.isEnabledFor(level):
            return
        fields = self.fields(request, outcome, seconds)
        line = dumps(fields).decode() if self.format == "json" else _text(fields)
        # Made here rather than by `logger.log`, which would look up the calling frame: a
        # request's line has no source line worth naming, and the lookup is a fifth of its cost.
        logger = self.logger
        record = logger.makeRecord(
            logger.name, level, _SOURCE, 0, line, (), None, extra={"mcp": fields}
        )
        logger.handle(record)

    def _cut(self, text: str) -> str:
        limit = self.max_value_chars
        if len(text) <= limit:
            return text
        return f"{text[:limit]}...(+{len(text) - limit} chars)"


def _text(fields: dict[str, Any]) -> str:
    """`key=value` pairs; a value with a space, quote, `=` or control character is quoted."""
    parts: list[str] = []
    for key, value in fields.items():
        if key == "principal":
            parts.extend(
                f"{part}={_value(value[part])}"
                for part in ("subject", "issuer", "client")
                if value[part] is not None
            )
        elif key in _PLAIN or type(value) is int or type(value) is float:
            parts.append(f"{key}={value}")  # nothing to quote: the server's own words
        else:
            parts.append(f"{key}={_value(value)}")
    return " ".join(parts)


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if text and _UNSAFE.search(text) is None:
        return text
    return dumps(text).decode()  # a JSON string: quoted, escapes for quotes and newlines
