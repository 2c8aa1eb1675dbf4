"""Resolution: a parsed request becomes one `ResolvedRequest`, worked out once and carried down.

A request is resolved in two steps, because HTTP must answer 403 before a session sees the
body:

1. `Dispatcher.resolve` (no session needed) asks the method's route, whose resolver (`Targets`
   here, for the methods that name something) finds the tool, resource (with its matched and
   validated template variables), prompt or completer it names, its validated arguments, the
   OAuth scopes it needs and whether it can be answered without waiting. It never raises: what
   is wrong with the request (an unknown tool, arguments that are no object) is kept in the
   record and raised where the revision's order of checks says (after the session has checked
   the request's version).
2. The session binds it (`ResolvedRequest.bound`): the revision it speaks, its client's facts,
   and the session it belongs to.

Every later layer (the HTTP gate, the session runtime, the middleware chain, the dispatcher,
the invoker) reads that record; nobody looks the target up again. A middleware that changes
the arguments gets them validated again (`ResolvedRequest.replace`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, NamedTuple

from .._core.auth import AuthInfo, Principal, principal_of
from .._core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, Request, RequestId
from .._core.server_session import RequestScope
from .._exceptions import RemoteProtocolError
from .._features.completion import Completer
from .._features.prompts import Prompt, PromptRegistry
from .._features.resources import Resource, ResourceRegistry, ResourceTemplate
from .._features.schema import ArgumentsInvalid
from .._features.tools import ToolRegistry

__all__ = [
    "LONG_URI",
    "Kind",
    "ResolvedRequest",
    "Targets",
]

#: What a request is about, by family of methods: what middleware hooks are keyed by.
Kind = Literal[
    "tool", "resource", "prompt", "list", "completion", "task", "listen", "subscribe", "protocol"
]

_NO_ARGUMENTS: Final[Mapping[str, Any]] = MappingProxyType({})
#: Characters of a URI past which it is matched against the templates in a worker thread, not
#: on the event loop (`ResolvedRequest.matched`): up to 4 KiB a match costs some microseconds a
#: template; a 64 KiB one (the default cap) up to a few milliseconds a template, which a server
#: of many templates must not make every other client wait for.
LONG_URI: Final = 4096


class ResolvedRequest(NamedTuple):
    """One request, resolved once: what it names, with what, needing what, under which revision.

    A named tuple (immutable, and cheap to make on the hot path); `replace` makes a changed
    copy. Built by the dispatcher (`Dispatcher.resolve`), bound to its session by the runtime,
    and handed to middleware.

    Attributes:
        request: The JSON-RPC request as it came (`id`, `method`, `params`).
        kind: Its family: "tool" (`tools/call`), "resource" (`resources/read`), "prompt"
            (`prompts/get`), "list" (the four lists), "completion", "task" (`tasks/*`),
            "listen" (`subscriptions/listen`), "subscribe" (`resources/subscribe` and
            `unsubscribe`), or "protocol" (the rest: initialize, ping, discovery, log level).
        target: The `Tool`, `Resource`, `ResourceTemplate`, `Prompt` or `Completer` it names,
            or None (nothing named, or nothing found: see `error`).
        name: The tool's or prompt's name, the resource's URI, the task's id, or None.
        arguments: The arguments as sent (tools, prompts), or the template's matched values
            (resources); empty when there are none.
        kwargs: The arguments validated for the function (None when there is no function to
            call, or when they failed validation: see `invalid`).
        invalid: Why the arguments failed validation, or None.
        error: Why the request cannot be served (unknown tool, malformed params), raised after
            the session checked the request's revision; None when it can.
        scopes: The OAuth scopes it needs: the server's and its target's.
        auth: The verified token of the request, None when none was verified (stdio, memory).
        now: Whether it is answered without waiting (on the reader's own task).
        scope: The revision and client facts it runs under, once bound to its session.
        session_id: An id of the session it belongs to, once bound (stable for the session's
            life; every stateless request has one of its own).
        matched: False for a resource request whose URI is long enough to be matched off the
            event loop, until it is (`Targets.matched`): its target and scopes are not known
            before.
        peer: The address of the client's end of the connection, as the Streamable HTTP
            transport saw it (a proxy's, behind one); None over stdio, in memory and for
            legacy HTTP+SSE sessions. What tells apart sessionless clients without a token
            (a rate limit's key).
    """

    request: Request
    kind: Kind
    target: Any = None
    name: str | None = None
    arguments: Mapping[str, Any] = _NO_ARGUMENTS
    kwargs: dict[str, Any] | None = None
    invalid: ArgumentsInvalid | None = None
    error: RemoteProtocolError | None = None
    scopes: tuple[str, ...] = ()
    auth: AuthInfo | None = None
    now: bool = False
    scope: RequestScope | None = None
    session_id: str | None = None
    matched: bool = True
    peer: str | None = None

    @property
    def id(self) -> RequestId:
        """The JSON-RPC id."""
        return self.request.id

    @property
    def method(self) -> str:
        """The JSON-RPC method, e.g. "tools/call"."""
        return self.request.method

    @property
    def params(self) -> dict[str, Any] | None:
        """The request's params as sent."""
        return self.request.params

    @property
    def principal(self) -> Principal | None:
        """Who the verified token stands for (issuer, subject, client); None without one."""
        return principal_of(self.auth)

    @property
    def version(self) -> str | None:
        """The protocol revision the request speaks, once bound."""
        return None if self.scope is None else self.scope.version

    def replace(self, **changes: Any) -> ResolvedRequest:
        """A copy with `changes`; new `arguments` are validated again before the call."""
        if "arguments" in changes and "kwargs" not in changes:
            changes.update(kwargs=None, invalid=None)  # validated again when used
        return self._replace(**changes)

    def bound(self, scope: RequestScope, session_id: str | None) -> ResolvedRequest:
        """The record once its session has checked its revision (step 2)."""
        # Made directly, not by `_replace` (a Python-level rebuild): it runs on every request.
        return _make_record(ResolvedRequest, (*self[:_SCOPE], scope, session_id, *self[_MATCHED:]))


#: Where `bound` splices a record (the positions of `scope` and `matched`).
_SCOPE: Final = ResolvedRequest._fields.index("scope")
_MATCHED: Final = ResolvedRequest._fields.index("matched")
_make_record: Final = tuple.__new__


class Targets:
    """Step 1 of resolution (module docstring), over one server's registries.

    Args:
        tools: The tools.
        resources: The resources and templates.
        prompts: The prompts.
        base_scopes: The scopes every request needs (a `Server`'s `required_scopes`).
    """

    def __init__(
        self,
        tools: ToolRegistry,
        resources: ResourceRegistry,
        prompts: PromptRegistry,
        base_scopes: tuple[str, ...] = (),
    ) -> None:
        self.tools = tools
        self.resources = resources
        self.prompts = prompts
        self.base_scopes = base_scopes

    def scopes(self, own: frozenset[str]) -> tuple[str, ...]:
        """The scopes a request needs: every request's, then those of its target."""
        base = self.base_scopes
        if not own:
            return base
        return (*base, *sorted(own - set(base)))

    # -- tools/call and prompts/get -------------------------------------------------------------

    def tool(self, request: Request, auth: AuthInfo | None, inline_ok: bool) -> ResolvedRequest:
        """Resolve a `tools/call`: the tool, its arguments validated."""
        found, arguments, error = _named(request.params, "tools/call", "tool", self.tools.get)
        if error is not None:
            return ResolvedRequest(
                request, "tool", found, _name_of(request.params), arguments, error=error,
                scopes=self.scopes(found.scopes) if found else self.base_scopes, auth=auth,
            )  # fmt: skip
        kwargs: dict[str, Any] | None = None
        invalid: ArgumentsInvalid | None = None
        try:
            kwargs = found.validate(arguments)
        except ArgumentsInvalid as exc:
            invalid = exc
        # Answered at once: an inline tool without a Context. Anything else runs in a task,
        # even to fail (a cancellation read with it still wins then).
        now = inline_ok and found.inline and found.context_param is None and found.task is None
        scopes = self.scopes(found.scopes) if found.scopes else self.base_scopes
        # Positional: keywords cost a record made on every call a fifth more.
        return ResolvedRequest(
            request, "tool", found, found.name, arguments, kwargs, invalid, None, scopes, auth,
            now,
        )  # fmt: skip

    def prompt(self, request: Request, auth: AuthInfo | None, inline_ok: bool) -> ResolvedRequest:
        """Resolve a `prompts/get`: the prompt, its arguments validated."""
        found, arguments, error = _named(request.params, "prompts/get", "prompt", self.prompts.get)
        if error is not None:
            return ResolvedRequest(
                request, "prompt", found, _name_of(request.params), arguments, error=error,
                scopes=self.scopes(found.scopes) if found else self.base_scopes, auth=auth,
                now=inline_ok,
            )  # fmt: skip
        kwargs: dict[str, Any] | None = None
        invalid: ArgumentsInvalid | None = None
        try:
            kwargs = found.validate(arguments)
        except ArgumentsInvalid as exc:
            invalid = exc
        now = inline_ok and (invalid is not None or (found.inline and found.context_param is None))
        return ResolvedRequest(
            request, "prompt", found, found.name, arguments, kwargs, invalid,
            scopes=self.scopes(found.scopes), auth=auth, now=now,
        )  # fmt: skip

    # -- resources ------------------------------------------------------------------------------

    def resource(self, request: Request, auth: AuthInfo | None, inline_ok: bool) -> ResolvedRequest:
        """Resolve a `resources/read`, `subscribe` or `unsubscribe`: what serves the URI."""
        kind: Kind = "resource" if request.method == "resources/read" else "subscribe"
        uri = (request.params or {}).get("uri")
        if not isinstance(uri, str):
            error = RemoteProtocolError('Invalid params: "uri" must be a string', INVALID_PARAMS)
            return ResolvedRequest(
                request, kind, error=error, scopes=self.base_scopes, auth=auth, now=inline_ok
            )
        if len(uri) > LONG_URI and self.resources.static.get(uri) is None:
            # Matched in a worker thread by whoever waits anyway (`matched`), or refused: the
            # length check costs nothing.
            try:
                self.resources.check_length(uri)
            except RemoteProtocolError as exc:
                return ResolvedRequest(
                    request, kind, None, uri, error=exc, scopes=self.base_scopes, auth=auth,
                    now=inline_ok,
                )  # fmt: skip
            return ResolvedRequest(
                request, kind, None, uri, scopes=self.base_scopes, auth=auth, matched=False
            )
        return self._matched(request, kind, uri, auth, inline_ok)

    def matched(self, call: ResolvedRequest) -> ResolvedRequest:
        """The record of a resource request whose long URI was left unmatched, matched now.

        Blocking for as long as the match takes: run it in a worker thread.
        """
        if call.matched:
            return call
        assert call.name is not None
        found = self._matched(call.request, call.kind, call.name, call.auth, inline_ok=False)
        return found._replace(scope=call.scope, session_id=call.session_id, peer=call.peer)

    def _matched(
        self, request: Request, kind: Kind, uri: str, auth: AuthInfo | None, inline_ok: bool
    ) -> ResolvedRequest:
        try:
            found = self.resources.match(uri)
        except RemoteProtocolError as exc:  # a URI no template may even look at
            return ResolvedRequest(
                request, kind, None, uri, error=exc, scopes=self.base_scopes, auth=auth,
                now=inline_ok,
            )  # fmt: skip
        if found is None:
            # Not found is the revision's own error: raised by the dispatcher, which knows it.
            return ResolvedRequest(
                request, kind, None, uri, scopes=self.base_scopes, auth=auth,
                now=inline_ok,
            )  # fmt: skip
        target, values = found
        kwargs: dict[str, Any] | None = None
        invalid: ArgumentsInvalid | None = None
        if isinstance(target, ResourceTemplate):
            try:
                kwargs = target.validate(values)
            except ArgumentsInvalid as exc:
                invalid = exc
        else:
            kwargs = {}
        if kind == "subscribe":
            now = inline_ok
        else:
            now = inline_ok and (
                invalid is not None
                or target.fn is None
                or (target.inline and target.context_param is None)
            )
        return ResolvedRequest(
            request, kind, target, uri, values, kwargs, invalid,
            scopes=self.scopes(target.scopes), auth=auth, now=now,
        )  # fmt: skip

    # -- completion/complete --------------------------------------------------------------------

    def completion(
        self, request: Request, auth: AuthInfo | None, inline_ok: bool
    ) -> ResolvedRequest:
        """Resolve a `completion/complete`: the completer of the prompt's or template's argument.

        The request needs the scopes of what it completes (a completer tells about it).
        """
        try:
            owner, completer, value, chosen = self._completer(request.params)
        except RemoteProtocolError as exc:
            return ResolvedRequest(
                request, "completion", error=exc, scopes=self.base_scopes, auth=auth,
                now=inline_ok,
            )  # fmt: skip
        arguments = {"value": value, "arguments": chosen}
        now = inline_ok and (completer is None or completer.fn is None)
        return ResolvedRequest(
            request, "completion", completer, getattr(owner, "name", None), arguments,
            scopes=self.scopes(owner.scopes), auth=auth, now=now,
        )  # fmt: skip

    def _completer(
        self, params: dict[str, Any] | None
    ) -> tuple[Prompt | ResourceTemplate | Resource, Completer | None, str, dict[str, str]]:
        params = params or {}
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise RemoteProtocolError(
                'Invalid params: completion/complete needs "ref" and "argument" objects',
                INVALID_PARAMS,
            )
        name, value = argument.get("name"), argument.get("value")
        if not isinstance(name, str) or not isinstance(value, str):
            raise RemoteProtocolError(
                'Invalid params: "argument" needs "name" and "value" (strings)', INVALID_PARAMS
            )
        context = params.get("context")
        given = context.get("arguments") if isinstance(context, dict) else None
        chosen = (
            {k: v for k, v in given.items() if isinstance(v, str)}
            if isinstance(given, dict)
            else {}
        )
        owner: Prompt | ResourceTemplate | Resource | None
        if ref.get("type") == "ref/prompt":
            label = ref.get("name")
            owner = self.prompts.get(label) if isinstance(label, str) else None
            if owner is None:
                raise RemoteProtocolError(
                    f"Unknown prompt: {label}", INVALID_PARAMS, {"name": label}
                )
            known = [a["name"] for a in owner.arguments]
        elif ref.get("type") == "ref/resource":
            label = ref.get("uri")
            owner = None
            if isinstance(label, str):
                owner = self.resources.template_by_uri(label) or self.resources.static.get(label)
            if owner is None:
                raise RemoteProtocolError(
                    f"Unknown resource template: {label}", INVALID_PARAMS, {"uri": label}
                )
            if isinstance(owner, Resource):
                return owner, None, value, chosen  # a plain resource has nothing to complete
            known = [v.name for v in owner.template.variables]
        else:
            raise RemoteProtocolError(
                'Invalid params: "ref" must be of type "ref/prompt" or "ref/resource"',
                INVALID_PARAMS,
            )
        if name not in known:
            raise RemoteProtocolError(
                f"Invalid params: {label} has no argument {name!r} "
                f"(it has: {', '.join(known) or 'none'})",
                INVALID_PARAMS,
            )
        return owner, owner.completers.get(name), value, chosen


def unknown_method(request: Request, auth: AuthInfo | None) -> ResolvedRequest:
    """The record of a method no route answers: -32601 when it is answered."""
    method = request.method
    error = RemoteProtocolError(f"Method not found: {method}", METHOD_NOT_FOUND, {"method": method})
    return ResolvedRequest(request, "protocol", error=error, auth=auth, now=True)


def _name_of(params: dict[str, Any] | None) -> str | None:
    name = params.get("name") if params else None
    return name if isinstance(name, str) else None


def _named(
    params: dict[str, Any] | None, method: str, kind: str, lookup: Any
) -> tuple[Any, Mapping[str, Any], RemoteProtocolError | None]:
    """The item a `tools/call` or `prompts/get` names, its arguments, or what is wrong.

    Returns:
        (the item or None, the arguments object, None or the -32602 error for a missing name,
        an unknown one (`data.name`), or arguments that are not an object (the item is
        still given then)).
    """
    params = params or {}
    name = params.get("name")
    if not isinstance(name, str):
        error = RemoteProtocolError(
            f'Invalid params: {method} needs "name" (a string)', INVALID_PARAMS
        )
        return None, {}, error
    found = lookup(name)
    if found is None:
        error = RemoteProtocolError(f"Unknown {kind}: {name}", INVALID_PARAMS, {"name": name})
        return None, {}, error
    arguments = params.get("arguments")
    if arguments is None:
        return found, {}, None
    if not isinstance(arguments, dict):
        error = RemoteProtocolError('Invalid params: "arguments" must be an object', INVALID_PARAMS)
        return found, {}, error  # still its target: the request needs its scopes
    return found, arguments, None
