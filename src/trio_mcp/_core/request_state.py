"""`requestState` of 2026-07-28 input-required results: sealed by the server, opened on retry.

A call that asks the client for input ends its round with a sealed state; the retry brings it
back, and `StateSeal` opens it to continue the call. Sans-IO: the caller passes the time.

Rule 1: the state is attacker-controlled input (spec 2026-07-28, MRTR, Server Requirements).
        It is `payload.mac`, both URL-safe base64 without padding, the MAC an HMAC-SHA256 over
        a domain prefix and the payload with the server's key. Nothing in it is parsed before
        the MAC is verified, and nothing longer than `max_bytes` is even split.
Rule 2: the payload binds the state to the request it continues (the method and a digest of
        its salient parameters: tool or prompt name and arguments, or the resource URI, and
        the principal of the request's verified token: `_core/auth` Rule 3) and carries an
        expiry; a state presented on another request, by another user, or late, is refused.
        Without a token the digest is what it was before principals were bound. The
        answers of earlier rounds ride in it, so any worker holding the same key continues a
        call another worker began: the server keeps nothing in memory between rounds.
Rule 3: every refusal is -32602 Invalid params with a message that says what to do (call again
        without `requestState`), never which check failed first beyond that.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any, Final

from .._exceptions import RemoteProtocolError
from .auth import Principal
from .jsonrpc import INVALID_PARAMS

__all__ = [
    "DEFAULT_STATE_MAX_BYTES",
    "DEFAULT_STATE_TTL",
    "STATE_KEY_ENV",
    "StateSeal",
    "StateTooLarge",
    "binding",
]

#: Seconds a `requestState` stays valid: long enough for a person to answer a form, short
#: enough to bound replays (the spec asks for "a short expiry").
DEFAULT_STATE_TTL: Final = 1800.0
#: The longest `requestState` made or accepted: the answers of earlier rounds ride in it, and
#: the client sends it back with every round.
DEFAULT_STATE_MAX_BYTES: Final = 256 * 1024
#: The environment variable a fleet sets to share one key (hex, or any string of 32+ chars).
STATE_KEY_ENV: Final = "TRIO_MCP_REQUEST_STATE_KEY"

_DOMAIN: Final = b"trio-mcp request-state v1\n"
_VERSION: Final = 1


class StateTooLarge(Exception):  # noqa: N818 - an outcome the dispatcher reports
    """The state to seal would be longer than the bound."""


def binding(
    method: str,
    target: str,
    arguments: Mapping[str, Any] | None,
    principal: Principal | None = None,
) -> str:
    """A short digest naming the request a state continues (method, name or URI, arguments).

    With a `principal` (the request's verified token), the digest names it too (Rule 2).
    """
    parts: list[Any] = [method, target, arguments or {}]
    if principal is not None:
        parts.append(list(principal))
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return _b64(hashlib.sha256(canonical.encode()).digest()[:18])


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _key_from(value: bytes | str) -> bytes:
    if isinstance(value, bytes):
        key = value
    else:
        try:
            key = bytes.fromhex(value)
        except ValueError:
            key = value.encode()
    if len(key) < 16:
        raise ValueError("a request-state key needs at least 16 bytes (32 hex digits)")
    return key


class StateSeal:
    """Seals and opens `requestState` with one server key.

    Args:
        key: The HMAC key (bytes; or a hex string, or any string of 16+ bytes). None: the
            `TRIO_MCP_REQUEST_STATE_KEY` environment variable, else a random key for this
            process (then only this process can continue the calls it began).
        ttl: Seconds a state stays valid.
        max_bytes: The longest state made or accepted.
    """

    def __init__(
        self,
        key: bytes | str | None = None,
        *,
        ttl: float = DEFAULT_STATE_TTL,
        max_bytes: int = DEFAULT_STATE_MAX_BYTES,
    ) -> None:
        if key is None:
            key = os.environ.get(STATE_KEY_ENV) or os.urandom(32)
        self._key = _key_from(key)
        if ttl <= 0 or max_bytes < 256:
            raise ValueError("ttl must be positive and max_bytes at least 256")
        self.ttl = ttl
        self.max_bytes = max_bytes

    def _mac(self, payload: str) -> bytes:
        return hmac.new(self._key, _DOMAIN + payload.encode("ascii"), hashlib.sha256).digest()

    def seal(self, bound_to: str, answers: Mapping[str, Any], now: float) -> str:
        """A state continuing the request `bound_to` names, carrying `answers`.

        Raises:
            StateTooLarge: when it would be longer than `max_bytes`.
        """
        body = {"v": _VERSION, "b": bound_to, "e": int(now + self.ttl), "a": dict(answers)}
        payload = _b64(json.dumps(body, separators=(",", ":"), allow_nan=False).encode())
        token = f"{payload}.{_b64(self._mac(payload))}"
        if len(token) > self.max_bytes:
            raise StateTooLarge(
                f"the answers gathered so far need a requestState of {len(token)} bytes, over "
                f"the server's limit of {self.max_bytes}"
            )
        return token

    def open(self, token: Any, bound_to: str, now: float) -> dict[str, Any]:
        """The answers a state carries, once it is proven the server's, fresh and for this request.

        Raises:
            RemoteProtocolError: -32602 for a state that is not a string, too long, malformed,
                tampered with, made for another request, or expired.
        """
        if not isinstance(token, str) or not token.isascii():
            raise _refused("requestState must be the string the server sent")
        if len(token) > self.max_bytes:
            raise _refused(f"requestState is longer than the server's limit of {self.max_bytes}")
        payload, dot, mac = token.partition(".")
        # The MAC is compared as the text we would have sent: decoding it first would accept
        # other spellings of the same bytes (base64's unused low bits), a tampered-with state
        # that still passes.
        expected = _b64(self._mac(payload))
        if not dot or not hmac.compare_digest(mac.encode(), expected.encode()):
            raise _refused("requestState failed its integrity check (changed, or not ours)")
        try:
            body = json.loads(_unb64(payload))
        except (binascii.Error, ValueError):  # pragma: no cover - a valid MAC on our own JSON
            raise _refused("requestState is malformed") from None
        if not isinstance(body, dict) or body.get("v") != _VERSION:
            raise _refused("requestState is of an unknown version")
        if body.get("b") != bound_to:
            raise _refused(
                "requestState belongs to another request (a different tool, prompt, resource, "
                "arguments or user)"
            )
        expiry = body.get("e")
        if not isinstance(expiry, int) or now > expiry:
            raise _refused("requestState has expired")
        answers = body.get("a")
        if not isinstance(answers, dict):  # pragma: no cover - we only seal objects
            raise _refused("requestState is malformed")
        return answers


def _refused(why: str) -> RemoteProtocolError:
    return RemoteProtocolError(
        f"Invalid params: {why}; send the request again without requestState and "
        "inputResponses to start over",
        INVALID_PARAMS,
    )
