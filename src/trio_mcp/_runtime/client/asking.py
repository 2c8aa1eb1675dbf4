"""What a server asks the client (elicitation, sampling, roots), answered by the user's handlers.

One path answers both carriages of a question: a request on the connection (handshake era) and
an entry of an `input_required` result (2026-07-28). `Answers.answer` decodes the params into
the shared records (`_core/asking`), runs the user's handler and encodes what it returns; an
accepted form answer gets the schema's defaults (`with_defaults`, SEP-1034), an accepted
URL-mode answer carries no content. A question that cannot be answered (no handler, a
capability or mode that was not declared, malformed params) raises `Unanswerable`.

`Questions` serves both carriages on the client's connection. On the connection, a question
that cannot be answered gets its JSON-RPC error, and what a handler raises goes through the
connection's error boundary. Under 2026-07-28 (`with_input`), the `inputRequests` of an
`input_required` result of `tools/call`, `prompts/get` or `resources/read` are answered at
once, concurrently, in the caller's task, and the request is sent again with a new id, the
answers and the `requestState` as received (`_core/answering`), for at most
`max_input_rounds` rounds; there a question that cannot be answered is the server's protocol
error (`RemoteProtocolError`), and a handler's exception ends the call, since the server is
not waiting for an answer that could carry it.

Rule 1: what a handler gives is checked before it is encoded, so a wrong type is a clear
        `TypeError` naming the handler rather than a malformed answer on the wire; roots, a
        list or a function that returns one, must be `file://` URIs (spec: roots MUST be file
        URIs), a list checked when it is given, a function's answer when it comes.
Rule 2: `notifications/elicitation/complete` reaches its handler only for a URL-mode
        elicitation this client was asked, and only once (spec 2025-11-25, elicitation); the
        ids asked are remembered, at most `MAX_URL_ELICITATIONS` of them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, Final

import trio

from ..._core.answering import (
    ELICITATION_MODES,
    Answerable,
    InputRound,
    declared_modes,
    input_round,
    retry_params,
    with_defaults,
)
from ..._core.asking import (
    ASK_METHODS,
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitRequest,
    Root,
    SamplingRequest,
    SamplingResult,
    WireFormatError,
)
from ..._core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from ..._exceptions import LocalProtocolError, RemoteProtocolError, RequestError
from ..options import (
    DEFAULT_MAX_INPUT_ROUNDS,
    ElicitationCompleteHandler,
    ElicitationHandler,
    Roots,
    RootsProvider,
    SamplingHandler,
)
from .connection import ServerConnection

__all__ = [
    "DEFAULT_MAX_INPUT_ROUNDS",
    "Answers",
    "ElicitationCompleteHandler",
    "ElicitationHandler",
    "Questions",
    "Roots",
    "RootsProvider",
    "SamplingHandler",
    "Unanswerable",
]

# URL-mode elicitation ids remembered for their completion notice (Rule 2): enough for any
# user, few enough that a server asking without end cannot grow the client's memory.
MAX_URL_ELICITATIONS: Final = 1024
#: Sends the request being answered with these params, returning its `result`.
Send = Callable[[dict[str, Any]], Awaitable[Any]]


class Unanswerable(Exception):  # noqa: N818 - a question, not an error of ours
    """A question that this client cannot answer.

    Attributes:
        message: Why.
        code: The JSON-RPC error code a request on the connection is answered with.
    """

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def check_roots(roots: Any) -> list[Root]:
    """A roots list as given, checked (Rule 1).

    Raises:
        TypeError: for something that is not a sequence of `Root`.
        ValueError: for a root whose URI is not a `file://` URI.
    """
    if isinstance(roots, str | bytes) or not isinstance(roots, Sequence):
        raise TypeError(f"roots must be a list of trio_mcp.Root, not {type(roots).__name__}")
    for root in roots:
        if not isinstance(root, Root):
            raise TypeError(f"roots must be trio_mcp.Root records, not {type(root).__name__}")
        if not root.uri.startswith("file://"):
            raise ValueError(f"a root must be a file:// URI, not {root.uri!r}")
    return list(roots)


class Answers:
    """The user's handlers, and how each question is answered with them.

    Raises:
        ValueError: for an elicitation mode that does not exist, none at all, or roots that
            are not `file://` URIs.
        TypeError: for roots that are neither a list of `Root` nor a function.
    """

    def __init__(
        self,
        *,
        elicitation: ElicitationHandler | None = None,
        sampling: SamplingHandler | None = None,
        roots: Roots | None = None,
        elicitation_modes: Collection[str] = ELICITATION_MODES,
        on_elicitation_complete: ElicitationCompleteHandler | None = None,
    ) -> None:
        modes = tuple(mode for mode in ELICITATION_MODES if mode in elicitation_modes)
        unknown = set(elicitation_modes) - set(ELICITATION_MODES)
        if unknown or not modes:
            raise ValueError(
                f"elicitation_modes must name one or both of {', '.join(ELICITATION_MODES)}, "
                f"not {sorted(elicitation_modes)!r}"
            )
        self._elicitation = elicitation
        self._sampling = sampling
        self._roots: Roots | None = None
        if roots is not None:
            self.set_roots(roots)
        self.answerable = Answerable(
            modes if elicitation is not None else (), sampling is not None, roots is not None
        )
        self.on_elicitation_complete = on_elicitation_complete
        self._url_ids: dict[str, None] = {}  # insertion-ordered: the oldest is dropped first

    @property
    def methods(self) -> tuple[str, ...]:
        """The server requests this client has a handler for."""
        have = {
            "elicitation/create": self._elicitation is not None,
            "sampling/createMessage": self._sampling is not None,
            "roots/list": self._roots is not None,
        }
        return tuple(method for method, present in have.items() if present)

    def set_roots(self, roots: Roots) -> None:
        """Answer `roots/list` with `roots` from now on (a list is checked here, Rule 1)."""
        self._roots = roots if callable(roots) else check_roots(roots)

    async def answer(
        self, method: str, params: Mapping[str, Any], declared: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The result that answers the server's `method` request.

        Args:
            method: "elicitation/create", "sampling/createMessage" or "roots/list".
            params: The request's params.
            declared: The capabilities this client declared, which bound what may be asked.

        Raises:
            Unanswerable: for a question this client cannot answer (no handler, not
                declared, malformed params).
            TypeError: for a handler that returns the wrong type (Rule 1).
            Exception: whatever the handler raises.
        """
        capability = ASK_METHODS.get(method)
        if capability is None or capability not in declared or method not in self.methods:
            raise Unanswerable(f"Method not found: {method}", METHOD_NOT_FOUND)
        try:
            if method == "elicitation/create":
                return await self._elicit(ElicitRequest.from_wire(params), declared)
            if method == "sampling/createMessage":
                return await self._sample(SamplingRequest.from_wire(params))
        except WireFormatError as exc:
            raise Unanswerable(f"Invalid params: {exc}", INVALID_PARAMS) from None
        return await self._list_roots()

    async def _elicit(self, request: ElicitRequest, declared: Mapping[str, Any]) -> dict[str, Any]:
        assert self._elicitation is not None
        if request.mode not in declared_modes(declared):
            raise Unanswerable(
                f"Invalid params: this client did not declare {request.mode}-mode elicitation",
                INVALID_PARAMS,
            )
        url_id = request.elicitation_id if request.mode == "url" else None
        if url_id is not None:
            self._remember(url_id)
        accepted = False
        try:
            outcome = await self._elicitation(request)
            accepted = isinstance(outcome, AcceptedElicitation)
        finally:
            if url_id is not None and not accepted:
                self._url_ids.pop(url_id, None)  # no interaction will complete
        if isinstance(outcome, DeclinedElicitation | CancelledElicitation):
            return outcome.to_wire()
        if not isinstance(outcome, AcceptedElicitation):
            raise TypeError(
                "the elicitation handler must return AcceptedElicitation, DeclinedElicitation "
                "or CancelledElicitation, not "
                f"{type(outcome).__name__}"
            )
        if request.mode == "url":
            return AcceptedElicitation(None).to_wire()
        content = with_defaults(request.requested_schema, outcome.data)
        if content is not None and not isinstance(content, Mapping):
            raise TypeError(
                "an accepted form elicitation must carry a dict of the answers, not "
                f"{type(content).__name__}"
            )
        return AcceptedElicitation(None if content is None else dict(content)).to_wire()

    async def _sample(self, request: SamplingRequest) -> dict[str, Any]:
        assert self._sampling is not None
        result = await self._sampling(request)
        if not isinstance(result, SamplingResult):
            raise TypeError(
                f"the sampling handler must return a SamplingResult, not {type(result).__name__}"
            )
        return result.to_wire()

    async def _list_roots(self) -> dict[str, Any]:
        roots = self._roots
        if callable(roots):
            given = roots()
            roots = await given if inspect.isawaitable(given) else given
        return {"roots": [root.to_wire() for root in check_roots(roots)]}

    # -- URL-mode completion (Rule 2) ------------------------------------------------------------

    def _remember(self, elicitation_id: str) -> None:
        self._url_ids[elicitation_id] = None
        while len(self._url_ids) > MAX_URL_ELICITATIONS:
            del self._url_ids[next(iter(self._url_ids))]

    def completed(self, elicitation_id: Any) -> bool:
        """Whether a completion names a URL elicitation this client was asked; forgets it."""
        if not isinstance(elicitation_id, str) or elicitation_id not in self._url_ids:
            return False
        del self._url_ids[elicitation_id]
        return True


class Questions:
    """What the server asks, answered on one client's connection.

    Args:
        connection: The client's connection: its requests are handled here.
        answers: The user's handlers.
        max_input_rounds: Rounds of input requests one call answers (2026-07-28).
    """

    def __init__(
        self, connection: ServerConnection, answers: Answers, max_input_rounds: int
    ) -> None:
        self.answers = answers
        self._connection = connection
        self._session = connection.session
        self._max_input_rounds = max_input_rounds
        for method in answers.methods:
            connection.handlers[method] = functools.partial(self._answer_request, method)
        connection.notices["notifications/elicitation/complete"] = self._completed

    async def _answer_request(self, method: str, params: dict[str, Any]) -> Any:
        # The handler of the server's `method` requests on the connection.
        try:
            return await self.answers.answer(method, params, self._session.declared)
        except Unanswerable as exc:
            raise RequestError(exc.message, exc.code) from None

    def _completed(self, params: dict[str, Any]) -> None:
        handler = self.answers.on_elicitation_complete
        elicitation_id = params.get("elicitationId")
        # Rule 2: only an elicitation this client was asked, and only once.
        if self.answers.completed(elicitation_id) and handler is not None:
            self._connection.run_callback(handler, elicitation_id)

    async def set_roots(self, roots: Roots) -> None:
        """`Client.set_roots`: answer `roots/list` with `roots`, and tell the server (handshake)."""
        if not self.answers.answerable.roots:
            raise LocalProtocolError(
                "this client declared no roots: open it with roots=[...] (an empty list will "
                "do) to change them later"
            )
        self.answers.set_roots(roots)
        if not self._session.per_request:
            await self._connection.notify("notifications/roots/list_changed")

    async def with_input(self, method: str, params: dict[str, Any], send: Send) -> Any:
        """Send, and while the result asks for input, answer and send again.

        Only under 2026-07-28: the revisions of the handshake have no `resultType`, and their
        records refuse one.
        """
        result = await send(params)
        rounds = 0
        while self._session.per_request:
            round_ = input_round(result, method)
            if round_ is None:
                break
            if rounds >= self._max_input_rounds:
                raise RemoteProtocolError(
                    f"{method} still asked for input after {rounds} round(s) of answers "
                    f"(max_input_rounds={self._max_input_rounds})"
                )
            rounds += 1
            responses = await self.answer_round(method, round_)
            result = await send(retry_params(params, round_, responses))
        return result

    async def answer_round(self, method: str, round_: InputRound) -> dict[str, Any]:
        """Answer every input request of a round at once: key -> answer.

        The first failure cancels the others and ends the call.
        """
        answers: dict[str, Any] = {}
        failures: list[Exception] = []

        async def answer(key: str, asked: str, params: dict[str, Any]) -> None:
            try:
                answers[key] = await self._answer_input(method, key, asked, params)
            except Exception as exc:
                failures.append(exc)
                nursery.cancel_scope.cancel()

        async with trio.open_nursery() as nursery:
            for key, (asked, params) in round_.requests.items():
                nursery.start_soon(answer, key, asked, params)
        if failures:
            raise failures[0]
        return {key: answers[key] for key in round_.requests}

    async def _answer_input(
        self, method: str, key: str, asked: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        try:
            return await self.answers.answer(asked, params, self._session.declared)
        except Unanswerable as exc:
            # spec 2026-07-28, multi round-trip requests: a server MUST NOT ask for what the
            # client did not declare; nor may it ask malformed questions.
            raise RemoteProtocolError(
                f"{method} asked for input {key!r} ({asked}) that this client cannot give: "
                f"{exc.message}"
            ) from None
