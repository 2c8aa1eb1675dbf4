"""The option records of `Server`, `open_client` and `testing.connect`.

What most users leave alone comes in small frozen records, as httpx takes `Timeout` and
`Limits`: `Server("name", limits=Limits(max_in_flight=64), timeouts=Timeouts(ask=30))`, and
`open_client(command, asking=Asking(elicitation=handler))`; the options people set often stay
plain keywords. A record checks its values when it is made.

The keywords these records replaced are still taken, with a `DeprecationWarning` naming the
record and field that replace them (`moved_keywords`).

Nothing here needs trio: the records are plain data, made before anything runs.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from .._core.answering import ELICITATION_MODES
from .._core.asking import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitRequest,
    Root,
    SamplingRequest,
    SamplingResult,
)
from .._core.client_records import LogMessage
from .._core.framing import DEFAULT_MAX_LINE_BYTES
from .._core.request_state import DEFAULT_STATE_MAX_BYTES, DEFAULT_STATE_TTL
from .._core.subscriptions import DEFAULT_MAX_SUBSCRIPTION_BYTES, DEFAULT_MAX_SUBSCRIPTIONS
from .._core.versions import LATEST_HANDSHAKE_VERSION
from .._dispatch import DEFAULT_ASK_TIMEOUT
from .._features.resources import DEFAULT_MAX_URI_LENGTH

__all__ = [
    "CLIENT_MOVED",
    "DEFAULT_MAX_INPUT_ROUNDS",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_SHUTDOWN_GRACE",
    "SERVER_MOVED",
    "Asking",
    "ElicitationCompleteHandler",
    "ElicitationHandler",
    "Limits",
    "LogHandler",
    "RequestMetaHook",
    "Roots",
    "RootsProvider",
    "SamplingHandler",
    "SessionOptions",
    "Timeouts",
    "moved_keywords",
]

# 1024 concurrent requests per connection: HTTP/2 servers commonly allow 100-250 concurrent
# streams per connection (nginx, Go net/http); MCP tools are often long-running I/O waits, so we
# allow more, while still bounding the tasks and memory one client can pin.
DEFAULT_MAX_IN_FLIGHT: Final = 1024
# Seconds that in-flight calls may still run after the input ended (stdio EOF), before they are
# cancelled. Kubernetes gives a terminating pod 30 s; a subprocess server is usually given less
# by the client that closed its stdin, so we pick a short bound.
DEFAULT_SHUTDOWN_GRACE: Final = 10.0
#: Rounds of input requests (2026-07-28) one call answers before giving up on the server.
DEFAULT_MAX_INPUT_ROUNDS: Final = 10

#: Answers an elicitation: `AcceptedElicitation({...})` with the form's values
#: (`AcceptedElicitation(None)` in URL mode, once the user agreed to go there),
#: `DeclinedElicitation()` or `CancelledElicitation()`.
ElicitationHandler: TypeAlias = Callable[
    [ElicitRequest],
    Awaitable[AcceptedElicitation[Any] | DeclinedElicitation | CancelledElicitation],
]
#: Answers a sampling request with one message from the client's model.
SamplingHandler: TypeAlias = Callable[[SamplingRequest], Awaitable[SamplingResult]]
#: Gives the roots when the server asks (may be async).
RootsProvider: TypeAlias = Callable[[], Awaitable[Sequence[Root]] | Sequence[Root]]
#: The client's roots: a list, or a function that gives them.
Roots: TypeAlias = Sequence[Root] | RootsProvider
#: Called with the `elicitationId` of a URL-mode elicitation the server says is complete.
ElicitationCompleteHandler: TypeAlias = Callable[[str], Awaitable[None] | None]
#: Receives the server's log notifications.
LogHandler = Callable[[LogMessage], Awaitable[None] | None]
#: Called with the method of each request the client sends; what it returns is added to the
#: request's `_meta` (e.g. `trio_mcp.middleware.trace_context_meta`: the caller's trace context).
RequestMetaHook = Callable[[str], Mapping[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """How much one client may make a `Server` hold: `Server(limits=Limits(...))`.

    Attributes:
        max_in_flight: Requests run at once per connection; as many more may wait for a
            slot, and a request past those is answered -32000 ("server busy") at once.
        max_line_bytes: Largest message accepted on line-framed transports (stdio).
        max_subscriptions: Resources one session may be subscribed to at once
            (`resources/subscribe`); past it, -32000 naming the bound.
        max_subscription_bytes: Bytes of subscribed URIs one session may hold at once; past
            it, -32000 naming the bound. A session's subscriptions end with it.
        max_uri_length: The longest URI (in characters) a client may read, subscribe to or
            have matched against the resource templates; a longer one is answered -32602
            naming this limit, before any template sees it. Default 65,536.
        max_request_state_bytes: The longest 2026-07-28 `requestState` made or accepted.

    Raises:
        ValueError: for a bound that is not positive (or, for the subscriptions, negative).
    """

    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS
    max_subscription_bytes: int = DEFAULT_MAX_SUBSCRIPTION_BYTES
    max_uri_length: int = DEFAULT_MAX_URI_LENGTH
    max_request_state_bytes: int = DEFAULT_STATE_MAX_BYTES

    def __post_init__(self) -> None:
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be positive")
        if self.max_subscriptions < 0 or self.max_subscription_bytes < 0:
            raise ValueError("max_subscriptions and max_subscription_bytes must not be negative")
        if self.max_uri_length < 1:
            raise ValueError("max_uri_length must be positive")


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    """How long a `Server` waits: `Server(timeouts=Timeouts(...))`.

    Attributes:
        ask: Seconds a tool waits for the client's answer to one question (`ctx.elicit`,
            `ctx.sample`, `ctx.list_roots`, handshake era) unless the question sets its own
            `timeout`; None waits as long as the call runs.
        shutdown: Seconds in-flight calls may take to finish after the input ends; those
            still running then are answered -32000 ("server shutting down"). Session end
            hooks and the lifespan's exit get as long each.
        request_state: Seconds a 2026-07-28 `requestState` stays valid after it was made.
    """

    ask: float | None = DEFAULT_ASK_TIMEOUT
    shutdown: float = DEFAULT_SHUTDOWN_GRACE
    request_state: float = DEFAULT_STATE_TTL


@dataclass(frozen=True, slots=True, kw_only=True)
class Asking:
    """How a client answers what the server asks: `open_client(..., asking=Asking(...))`.

    Handlers run in tasks of their own (or, for 2026-07-28 input requests, in the calling
    task), concurrently, and may call the server. A handler that raises makes the server's
    request fail with -32603 and its message (a `RequestError` gives its own code), and under
    2026-07-28 ends the call that needed the answer, with that exception. Without a handler
    the capability is not declared and the server's request is refused with -32601.

    Attributes:
        elicitation: Answers the server's elicitations:
            `async handler(request: ElicitRequest) -> ElicitOutcome`, with
            `AcceptedElicitation({...})` holding a form's values (fields left out get the
            schema's defaults), `AcceptedElicitation(None)` for a URL-mode elicitation the
            user agreed to open, `DeclinedElicitation()` or `CancelledElicitation()`. Given,
            the `elicitation` capability is declared.
        sampling: Answers the server's sampling requests:
            `async handler(request: SamplingRequest) -> SamplingResult`. Given, the
            `sampling` capability is declared.
        roots: The roots the client exposes: a list of `Root` (`file://` URIs), or a
            function (sync or async) that returns one when the server asks. Given (even
            empty), the `roots` capability is declared and `Client.set_roots` may change them.
        elicitation_modes: The elicitation modes the handler takes, "form" and "url" by
            default; revisions before 2025-11-25 know forms only.
        on_elicitation_complete: Called (sync or async) with the `elicitationId` of a
            URL-mode elicitation the server says is complete.
        max_input_rounds: 2026-07-28: how many rounds of input requests one call answers
            before it fails with `RemoteProtocolError`.

    Raises:
        ValueError: for a negative `max_input_rounds`. (Unknown elicitation modes and roots
            that are not `file://` URIs are refused when the client is opened.)
    """

    elicitation: ElicitationHandler | None = None
    sampling: SamplingHandler | None = None
    roots: Roots | None = None
    elicitation_modes: Collection[str] = ELICITATION_MODES
    on_elicitation_complete: ElicitationCompleteHandler | None = None
    max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS

    def __post_init__(self) -> None:
        if self.max_input_rounds < 0:
            raise ValueError(f"max_input_rounds must be 0 or more, not {self.max_input_rounds}")

    @property
    def listens(self) -> bool:
        """Whether a server may ask something unrelated to a call (a handler is given)."""
        return any(
            handler is not None
            for handler in (
                self.elicitation,
                self.sampling,
                self.roots,
                self.on_elicitation_complete,
            )
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOptions:
    """What a client session is opened with, whatever carries it (see `open_client`)."""

    client_info: Mapping[str, Any] | None = None
    protocol_version: str = LATEST_HANDSHAKE_VERSION
    log_handler: LogHandler | None = None
    validate_output: bool = True
    asking: Asking = field(default_factory=Asking)
    tasks: bool = False
    request_meta: RequestMetaHook | None = None


#: `Server` keywords of earlier versions: the record and the field that took their place.
SERVER_MOVED: Final[Mapping[str, tuple[str, str]]] = {
    "max_in_flight": ("limits", "max_in_flight"),
    "max_line_bytes": ("limits", "max_line_bytes"),
    "max_subscriptions": ("limits", "max_subscriptions"),
    "max_subscription_bytes": ("limits", "max_subscription_bytes"),
    "max_uri_length": ("limits", "max_uri_length"),
    "request_state_max_bytes": ("limits", "max_request_state_bytes"),
    "ask_timeout": ("timeouts", "ask"),
    "shutdown_grace": ("timeouts", "shutdown"),
    "request_state_ttl": ("timeouts", "request_state"),
}
#: `open_client` and `testing.connect` keywords of earlier versions, likewise.
CLIENT_MOVED: Final[Mapping[str, tuple[str, str]]] = {
    "elicitation_handler": ("asking", "elicitation"),
    "sampling_handler": ("asking", "sampling"),
    "roots": ("asking", "roots"),
    "elicitation_modes": ("asking", "elicitation_modes"),
    "on_elicitation_complete": ("asking", "on_elicitation_complete"),
    "max_input_rounds": ("asking", "max_input_rounds"),
}


def moved_keywords(
    where: str,
    given: Mapping[str, Any],
    moved: Mapping[str, tuple[str, str]],
    records: dict[str, Any],
    *,
    stacklevel: int,
) -> dict[str, Any]:
    """`records` with the values of keywords that moved into them, each with a warning.

    Args:
        where: The callable's name, for the messages ("Server", "open_client").
        given: The keywords the callable did not know by name.
        moved: Each old keyword's record (a key of `records`) and field.
        records: The records as given (or their defaults), by keyword.
        stacklevel: How far up the warning points (at the caller's call).

    Returns:
        The records, each with the moved values set (an old keyword beats the record's field).

    Raises:
        TypeError: for a keyword that never existed, as Python says it.
    """
    out = dict(records)
    for keyword, value in given.items():
        if keyword not in moved:
            raise TypeError(f"{where}() got an unexpected keyword argument {keyword!r}")
        record, name = moved[keyword]
        kind = type(out[record]).__name__
        warnings.warn(
            f"{where}({keyword}=...) is deprecated; pass {where}({record}={kind}({name}=...))",
            DeprecationWarning,
            stacklevel=stacklevel + 1,
        )
        out[record] = dataclasses.replace(out[record], **{name: value})
    return out
