"""Where OAuth metadata is, and whose: what the server's verifiers and the client's flows share.

Both sides read an authorization server's metadata (RFC 8414; OpenID Connect Discovery): the
client to run its grants (`trio_mcp.oauth`), the server to find the keys its tokens are signed
with (`trio_mcp.auth`). So the well-known paths, the order they are tried in, origins, and the
one GET of such a document are written once, here. Nothing here does I/O of its own: the GET
goes through the caller's httpx client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import httpx

__all__ = [
    "RESOURCE_METADATA_PATH",
    "authorization_server_metadata_urls",
    "get_json",
    "origin",
    "same_origin",
]

#: RFC 9728 section 3: the well-known path of protected resource metadata.
RESOURCE_METADATA_PATH: Final = "/.well-known/oauth-protected-resource"


def origin(url: str) -> str:
    """scheme://host[:port] of `url` (the host as written, the scheme in lower case)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def same_origin(first: str, second: str) -> bool:
    """Whether two URLs have the same scheme, host and port, case aside (RFC 3986, 6.2.2.1)."""
    a, b = urlsplit(first), urlsplit(second)
    return (a.scheme.lower(), a.netloc.lower()) == (b.scheme.lower(), b.netloc.lower())


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where the metadata of the authorization server `issuer` may be, in the MCP spec's order.

    RFC 8414's path-inserted URI, then OpenID Connect's path-inserted and path-appended ones
    (for an issuer without a path: the two root ones).
    """
    root = origin(issuer)
    path = urlsplit(issuer).path.rstrip("/")
    if not path:
        return [
            f"{root}/.well-known/oauth-authorization-server",
            f"{root}/.well-known/openid-configuration",
        ]
    return [
        f"{root}/.well-known/oauth-authorization-server{path}",
        f"{root}/.well-known/openid-configuration{path}",
        f"{root}{path}/.well-known/openid-configuration",
    ]


async def get_json(http: httpx.AsyncClient, url: str) -> Any:
    """The JSON document at `url` (metadata, a key set).

    Raises:
        httpx.HTTPError: `url` could not be reached.
        ValueError: the answer is not a 200 (RFC 8414 and RFC 9728: a successful response
            uses 200 OK) or not JSON.
    """
    response = await http.get(url, headers={"accept": "application/json"})
    if response.status_code != 200:
        raise ValueError(f"HTTP {response.status_code} {response.reason_phrase}".rstrip())
    return response.json()
