"""A token verifier of the test authorization server's tokens, made the way a deployment would.

The audience names the served MCP URL, which is known only once the server has bound its port:
`verifier_for` sets a placeholder, and the caller sets `audience` right after serving.
"""

from __future__ import annotations

from typing import Any, Literal

from tests.oauth_server import OAuthServer
from trio_mcp import IntrospectionVerifier, JwtVerifier

#: Replaced by the served URL once the port is bound.
UNSET_AUDIENCE = "http://unset.invalid/mcp"


def verifier_for(
    oauth: OAuthServer, kind: Literal["jwt", "introspection"], **options: Any
) -> JwtVerifier | IntrospectionVerifier:
    """A `JwtVerifier` on `oauth`'s JWKS, or an `IntrospectionVerifier` registered with it.

    `audience` is the placeholder unless `options` name one (None: the verifier's default).
    """
    options.setdefault("audience", UNSET_AUDIENCE)
    if kind == "jwt":
        options.setdefault("jwks_url", oauth.endpoint("jwks"))
        return JwtVerifier(issuer=oauth.issuer, **options)
    registered = oauth.register_client(token_endpoint_auth_method="client_secret_basic")
    assert registered.client_secret is not None
    return IntrospectionVerifier(
        oauth.endpoint("introspect"), registered.client_id, registered.client_secret, **options
    )
