"""The server's token verifiers: a fixed token, JWT access tokens, token introspection.

Each is a `TokenVerifier` (`resource`): the HTTP transport's gate hands it the bearer token of
a request and answers 401, 403 or 503 from what it says.

Rule 1: a token must have been issued for this server (RFC 8707 audience): `JwtVerifier` and
        `IntrospectionVerifier` check `aud` against the server's canonical URI. Tokens are never
        logged, kept in an `AuthInfo` or echoed in an error.
Rule 2: JOSE is PyJWT's (the `auth` extra), imported when a `JwtVerifier` is made: importing
        trio_mcp, or serving without one, loads neither it nor cryptography.
Rule 3: key sets and introspection answers are cached: a JWKS for `jwks_ttl` seconds, and
        fetched again early only for a `kid` it lacks (key rotation), at most once per
        `jwks_min_refetch` seconds however many requests ask at once (failed attempts count),
        so unknown `kid`s cannot make the server hammer the authorization server; while a
        fetch fails the keys held serve for `jwks_grace` more seconds. An active
        introspection answer is cached for `cache_seconds` (never past the token's `exp`),
        a refusal for `negative_cache_seconds`.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import trio

from .._core.auth import AuthInfo, missing_scopes, parse_scopes
from .._exceptions import InsufficientScopeError, InvalidTokenError
from .._wellknown import authorization_server_metadata_urls, get_json
from .resource import TokenVerifierError

if TYPE_CHECKING:
    import jwt as pyjwt

__all__ = [
    "IntrospectionVerifier",
    "JwtVerifier",
    "StaticTokenVerifier",
    "canonical_uri",
    "discover_jwks_url",
]

logger = logging.getLogger("trio_mcp.http")


class StaticTokenVerifier:
    """One fixed token (for development): accepted in constant time, with fixed scopes.

    Args:
        token: The token.
        scopes: The scopes it grants.
        subject: The subject it stands for.
    """

    def __init__(
        self, token: str, *, scopes: Iterable[str] = (), subject: str | None = None
    ) -> None:
        if not token:
            raise ValueError("StaticTokenVerifier needs a non-empty token")
        self._token = token.encode()
        self._info = AuthInfo(subject=subject, scopes=frozenset(scopes))

    def __repr__(self) -> str:
        return f"StaticTokenVerifier(scopes={sorted(self._info.scopes)!r})"

    async def verify(self, token: str) -> AuthInfo | None:
        """The fixed facts when `token` is the one; else None."""
        return self._info if hmac.compare_digest(token.encode(), self._token) else None


def _audiences(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(item for item in value if isinstance(item, str))
    return ()


def _info(claims: Mapping[str, Any]) -> AuthInfo:
    scopes = parse_scopes(claims.get("scope")) | parse_scopes(claims.get("scp"))
    exp = claims.get("exp")
    client_id = claims.get("client_id", claims.get("azp"))
    return AuthInfo(
        subject=claims.get("sub") if isinstance(claims.get("sub"), str) else None,
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=scopes,
        expires_at=float(exp) if isinstance(exp, int | float) else None,
        audience=_audiences(claims.get("aud")),
        issuer=claims.get("iss") if isinstance(claims.get("iss"), str) else None,
        claims=MappingProxyType(dict(claims)),
    )


def canonical_uri(uri: str) -> str:
    """`uri` with its scheme and host in lower case: the canonical form (RFC 8707, 2).

    The spec asks servers to accept upper-case scheme and host components for robustness;
    the path stays as it is (paths are case-sensitive).
    """
    parts = urlsplit(uri)
    return parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()).geturl()


def _check_audience(info: AuthInfo, audience: str) -> None:
    """Refuse a token whose `aud` does not name this server (RFC 8707; MCP: audience binding)."""
    wanted = canonical_uri(audience)
    if not any(canonical_uri(aud) == wanted for aud in info.audience):
        raise InvalidTokenError(
            f"The access token is not for this server (aud must include {audience})"
        )


def _require(info: AuthInfo, required: tuple[str, ...]) -> AuthInfo:
    missing = missing_scopes(required, info.scopes)
    if missing:
        raise InsufficientScopeError(missing)
    return info


async def _fetch(url: str, seconds: float) -> Any:
    """The JSON document at `url`, through an HTTP client of its own that lives for this fetch."""
    import httpx  # noqa: PLC0415 - the http extra, loaded when a verifier first fetches

    try:
        async with httpx.AsyncClient(timeout=seconds) as http:
            return await get_json(http, url)
    except (httpx.HTTPError, ValueError) as exc:
        raise TokenVerifierError(f"cannot fetch {url}: {exc}") from None


async def discover_jwks_url(issuer: str, *, seconds: float = 10.0) -> str:
    """The `jwks_uri` of an issuer, from its RFC 8414 (or OpenID Connect) metadata.

    Tries, in the MCP spec's order: the path-inserted OAuth metadata URL, the path-inserted
    OpenID one, then the OpenID one appended to the issuer. A document whose `issuer` is not
    exactly `issuer` is refused (RFC 8414, 3.3): it speaks for another authorization server,
    whose keys would let it mint tokens this server accepts.

    Raises:
        TokenVerifierError: none of them answers with a `jwks_uri`, or one names another
            issuer.
    """
    for url in authorization_server_metadata_urls(issuer):
        try:
            doc = await _fetch(url, seconds)
        except TokenVerifierError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("jwks_uri"), str):
            if doc.get("issuer") != issuer:
                raise TokenVerifierError(
                    f"the authorization server metadata at {url} names issuer "
                    f"{doc.get('issuer')!r}, not {issuer!r}"
                )
            return str(doc["jwks_uri"])
    raise TokenVerifierError(f"no authorization server metadata with a jwks_uri for {issuer}")


class JwtVerifier:
    """Verifies JWT access tokens (RFC 9068) against an authorization server's JWKS.

    Checks the signature (a key of the JWKS, chosen by `kid`, in `algorithms`), `iss`, `aud`
    (must contain `audience`, this server's canonical URI: RFC 8707), `exp` and `nbf` (with
    `leeway`), and `required_scopes` (from `scope`, space-separated, or `scp`). A token bound
    to a DPoP key (`cnf.jkt`) is refused: this server verifies no DPoP proofs, and such a
    token sent as a Bearer may be a stolen one. Needs the `auth` extra (PyJWT with
    cryptography).

    Args:
        issuer: The authorization server's issuer identifier (`iss`).
        audience: This server's canonical URI (e.g. `https://mcp.example.com/mcp`).
        jwks_url: Where the key set is; None: discovered from the issuer's metadata.
        algorithms: Accepted JWS algorithms (never "none", never HMAC with a public key).
        leeway: Seconds of clock skew allowed for `exp`, `nbf` and `iat`.
        required_scopes: Scopes every request needs (403 without them).
        jwks_ttl: Seconds a fetched key set is used before it is fetched again.
        jwks_min_refetch: Seconds between two fetches (or failed attempts) of the key set
            (Rule 3).
        jwks_grace: Seconds past `jwks_ttl` the keys held stay in use while fetching them
            again fails (with a warning logged).
        require_at_jwt_typ: Refuse tokens whose JWS header `typ` is not `at+jwt` (RFC 9068,
            2.1, which keeps an ID token or another JWT from passing as an access token).
            Off by default: many authorization servers still issue `typ: JWT`.
        timeout: Seconds one fetch may take.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        jwks_url: str | None = None,
        algorithms: Iterable[str] = ("RS256", "ES256"),
        leeway: float = 30.0,
        required_scopes: Iterable[str] = (),
        # 10 minutes: keys rotate on the scale of days, and an unknown `kid` fetches anyway.
        jwks_ttl: float = 600.0,
        # 30 s: a rotated key is picked up at once, yet garbage `kid`s cost one fetch per 30 s.
        jwks_min_refetch: float = 30.0,
        # 1 hour: an authorization server down for a while does not turn every token into a
        # 503 the moment the TTL passes; keys it retired meanwhile still expire within it.
        jwks_grace: float = 3600.0,
        require_at_jwt_typ: bool = False,
        timeout: float = 10.0,
    ) -> None:
        import jwt  # noqa: PLC0415 - JOSE loads only for a server that verifies JWTs (Rule 2)

        self._jwt = jwt
        self.issuer = issuer
        self.audience = audience
        self.jwks_url = jwks_url
        self.algorithms = tuple(algorithms)
        bad = [a for a in self.algorithms if a == "none" or a.startswith("HS")]
        if bad or not self.algorithms:
            raise ValueError(f"JwtVerifier takes asymmetric algorithms only, not {bad}")
        self.leeway = leeway
        self.required_scopes = tuple(required_scopes)
        self.jwks_ttl = jwks_ttl
        self.jwks_min_refetch = jwks_min_refetch
        self.timeout = timeout
        self.jwks_grace = jwks_grace
        self.require_at_jwt_typ = require_at_jwt_typ
        self._keys: dict[str | None, pyjwt.PyJWK] = {}
        #: When the key set was last fetched, and last tried (monotonic seconds).
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._lock = trio.Lock()
        #: Key set fetches so far (for tests and monitoring).
        self.fetches = 0

    def __repr__(self) -> str:
        return f"JwtVerifier(issuer={self.issuer!r}, audience={self.audience!r})"

    async def verify(self, token: str) -> AuthInfo | None:
        """Verify `token`; see the class docstring."""
        jwt = self._jwt
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidTokenError("The access token is not a well-formed JWT") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.algorithms:
            raise InvalidTokenError(f"The access token's algorithm {alg!r} is not accepted")
        typ = header.get("typ")
        if self.require_at_jwt_typ and (
            not isinstance(typ, str) or typ.lower() not in ("at+jwt", "application/at+jwt")
        ):
            raise InvalidTokenError("The access token's type (typ) must be at+jwt")
        key = await self._key(kid if isinstance(kid, str) else None)
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=list(self.algorithms),
                issuer=self.issuer,
                leeway=self.leeway,
                # `aud` is compared below, with scheme and host case-insensitive.
                options={"require": ["exp", "iss", "aud"], "verify_aud": False},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidTokenError("The access token expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidTokenError("The access token is not valid yet (nbf)") from None
        except jwt.InvalidIssuerError:
            raise InvalidTokenError("The access token is from another issuer") from None
        except jwt.InvalidSignatureError:
            raise InvalidTokenError("The access token's signature does not verify") from None
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidTokenError(f"The access token lacks the {exc.claim} claim") from None
        except jwt.PyJWTError as exc:
            raise InvalidTokenError(f"The access token is not valid: {exc}") from None
        cnf = claims.get("cnf")
        if isinstance(cnf, dict) and "jkt" in cnf:
            # A sender-constrained token (RFC 9449, 6.1) is only as good as the proof that
            # goes with it, which this server does not check: as a Bearer it is refused.
            raise InvalidTokenError("DPoP-bound tokens are not accepted")
        info = _info(claims)
        _check_audience(info, self.audience)
        return _require(info, self.required_scopes)

    async def _key(self, kid: str | None) -> Any:
        found = self._find(kid)
        if found is None or self._stale(time.monotonic()):
            await self._refresh(kid)
            found = self._find(kid)
        if found is None:
            raise InvalidTokenError("The access token was signed with an unknown key")
        return found.key

    def _find(self, kid: str | None) -> Any:
        found = self._keys.get(kid)
        if found is None and kid is None and len(self._keys) == 1:
            found = next(iter(self._keys.values()))
        return found

    def _stale(self, now: float) -> bool:
        return self._fetched_at is None or now - self._fetched_at > self.jwks_ttl

    async def _refresh(self, kid: str | None) -> None:
        """Fetch the key set, unless another request just did or tried (Rule 3).

        Everything is decided inside the lock: requests that queued behind a fetch see its
        outcome and do not fetch again. A failed fetch counts as an attempt too, so an
        authorization server that is down is asked once per `jwks_min_refetch`, not once per
        request; meanwhile keys fetched less than `jwks_ttl + jwks_grace` ago stay in use.
        """
        async with self._lock:
            now = time.monotonic()
            if not self._stale(now) and self._find(kid) is not None:
                return  # another request fetched it meanwhile
            tried = self._attempted_at
            if tried is not None and now - tried < self.jwks_min_refetch:
                if self._usable(now):
                    return  # fetched or tried just now: what we have is the answer
                raise TokenVerifierError(f"the key set at {self.jwks_url} is unavailable")
            self._attempted_at = now
            try:
                if self.jwks_url is None:
                    self.jwks_url = await discover_jwks_url(self.issuer, seconds=self.timeout)
                doc = await _fetch(self.jwks_url, self.timeout)
            except TokenVerifierError as exc:
                if not self._usable(now):
                    raise
                logger.warning("cannot refresh the key set; the previous keys stay: %s", exc)
                return
            self.fetches += 1
            self._fetched_at = time.monotonic()
            keys: dict[str | None, Any] = {}
            for entry in doc.get("keys", []) if isinstance(doc, dict) else []:
                if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                    continue
                try:
                    jwk = self._jwt.PyJWK(entry)
                except self._jwt.PyJWTError:
                    continue  # a key type this library does not know: skipped
                keys[entry.get("kid")] = jwk
            self._keys = keys

    def _usable(self, now: float) -> bool:
        """Whether the keys held may still verify tokens (within ttl plus the grace period)."""
        fetched = self._fetched_at
        return fetched is not None and now - fetched <= self.jwks_ttl + self.jwks_grace


class IntrospectionVerifier:
    """Verifies tokens by asking the authorization server (RFC 7662 introspection).

    The server authenticates itself with HTTP Basic (client_secret_basic). A token is valid
    when the answer says `active`, its `exp` (if any) is ahead and its `nbf` (if any) passed,
    its `iss` (if the answer has one and `issuer` is set) is `issuer`, and its `aud` contains
    this server's canonical URI (RFC 8707). Active answers are cached (Rule 3); refusals too,
    for `negative_cache_seconds`, so that a client repeating a dead token does not cost one
    introspection per request.

    Audience binding fails closed: with `audience` None, the canonical URI the server is
    configured with (`ProtectedResource.resource`) is used; a server that has none refuses to
    start. Only `allow_any_audience=True` accepts tokens issued for any resource, which lets a
    token meant for another service be replayed here (not advised).

    Args:
        endpoint: The introspection endpoint.
        client_id: This server's client id at the authorization server.
        client_secret: Its secret.
        audience: This server's canonical URI; None: `ProtectedResource.resource`.
        allow_any_audience: Skip the audience check (tokens for any resource are accepted).
        issuer: The authorization server's issuer identifier; an answer naming another `iss`
            is refused (None: not checked).
        required_scopes: Scopes every request needs (403 without them).
        cache_seconds: Seconds an active answer is reused (0: ask every time).
        negative_cache_seconds: Seconds a refusal is remembered (0: ask every time).
        leeway: Seconds of clock skew allowed for `nbf` (an expired `exp` is never accepted:
            the authorization server's own answer would soon say inactive).
        timeout: Seconds one introspection may take.
    """

    # 10,000 tokens: a few MiB at most; past it the oldest answers are dropped.
    MAX_CACHED: Final = 10_000

    def __init__(
        self,
        endpoint: str,
        client_id: str,
        client_secret: str,
        *,
        audience: str | None = None,
        allow_any_audience: bool = False,
        issuer: str | None = None,
        required_scopes: Iterable[str] = (),
        # 30 s: a revoked token is refused within half a minute, and a busy client costs one
        # introspection per half minute instead of one per request.
        cache_seconds: float = 30.0,
        # 5 s: a token refused by mistake (the AS lagging behind its own issuance) recovers
        # quickly, and a client retrying a dead token in a loop costs one introspection per 5 s.
        negative_cache_seconds: float = 5.0,
        leeway: float = 30.0,
        timeout: float = 10.0,
    ) -> None:
        self.endpoint = endpoint
        self.client_id = client_id
        self._secret = client_secret
        self.audience = audience
        self.allow_any_audience = allow_any_audience
        self.issuer = issuer
        self.required_scopes = tuple(required_scopes)
        self.cache_seconds = cache_seconds
        self.negative_cache_seconds = negative_cache_seconds
        self.leeway = leeway
        self.timeout = timeout
        # sha256 of the token -> (facts, or the refusal's reason; until when): the tokens
        # themselves are not kept.
        self._cache: OrderedDict[bytes, tuple[AuthInfo | str, float]] = OrderedDict()

    def bind_resource(self, resource: str | None) -> None:
        """Take the server's canonical URI as the audience, unless one was given (`AuthGate`).

        Raises:
            ValueError: no audience is known and `allow_any_audience` is not set.
        """
        if self.audience is None and not self.allow_any_audience:
            if resource is None:
                raise ValueError(
                    "IntrospectionVerifier needs the server's canonical URI to check the "
                    "tokens' audience: pass audience=... or set ProtectedResource(resource=...) "
                    "(allow_any_audience=True accepts tokens for any resource: not advised)"
                )
            self.audience = resource

    def __repr__(self) -> str:
        return f"IntrospectionVerifier({self.endpoint!r}, audience={self.audience!r})"

    async def verify(self, token: str) -> AuthInfo | None:
        """Verify `token`; see the class docstring."""
        if self.audience is None and not self.allow_any_audience:
            # Not bound to a server (used outside `AuthGate`): fail closed.
            raise TokenVerifierError("IntrospectionVerifier has no audience to check tokens for")
        key = hashlib.sha256(token.encode()).digest()
        now = time.time()
        cached = self._cache.get(key)
        if cached is not None and cached[1] > now:
            if isinstance(cached[0], str):
                raise InvalidTokenError(cached[0])
            return _require(cached[0], self.required_scopes)
        self._cache.pop(key, None)
        answer = await self._introspect(token)
        try:
            info = self._judge(answer, now)
        except InvalidTokenError as exc:
            self._remember(key, str(exc), now, now + self.negative_cache_seconds)
            raise
        until = now + self.cache_seconds
        if info.expires_at is not None:
            until = min(until, info.expires_at)
        self._remember(key, info, now, until)
        return _require(info, self.required_scopes)

    def _judge(self, answer: Any, now: float) -> AuthInfo:
        if not isinstance(answer, dict) or answer.get("active") is not True:
            raise InvalidTokenError("The access token is not active")
        info = _info(answer)
        if info.expires_at is not None and info.expires_at <= now:
            raise InvalidTokenError("The access token expired")
        nbf = answer.get("nbf")
        if isinstance(nbf, int | float) and nbf > now + self.leeway:
            raise InvalidTokenError("The access token is not valid yet (nbf)")
        if self.issuer is not None and info.issuer is not None and info.issuer != self.issuer:
            raise InvalidTokenError("The access token is from another issuer")
        if self.audience is not None and not self.allow_any_audience:
            _check_audience(info, self.audience)
        return info

    def _remember(self, key: bytes, verdict: AuthInfo | str, now: float, until: float) -> None:
        if until <= now:  # a cache of 0 seconds, or a token expiring now
            return
        self._cache[key] = (verdict, until)
        self._cache.move_to_end(key)
        while len(self._cache) > self.MAX_CACHED:
            self._cache.popitem(last=False)

    async def _introspect(self, token: str) -> Any:
        import httpx  # noqa: PLC0415 - the http extra, loaded when a verifier first asks

        try:
            async with httpx.AsyncClient(timeout=self.timeout) as http:
                response = await http.post(
                    self.endpoint,
                    data={"token": token, "token_type_hint": "access_token"},
                    auth=(self.client_id, self._secret),
                    headers={"accept": "application/json"},
                )
                response.raise_for_status()
                return response.json()
        except (httpx.HTTPError, ValueError) as exc:
            # The exception names the endpoint, never the token.
            raise TokenVerifierError(f"introspection at {self.endpoint} failed: {exc}") from None
