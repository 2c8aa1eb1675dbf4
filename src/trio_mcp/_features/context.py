"""`Context`: what a running tool may ask of its request (progress, logs, peer facts).

A tool asks for one by annotating a parameter as `Context`; that parameter is injected and never
appears in the tool's schema. A context does no I/O itself: it hands notifications to the `send`
callable the runtime gave it, and requests to the client (sampling, elicitation, roots) to its
`Requester` or, under 2026-07-28, to the attempt's `AskBook`. A call that became a task
(`_features/tasks`) has no request stream any more: the task runtime switches its context over
(`_run_as_task`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, Literal, Protocol, overload

from typing_extensions import TypeVar

from .._core.asking import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    Root,
    SamplingMessage,
    SamplingRequest,
    SamplingResult,
    WireFormatError,
    elicit_outcome_from_wire,
    roots_from_wire,
    sampling_messages,
)
from .._core.auth import AuthInfo
from .._core.jsonrpc import RequestId
from .._core.server_session import RequestScope, ServerSession
from .._core.stream_control import current_stream
from .._core.types import LogLevel
from .._core.versions import revision
from .._exceptions import ClientCapabilityError, LocalProtocolError
from .asking import AnswerInvalidError, Ask, AskBook, elicit_form, read_elicitation

__all__ = ["Context", "NotificationSender", "Requester"]

T = TypeVar("T")
#: The type of the server's lifespan value (`Server(lifespan=...)`), as `Context[AppState]`.
LifespanT = TypeVar("LifespanT", default=Any)
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")

#: `await send(method, params)` queues one notification on the request's stream.
NotificationSender = Callable[[str, dict[str, Any]], Awaitable[None]]
#: One question as a task asks it: (method, params, timeout in seconds or None).
AskWire = tuple[str, dict[str, Any], float | None]
#: Asks a task's questions all at once: their wire answers, in order.
AskMany = Callable[[Sequence[AskWire]], Awaitable[list[Any]]]
#: Makes the running call a task if it can (`Context.become_task`): whether it is one now.
TaskDetacher = Callable[[], Awaitable[bool]]


async def _dropped(method: str, params: dict[str, Any]) -> None:
    """Where a task's notifications go: it has no request stream."""


class Requester(Protocol):
    """How the runtime sends one request of the server's to the client (handshake era).

    `await requester(method, params, timeout=...)` returns the client's `result`; raises
    `RequestError` for an error answer, `RemoteProtocolError` for a malformed one (at once),
    `ConnectionClosed` when the connection ends, and `ClientTimeoutError` when `timeout` seconds
    pass first (the request is then cancelled with `notifications/cancelled`). Cancelling the
    caller cancels the request the same way.
    """

    async def __call__(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Any: ...


class Context(Generic[LifespanT]):
    """Handed to a tool that declares a parameter annotated `Context`.

    Annotate it `Context[AppState]` to have `lifespan` typed as what the server's lifespan
    yields (`Server(lifespan=...)`).

    Attributes:
        request_id: The JSON-RPC id of the `tools/call` request being served.
        tool_name: The name the tool was called by.
    """

    __slots__ = (
        "_ask_many",
        "_ask_timeout",
        "_auth",
        "_book",
        "_detacher",
        "_lifespan",
        "_no_requester",
        "_requester",
        "_scope",
        "_send",
        "_status",
        "request_id",
        "tool_name",
    )

    def __init__(
        self,
        *,
        request_id: RequestId,
        tool_name: str,
        scope: RequestScope,
        send: NotificationSender,
        requester: Requester | None = None,
        book: AskBook | None = None,
        ask_timeout: float | None = None,
        no_requester: str = "this transport cannot carry requests to the client",
        auth: AuthInfo | None = None,
        lifespan: Any = None,
    ) -> None:
        self.request_id = request_id
        self.tool_name = tool_name
        self._scope = scope
        self._send = send
        self._requester = requester
        self._book = book
        self._ask_timeout = ask_timeout
        self._no_requester = no_requester
        self._auth = auth
        self._lifespan = lifespan
        #: Set by the task runtime for a call that may become a task.
        self._detacher: TaskDetacher | None = None
        #: Set once the call is a task: where progress messages go.
        self._status: Callable[[str], Awaitable[None]] | None = None
        #: Set once the call is a task: asks several questions at once.
        self._ask_many: AskMany | None = None

    async def become_task(self) -> bool:
        """Make this call a task now, if the tool and the client allow it.

        The `tools/call` is answered at once with the task's handle and the tool goes on; the
        client polls for its result. Questions asked before this (`elicit`, `sample`...) went
        the usual way; those after surface as the task's `input_required`.

        Returns:
            True when the call is (now) a task; False when it cannot be one (the tool was not
            registered with `task=`, or the client did not declare the tasks extension): the
            call simply goes on.
        """
        if self._detacher is None:
            return False
        return await self._detacher()

    @property
    def is_task(self) -> bool:
        """Whether this call runs as a task (its request was answered with a task handle)."""
        return self._status is not None

    def _run_as_task(
        self, requester: Requester, status: Callable[[str], Awaitable[None]], many: AskMany
    ) -> None:
        """The task runtime's switch: the call is a task from now on.

        Questions go to `requester` (several at once to `many`), progress becomes the task's
        status message (`status`), and log messages are dropped.
        """
        self._book = None
        self._requester = requester
        self._ask_many = many
        self._send = _dropped
        self._status = status

    @property
    def auth(self) -> AuthInfo | None:
        """The caller's verified OAuth token's facts (subject, client, scopes, claims).

        None when the request carried no verified token: over stdio or in memory, or over
        HTTP without `HttpOptions(auth=...)`. The token itself is never given to tools: the
        spec forbids passing it on to other services (token passthrough).
        """
        return self._auth

    @property
    def lifespan(self) -> LifespanT:
        """What the server's lifespan yielded (`Server(lifespan=...)`): a pool, a client...

        None when the server has no lifespan.
        """
        value: LifespanT = self._lifespan
        return value

    @property
    def protocol_version(self) -> str:
        """The MCP revision this request speaks."""
        return self._scope.version

    @property
    def client_info(self) -> dict[str, Any] | None:
        """The client's `{"name", "version", ...}`, when it told us."""
        return self._scope.client_info

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The client's declared capabilities (empty when it declared none)."""
        return self._scope.client_capabilities

    @property
    def progress_token(self) -> int | str | None:
        """The request's progress token, or None when it asked for no progress."""
        return self._scope.progress_token

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send `notifications/progress` for this request, if the client asked for progress.

        Args:
            progress: Progress so far; should increase with every call.
            total: The total, when known.
            message: A short human-readable status (sent to 2025-03-26 and later clients).
        """
        if self._status is not None:
            shown = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
            await self._status(message if message is not None else shown)
            return
        token = self._scope.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and revision(self._scope.version).progress_message:
            params["message"] = message
        await self._send("notifications/progress", params)

    async def log(
        self, level: LogLevel, message: str, *, logger: str | None = None, data: Any = None
    ) -> None:
        """Send `notifications/message` if the client's log level lets `level` through.

        Args:
            level: One of the syslog levels of the specification ("debug" .. "emergency").
            message: The text to log.
            logger: Optional name of the logger.
            data: Optional JSON-serialisable detail; sent as `data` instead of `message` text.
        """
        if not ServerSession.log_enabled(self._scope, level):
            return
        params: dict[str, Any] = {
            "level": level,
            "data": message if data is None else {"message": message, "data": data},
        }
        if logger is not None:
            params["logger"] = logger
        await self._send("notifications/message", params)

    async def debug(self, message: str) -> None:
        """Log at debug level."""
        await self.log("debug", message)

    async def info(self, message: str) -> None:
        """Log at info level."""
        await self.log("info", message)

    async def warning(self, message: str) -> None:
        """Log at warning level."""
        await self.log("warning", message)

    async def error(self, message: str) -> None:
        """Log at error level."""
        await self.log("error", message)

    async def close_sse_stream(self) -> bool:
        """End the SSE stream this call's answer goes out on, while the call runs on.

        SEP-1699 polling, for a long call over Streamable HTTP: the connection is freed, and
        the client reconnects (`GET` with `Last-Event-ID`, after the `retry:` interval the
        stream gave it) to get what the call sends afterwards, its result included, from the
        server's event store (`HttpOptions.event_store`).

        Returns:
            True when the stream was closed (or already was); False, doing nothing, where the
            answer could not be fetched again: stdio, in memory, legacy SSE, stateless HTTP, a
            session under a revision before 2025-11-25, a server without an event store, and
            2026-07-28 (whose clients take a closed stream as the request's cancellation).
        """
        stream = current_stream.get()
        return False if stream is None else await stream.close()

    # -- asking the client (elicitation, sampling, roots): see `_features/asking` ----------------

    @overload
    def elicit(
        self,
        message: str,
        answer: type[T],
        *,
        key: str | None = None,
        timeout: float | None = None,
    ) -> Ask[AcceptedElicitation[T] | DeclinedElicitation | CancelledElicitation]: ...

    @overload
    def elicit(
        self,
        message: str,
        answer: Mapping[str, Any],
        *,
        key: str | None = None,
        timeout: float | None = None,
    ) -> Ask[AcceptedElicitation[dict[str, Any]] | DeclinedElicitation | CancelledElicitation]: ...

    def elicit(
        self,
        message: str,
        answer: Any,
        *,
        key: str | None = None,
        timeout: float | None = None,
    ) -> Ask[Any]:
        """Ask the user to fill in a form (`elicitation/create`, form mode); `await` the outcome.

        ```python
        outcome = await ctx.elicit("Which side do you back?", Backing)
        if isinstance(outcome, AcceptedElicitation):
            side = outcome.data.side
        ```

        Args:
            message: What to show the user.
            answer: The answer's type: a pydantic model, a dataclass or a TypedDict of flat
                fields (str with format email/uri/date/date-time, int, float, bool, an Enum
                or Literal of strings, a list of those; `Choices` for titled options;
                defaults are sent as defaults), or a raw JSON Schema dict (answers are dicts).
            key: Under 2026-07-28, the name of this question in `inputRequests` (default:
                numbered in asking order).
            timeout: Handshake era: seconds to wait for the user (default: the server's
                `Timeouts.ask`); then `ClientTimeoutError`.

        Returns:
            An awaitable `Ask`: `AcceptedElicitation(data)` with `data` validated into `answer`,
            `DeclinedElicitation()` or `CancelledElicitation()`.

        Raises:
            TypeError: at once, for an answer type the elicitation schema cannot express.
            ClientCapabilityError: (when awaited) the client cannot elicit forms.
        """
        form = elicit_form(answer)
        params = {"message": message, "requestedSchema": form.schema}
        return Ask(
            "elicitation/create",
            params,
            key,
            read_elicitation(form),
            timeout,
            self,
            ("elicitation", "form"),
        )

    def elicit_url(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        key: str | None = None,
        timeout: float | None = None,
    ) -> Ask[AcceptedElicitation[str] | DeclinedElicitation | CancelledElicitation]:
        """Send the user to a URL (URL-mode elicitation, 2025-11-25 and later).

        For what must not pass through the client (credentials, payments, OAuth consent).
        `AcceptedElicitation` means the user agreed to open it; its `data` is the elicitation id,
        which `complete_elicitation` names once the interaction at the URL is over.

        Args:
            message: Why the user should go there.
            url: Where.
            elicitation_id: The id (default: derived from the tool, URL and message, so that
                it is the same on every 2026-07-28 round).
            key: As for `elicit`.
            timeout: As for `elicit`.
        """
        if elicitation_id is None:
            digest = hashlib.sha256(f"{self.tool_name}\n{url}\n{message}".encode()).hexdigest()
            elicitation_id = digest[:32]
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        if self._scope.modern:
            # 2026-07-28 removed `elicitationId` (its changelog, item 11): the id stays ours.
            del params["elicitationId"]
        chosen = elicitation_id

        def read(
            wire: Any,
        ) -> AcceptedElicitation[str] | DeclinedElicitation | CancelledElicitation:
            outcome = elicit_outcome_from_wire(wire)
            return (
                AcceptedElicitation(chosen) if isinstance(outcome, AcceptedElicitation) else outcome
            )

        return Ask("elicitation/create", params, key, read, timeout, self, ("elicitation", "url"))

    async def complete_elicitation(self, elicitation_id: str) -> None:
        """Tell the client a URL-mode elicitation finished (`notifications/elicitation/complete`).

        Sent on this request's stream, so only while the call runs; 2026-07-28 has no such
        notification (the client learns it from the retried call), so there it sends nothing.
        """
        if self._scope.modern:
            return
        await self._send("notifications/elicitation/complete", {"elicitationId": elicitation_id})

    def sample(
        self,
        messages: str | SamplingMessage | Sequence[SamplingMessage | Mapping[str, Any]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        model_preferences: str | Sequence[str] | Mapping[str, Any] | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        timeout: float | None = None,
    ) -> Ask[SamplingResult]:
        """Ask the client's model for a message (`sampling/createMessage`); `await` it.

        ```python
        reply = await ctx.sample("Summarise: ...", max_tokens=200)
        text = reply.text
        ```

        Args:
            messages: A string (one user message), a `SamplingMessage`, or a list of
                `SamplingMessage`s or wire objects.
            max_tokens: The most tokens the model may write.
            system_prompt: A system prompt to suggest.
            model_preferences: A model name hint, a list of hints, or a `ModelPreferences`
                object (hints, cost/speed/intelligence priorities).
            temperature: Sampling temperature.
            stop_sequences: Sequences that end the generation.
            include_context: Soft-deprecated in 2025-11-25: context from other servers.
            metadata: Provider-specific metadata, passed through.
            key: As for `elicit`.
            timeout: As for `elicit`.

        Returns:
            An awaitable `Ask` of the client's `SamplingResult` (`.text`, `.content`, `.model`).
        """
        if isinstance(model_preferences, str):
            model_preferences = [model_preferences]
        if model_preferences is not None and not isinstance(model_preferences, Mapping):
            model_preferences = {"hints": [{"name": hint} for hint in model_preferences]}
        request = SamplingRequest(
            sampling_messages(messages),
            max_tokens,
            system_prompt,
            dict(model_preferences) if model_preferences is not None else None,
            temperature,
            list(stop_sequences) if stop_sequences is not None else None,
            include_context,
            dict(metadata) if metadata is not None else None,
        )
        return Ask(
            "sampling/createMessage",
            request.to_wire(),
            key,
            SamplingResult.from_wire,
            timeout,
            self,
            ("sampling", None),
        )

    def list_roots(
        self, *, key: str | None = None, timeout: float | None = None
    ) -> Ask[list[Root]]:
        """Ask the client for its roots (`roots/list`); `await` the list of `Root`s.

        Args:
            key: As for `elicit`.
            timeout: As for `elicit`.
        """
        return Ask("roots/list", {}, key, roots_from_wire, timeout, self, ("roots", None))

    @overload
    async def gather(self, a: Ask[A], /) -> tuple[A]: ...
    @overload
    async def gather(self, a: Ask[A], b: Ask[B], /) -> tuple[A, B]: ...
    @overload
    async def gather(self, a: Ask[A], b: Ask[B], c: Ask[C], /) -> tuple[A, B, C]: ...
    @overload
    async def gather(self, *asks: Ask[Any]) -> tuple[Any, ...]: ...

    async def gather(self, *asks: Ask[Any]) -> tuple[Any, ...]:
        """Ask several questions at once; their answers, in order.

        Under 2026-07-28 they go to the client in one round (one `input_required` result), and
        a task asks them all at once; in the handshake era they are asked one after another.

        Raises:
            ClientCapabilityError: before anything is asked, when the client lacks the
                capability one of them needs.
        """
        for ask in asks:
            self._check_capability(ask)
        if self._book is not None:
            return tuple(self._book.take(asks))
        if self._ask_many is not None:
            wires = await self._ask_many(
                [(ask.method, ask.params, ask.timeout or self._ask_timeout) for ask in asks]
            )
            return tuple(_read(ask, wire) for ask, wire in zip(asks, wires, strict=True))
        results = []
        for ask in asks:
            if self._requester is None:
                raise LocalProtocolError(
                    f"cannot send {ask.method} to the client: {self._no_requester}"
                )
            wire = await self._requester(
                ask.method, ask.params, timeout=ask.timeout or self._ask_timeout
            )
            results.append(_read(ask, wire))
        return tuple(results)

    def _check_capability(self, ask: Ask[Any]) -> None:
        name, sub = ask.capability
        declared = self._scope.client_capabilities.get(name)
        if not isinstance(declared, Mapping):
            raise ClientCapabilityError(name)
        if name == "elicitation":
            # 2025-11-25: {} means form mode only; "form" and "url" name the modes.
            modes = {"form"} if not declared else {m for m in ("form", "url") if m in declared}
            if sub not in modes:
                raise ClientCapabilityError(
                    f"elicitation.{sub}",
                    f"the client did not declare {sub}-mode elicitation, so the server cannot "
                    f"ask it for that",
                )

    async def _request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request to the client and return the `result` it answers with.

        Private until the features built on it (elicitation, sampling, roots) make it public.

        Args:
            method: The JSON-RPC method, e.g. "roots/list".
            params: Its parameters, or None.

        Returns:
            The client's `result`.

        Raises:
            RequestError: when the client answers with a JSON-RPC error.
            RemoteProtocolError: when the client's answer is no valid response (both
                result and error, neither, ...): it fails at once.
            ConnectionClosed: when the connection ends before the answer.
            LocalProtocolError: when this request's transport cannot carry requests to the
                client.
        """
        if self._requester is None:
            raise LocalProtocolError(f"cannot send {method!r}: no way to reach the client here")
        return await self._requester(method, params)


def _read(ask: Ask[T], wire: Any) -> T:
    """The record `ask` makes of the client's wire answer, checked (see `_features/asking`)."""
    try:
        return ask.read(wire)
    except WireFormatError as exc:
        raise AnswerInvalidError(ask.kind, str(exc)) from None
