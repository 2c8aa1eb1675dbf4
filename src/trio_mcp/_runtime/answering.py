"""The client's answers to what a server asks: elicitation, sampling and roots.

Rule 1: one path answers both carriages of a question: a request on the connection (handshake
        era) and an entry of an `input_required` result (2026-07-28). `Answers.answer` decodes
        the params into the shared records (`_core/asking`), runs the user's handler and
        encodes what it returns. A question that cannot be answered (no handler, a capability
        or mode that was not declared, malformed params) raises `Unanswerable` with the
        JSON-RPC code the connection answers with; the caller of an input round turns it into
        a `RemoteProtocolError` instead, since a server must not ask so. What a handler raises
        goes to the caller as it is.
Rule 2: a handler's return value is checked before it is encoded, so that a wrong type is a
        clear `TypeError` naming the handler rather than a malformed answer on the wire. An
        accepted form answer gets the schema's defaults (`with_defaults`, SEP-1034); an
        accepted URL-mode answer carries no content.
Rule 3: roots are a list or a function that returns one, each a `file://` URI (spec: roots
        MUST be file URIs); a list is checked when it is given, a function's answer when it
        comes.
Rule 4: `notifications/elicitation/complete` names a URL-mode elicitation this client was asked;
        one it was not asked, or that completed already, is ignored (spec 2025-11-25,
        elicitation). The ids asked are remembered, at most `MAX_URL_ELICITATIONS` of them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, Final, TypeAlias

from .._core.answering import ELICITATION_MODES, Answerable, declared_modes, with_defaults
from .._core.asking import (
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
from .._core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND

__all__ = [
    "Answers",
    "ElicitationCompleteHandler",
    "ElicitationHandler",
    "Roots",
    "RootsProvider",
    "SamplingHandler",
    "Unanswerable",
]

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

# URL-mode elicitation ids remembered for their completion notice (Rule 4): enough for any
# user, few enough that a server asking without end cannot grow the client's memory.
MAX_URL_ELICITATIONS: Final = 1024


class Unanswerable(Exception):  # noqa: N818 - a question, not an error of ours
    """A question that this client cannot answer (Rule 1).

    Attributes:
        message: Why.
        code: The JSON-RPC error code a request on the connection is answered with.
    """

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def check_roots(roots: Any) -> list[Root]:
    """A roots list as given, checked (Rule 3).

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
        """Answer `roots/list` with `roots` from now on (a list is checked here, Rule 3)."""
        self._roots = roots if callable(roots) else check_roots(roots)

    async def answer(
        self, method: str, params: Mapping[str, Any], declared: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The result that answers the server's `method` request (Rule 1).

        Args:
            method: "elicitation/create", "sampling/createMessage" or "roots/list".
            params: The request's params.
            declared: The capabilities this client declared, which bound what may be asked.

        Raises:
            Unanswerable: for a question this client cannot answer (no handler, not
                declared, malformed params).
            TypeError: for a handler that returns the wrong type (Rule 2).
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

    # -- URL-mode completion (Rule 4) ------------------------------------------------------------

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
