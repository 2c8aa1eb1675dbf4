"""A protected trio-mcp Streamable HTTP server for `benchmarks/auth_bench.py`.

    python benchmarks/servers/trio_mcp_auth.py --auth none|static|jwt-rs256|jwt-es256|introspection

It serves `calculator.add` (`inline=True`, as `trio_mcp_http.py` does) with one way of checking
tokens: none; `StaticTokenVerifier`; `JwtVerifier` against tokens signed RS256 or ES256; or
`IntrospectionVerifier` with its cache (one introspection per token, then answers from memory).
The authorization server is the test suite's (`tests/oauth_server.py`), in this process: after
the first request fetches its key set (or introspects the token) it sits idle, so the server's
time is the verifier's own. It prints on stderr, in this order: `bench token: <token>` (a
token good for every request, none without auth), `bench client: <id> <secret> <issuer>` (a
client that may use the `client_credentials` grant; not for none or static), and last
`serving MCP on <url>` once it listens.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import trio

# The test authorization server is in the repository's tests/ (run from a clone).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.oauth_server import serve_oauth
from trio_mcp import (
    IntrospectionVerifier,
    JwtVerifier,
    ProtectedResource,
    Server,
    StaticTokenVerifier,
    serve_http,
    tool,
)
from trio_mcp.http import HttpOptions

MODES = ("none", "static", "jwt-rs256", "jwt-es256", "introspection")
STATIC_TOKEN = "bench-static-token"
#: Stands for the audience until the port is bound; replaced before anything is served.
UNSET = "http://unset.invalid/mcp"


@tool("calculator.add", inline=True)
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


server = Server(name="bench-trio-mcp-auth")
server.add_tool(add)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def main(mode: str) -> None:
    async with trio.open_nursery() as nursery:

        async def start(options: HttpOptions) -> str:
            listeners = await nursery.start(
                lambda task_status: serve_http(
                    server, host="127.0.0.1", port=0, options=options, task_status=task_status
                )
            )
            return f"{listeners[0]}/mcp"

        if mode == "none":
            say(f"serving MCP on {await start(HttpOptions())}")
            return
        if mode == "static":
            url = await start(HttpOptions(auth=StaticTokenVerifier(STATIC_TOKEN, scopes=["mcp"])))
            say(f"bench token: {STATIC_TOKEN}")
            say(f"serving MCP on {url}")
            return
        algorithm = "ES256" if mode == "jwt-es256" else "RS256"
        oauth = await nursery.start(_run_oauth, algorithm)
        verifier: JwtVerifier | IntrospectionVerifier
        if mode == "introspection":
            rs = oauth.register_client(token_endpoint_auth_method="client_secret_basic")
            verifier = IntrospectionVerifier(
                oauth.endpoint("introspect"),
                rs.client_id,
                rs.client_secret,
                audience=UNSET,
                cache_seconds=3600,
            )
        else:
            verifier = JwtVerifier(
                issuer=oauth.issuer, audience=UNSET, jwks_url=oauth.endpoint("jwks")
            )
        metadata = ProtectedResource(
            authorization_servers=(oauth.issuer,), scopes_supported=("mcp",)
        )
        url = await start(HttpOptions(auth=verifier, resource_metadata=metadata))
        verifier.audience = url
        machine = oauth.register_client(
            token_endpoint_auth_method="client_secret_post", grant_types=["client_credentials"]
        )
        say(f"bench token: {oauth.mint(audience=url, scopes=['mcp'], expires_in=86400)}")
        say(f"bench client: {machine.client_id} {machine.client_secret} {oauth.issuer}")
        say(f"serving MCP on {url}")


async def _run_oauth(algorithm: str, *, task_status: trio.TaskStatus[Any]) -> None:
    async with serve_oauth(algorithm=algorithm, access_token_lifetime=86400) as oauth:
        task_status.started(oauth)
        await trio.sleep_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--auth", choices=MODES, default="none")
    trio.run(main, parser.parse_args().auth)
