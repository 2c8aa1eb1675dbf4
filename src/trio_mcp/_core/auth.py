"""Who a request is from, as a verified bearer token says (`AuthInfo`), and what it may do.

The records every layer reads once a token is verified: `AuthInfo`, the principal it stands
for, and the scope checks. Verifying is `trio_mcp.auth`'s job; this module only holds the
outcome.

Rule 1: an `AuthInfo` is what a token verifier concluded, never the token: it holds no
        credential, so it may be logged, shown to tools (`Context.auth`) and kept. The spec
        forbids a server to pass the client's token on to other services (token passthrough);
        a tool that must call one gets a token of its own for it.
Rule 2: the HTTP transport verifies a request's token before the request reaches a session and
        hands the result on in the request's resolved record (`ResolvedRequest.auth`), which
        everything after reads: the lists, a tool's `Context`, the tasks and streams it makes.
        Over stdio and in memory there is none: None, and scopes are not enforced.
Rule 3: what a token grants access to belongs to its principal: the issuer, subject and client
        of the verified token (`principal_of`), the same for every token of that user and
        client (a refreshed one too), from any session or worker. HTTP sessions, tasks and
        `requestState` are bound to it; without a token there is no principal and no binding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "AuthInfo",
    "Principal",
    "missing_scopes",
    "parse_scopes",
    "principal_from",
    "principal_of",
]


@dataclass(frozen=True, slots=True)
class AuthInfo:
    """A verified access token's facts: who, for which client, with which scopes, until when.

    It never holds the token itself (Rule 1).

    Attributes:
        subject: The resource owner (`sub`), or None when the token names none.
        client_id: The OAuth client the token was issued to, when known.
        scopes: The scopes granted.
        expires_at: When the token expires (seconds since the epoch), when known.
        audience: The resources the token is for (`aud`).
        issuer: Who issued it (`iss`), when known.
        claims: Every claim of the token (JWT) or introspection answer, read-only.
        token_id: A digest of the token (never the token) when it names no issuer, subject
            or client: the HTTP transport binds sessions to it then, since nothing else tells
            one holder from another.
    """

    subject: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    audience: tuple[str, ...] = ()
    issuer: str | None = None
    claims: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    token_id: str | None = None

    def has_scopes(self, needed: Iterable[str]) -> bool:
        """Whether every scope of `needed` was granted."""
        return not missing_scopes(needed, self.scopes)


#: Who a token is (Rule 3): its issuer, subject and client id, each None when it names none.
Principal = tuple[str | None, str | None, str | None]


def principal_of(info: AuthInfo | None) -> Principal | None:
    """The principal a verified token stands for (Rule 3); None without a token.

    A token that names no issuer, subject or client stands for itself: its principal carries
    the token's digest (`token_id`) as the subject, so what it made answers that token only (a
    refreshed one is a stranger).
    """
    if info is None:
        return None
    if info.issuer is None and info.subject is None and info.client_id is None and info.token_id:
        return (None, "sha256:" + info.token_id, None)
    return (info.issuer, info.subject, info.client_id)


def principal_from(value: Any) -> Principal | None:
    """A principal written as JSON (a list of three strings or nulls, or null), read back.

    Raises:
        ValueError: for anything else.
    """
    if value is None:
        return None
    if (
        isinstance(value, list | tuple)
        and len(value) == 3
        and all(part is None or isinstance(part, str) for part in value)
    ):
        return (value[0], value[1], value[2])
    raise ValueError(f"not a principal: {value!r:.100}")


def parse_scopes(value: Any) -> frozenset[str]:
    """Scopes from a `scope` claim (space-separated string) or an `scp` claim (list or string).

    Anything else (a number, None) grants nothing.
    """
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list | tuple):
        return frozenset(item for item in value if isinstance(item, str) and item)
    return frozenset()


def missing_scopes(needed: Iterable[str], granted: Iterable[str]) -> tuple[str, ...]:
    """The scopes of `needed` that `granted` lacks, in `needed`'s order.

    Scopes compare as plain strings (RFC 6749, 3.3: space-delimited, case-sensitive).
    """
    have = set(granted)
    return tuple(dict.fromkeys(scope for scope in needed if scope not in have))
