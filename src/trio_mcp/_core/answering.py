"""What a client answers when the server asks it something, sans-IO.

The client's half of elicitation, sampling and roots that needs no I/O: the capabilities it
declares for a revision, an accepted form completed with its defaults, and a 2026-07-28
`input_required` result read and turned into the retry's params.

A client declares a capability exactly when it can answer it, and what was declared, not what
its handlers could do, decides what a request may ask (`declared_modes`). A `requestState` is
echoed exactly as it was received.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._exceptions import RemoteProtocolError
from .asking import ASK_METHODS
from .versions import revision

__all__ = [
    "ELICITATION_MODES",
    "INPUT_REQUIRED",
    "Answerable",
    "InputRound",
    "declared_modes",
    "input_round",
    "retry_params",
    "with_defaults",
]

#: The elicitation modes a client may support (spec 2025-11-25, elicitation: Capabilities).
ELICITATION_MODES: Final = ("form", "url")
#: The `resultType` of a result that asks the client for input (spec 2026-07-28).
INPUT_REQUIRED: Final = "input_required"
# The fields of a request that a retry sets anew.
_ROUND_FIELDS: Final = ("inputResponses", "requestState")


@dataclass(frozen=True, slots=True)
class Answerable:
    """What a client can answer: it declares exactly these capabilities.

    `capabilities(version)` spells them as the revision in use knows them: elicitation modes
    per the revision table, roots with `listChanged` in the handshake era (where
    `notifications/roots/list_changed` exists).

    Attributes:
        elicitation_modes: The elicitation modes its handler takes ("form", "url"); empty
            without an elicitation handler.
        sampling: Whether it has a sampling handler.
        roots: Whether it exposes roots.
    """

    elicitation_modes: tuple[str, ...] = ()
    sampling: bool = False
    roots: bool = False

    def capabilities(self, version: str) -> dict[str, Any]:
        """The client capabilities to declare under `version` (a supported revision)."""
        row = revision(version)
        capabilities: dict[str, Any] = {}
        modes = [mode for mode in self.elicitation_modes if mode in row.elicitation_modes]
        if modes:
            # A revision with forms only knows the capability as `{}` (2025-06-18); from
            # 2025-11-25 each mode is named, `{}` still meaning forms only.
            only_forms = row.elicitation_modes == ("form",)
            capabilities["elicitation"] = {} if only_forms else {mode: {} for mode in modes}
        if self.sampling:
            capabilities["sampling"] = {}
        if self.roots:
            capabilities["roots"] = {"listChanged": True} if row.handshake else {}
        return capabilities


def declared_modes(capabilities: Mapping[str, Any]) -> tuple[str, ...]:
    """The elicitation modes a capabilities object declares (`{}`: forms only)."""
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, Mapping):
        return ()
    named = tuple(mode for mode in ELICITATION_MODES if mode in elicitation)
    return named or ("form",)


def with_defaults(schema: Mapping[str, Any] | None, content: Any) -> Any:
    """An accepted form answer with the schema's defaults for the fields it leaves out.

    SEP-1034: a form starts filled with its defaults, and a field the user left alone keeps
    its default, so a handler may return only what the user changed.

    Anything but a mapping (None, or what a handler got wrong) comes back as it is when the
    schema has no defaults; None becomes an object when there are defaults to put in it.
    """
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return content
    defaults = {
        name: field["default"]
        for name, field in properties.items()
        if isinstance(field, Mapping) and "default" in field
    }
    if content is None:
        return defaults or None
    if not isinstance(content, Mapping) or not defaults:
        return content
    return {**{k: v for k, v in defaults.items() if k not in content}, **content}


@dataclass(frozen=True, slots=True)
class InputRound:
    """One `input_required` result: what the server asks, and the state to echo.

    Read strictly (spec 2026-07-28, multi round-trip requests): every entry of
    `inputRequests` must be a request the server may ask. A result that is neither complete
    nor input-required is not ours to interpret.

    Attributes:
        requests: Key -> (method, params) of each entry of `inputRequests`, in order.
        request_state: The `requestState` exactly as received; None when there was none.
    """

    requests: dict[str, tuple[str, dict[str, Any]]]
    request_state: str | None


def input_round(result: Any, method: str) -> InputRound | None:
    """The input round a result asks for, or None when it is not `input_required`.

    Raises:
        RemoteProtocolError: for an input-required result that is malformed: neither
            `inputRequests` nor `requestState`, an entry that is not a request the server
            may ask, or a `requestState` that is not a string.
    """
    if not isinstance(result, Mapping) or result.get("resultType") != INPUT_REQUIRED:
        return None
    requests = result.get("inputRequests")
    state = result.get("requestState")
    where = f"{method} answered input_required"
    if requests is None and state is None:
        raise RemoteProtocolError(f"{where} with neither inputRequests nor requestState")
    if state is not None and not isinstance(state, str):
        raise RemoteProtocolError(f"{where} with a requestState that is not a string")
    if requests is None:
        return InputRound({}, state)
    if not isinstance(requests, Mapping):
        raise RemoteProtocolError(f"{where} with inputRequests that is not an object")
    parsed: dict[str, tuple[str, dict[str, Any]]] = {}
    for key, entry in requests.items():
        asked = entry.get("method") if isinstance(entry, Mapping) else None
        if asked not in ASK_METHODS:
            raise RemoteProtocolError(
                f"{where} with input request {key!r} of method {asked!r}; a server may ask "
                f"only {', '.join(ASK_METHODS)}"
            )
        params = entry.get("params")
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise RemoteProtocolError(
                f"{where} with input request {key!r} whose params are no object"
            )
        parsed[str(key)] = (asked, dict(params))
    return InputRound(parsed, state)


def retry_params(
    params: Mapping[str, Any], round_: InputRound, responses: Mapping[str, Any]
) -> dict[str, Any]:
    """The params of the request sent again after `round_`, with `responses` to its requests.

    The original params, then `inputResponses` (when the server asked anything) and the
    `requestState` as received (only when the server sent one).
    """
    retry = {key: value for key, value in params.items() if key not in _ROUND_FIELDS}
    if round_.requests:
        retry["inputResponses"] = dict(responses)
    if round_.request_state is not None:
        retry["requestState"] = round_.request_state
    return retry
