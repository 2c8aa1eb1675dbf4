"""`trio-mcp run ... --transport http --auth-issuer ... --auth-audience ...` end to end.

The server is the real CLI in a subprocess; the authorization server is the test one
(tests/oauth_server.py) on loopback in this process, so the subprocess discovers its JWKS
from its RFC 8414 metadata while the test awaits.
"""

from __future__ import annotations

import argparse

import httpx
import pytest
import trio

from tests.http_helpers import POST_HEADERS
from tests.oauth_server import serve_oauth
from tests.processes import TIMEOUT, cli_async, serving
from trio_mcp.cli._serve import audience_mismatch

AUDIENCE = "http://mcp.test/mcp"
#: The demo server over Streamable HTTP on a free port (what `run` takes, past the word).
HTTP_DEMO = ("demo_tools", "--transport", "http", "--port", "0")


async def test_run_protects_the_server_with_a_jwt_verifier() -> None:
    async with serve_oauth() as oauth:
        auth = ["--auth-issuer", oauth.issuer, "--auth-audience", AUDIENCE, "--auth-scopes", "mcp"]
        async with serving(*HTTP_DEMO, *auth) as served:
            url = await served.url()
            base = url.removesuffix("/mcp")
            with trio.fail_after(TIMEOUT):
                ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
                headers = {**POST_HEADERS, "mcp-protocol-version": "2025-11-25"}
                async with httpx.AsyncClient() as http:
                    anonymous = await http.post(url, json=ping, headers=headers)
                    good = oauth.mint(audience=AUDIENCE, scopes=["mcp"])
                    bearer = {**headers, "authorization": f"Bearer {good}"}
                    accepted = await http.post(url, json=ping, headers=bearer)
                    other = oauth.mint(audience="http://elsewhere.test/mcp", scopes=["mcp"])
                    bearer = {**headers, "authorization": f"Bearer {other}"}
                    foreign = await http.post(url, json=ping, headers=bearer)
                    doc = await http.get(base + "/.well-known/oauth-protected-resource/mcp")
            await served.stop()
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == (
        'Bearer scope="mcp", resource_metadata="http://mcp.test/.well-known/'
        'oauth-protected-resource/mcp"'
    )
    # Past the token: a stateful server wants `initialize` first.
    assert accepted.status_code == 400, accepted.text
    assert "session" in accepted.json()["error"]["message"].lower()
    assert foreign.status_code == 401
    assert doc.json() == {
        "resource": AUDIENCE,
        "authorization_servers": [oauth.issuer],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp"],
    }
    # The JWKS URL came from the issuer's metadata, fetched once; the key set once too.
    assert oauth.requests["metadata"] == 1
    assert oauth.requests["jwks"] == 1


async def test_run_needs_both_issuer_and_audience() -> None:
    done = await cli_async("run", *HTTP_DEMO, "--auth-issuer", "http://as.test")
    assert done.returncode == 2
    # A usage error of `run`: its own usage line, not the top-level one.
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith("usage: trio-mcp run [-h] ")
    assert lines[-1] == "trio-mcp run: error: --auth-issuer and --auth-audience go together"


async def said(*args: str) -> str:
    """What `trio-mcp run demo_tools --transport http --port 0 ARGS` says up to serving."""
    async with serving(*HTTP_DEMO, *args) as served:
        await served.url()
        await served.stop()
    return served.stderr


@pytest.mark.slow
async def test_run_warns_of_an_audience_for_another_host() -> None:
    async with serve_oauth() as oauth:
        auth = ("--auth-issuer", oauth.issuer)
        other = await said(
            "--host", "127.0.0.1", *auth, "--auth-audience", "http://localhost:8202/mcp"
        )
        warned = [line for line in other.splitlines() if "--auth-audience" in line]
        assert len(warned) == 1
        assert warned[0].endswith(
            "WARNING --auth-audience http://localhost:8202/mcp names localhost:8202, but this "
            "server answers for 127.0.0.1 (its bind address): a client connecting to it will "
            "refuse a resource named for another host; give the URL clients connect to (or "
            "--allow-host localhost:8202)"
        )
        allowed = await said(
            *auth, "--auth-audience", "http://mcp.test/mcp", "--allow-host", "mcp.test"
        )
        assert "--auth-audience" not in allowed


@pytest.mark.parametrize(
    ("host", "port", "allow", "audience", "fine"),
    [
        ("127.0.0.1", 8202, [], "http://127.0.0.1:8202/mcp", True),
        ("127.0.0.1", 8202, [], "http://127.0.0.1:8203/mcp", False),
        ("127.0.0.1", 8202, [], "http://localhost:8202/mcp", False),
        ("127.0.0.1", 80, [], "http://127.0.0.1/mcp", True),
        ("0.0.0.0", 8202, ["mcp.example.com"], "https://mcp.example.com/mcp", True),
        ("0.0.0.0", 8202, ["mcp.example.com:8443"], "https://mcp.example.com/mcp", False),
        ("0.0.0.0", 8202, ["mcp.example.com:443"], "https://MCP.example.com/mcp", True),
        ("0.0.0.0", 8202, ["*"], "https://anywhere.example/mcp", True),
        ("::1", 8202, [], "http://[::1]:8202/mcp", True),
    ],
)
def test_audience_mismatch(
    host: str, port: int, allow: list[str], audience: str, fine: bool
) -> None:
    args = argparse.Namespace(host=host, port=port, allow_host=allow, auth_audience=audience)
    assert (audience_mismatch(args) is None) is fine
