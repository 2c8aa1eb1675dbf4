"""`trio-mcp run ... --transport http --auth-issuer ... --auth-audience ...` end to end.

The server is the real CLI in a subprocess; the authorization server is the test one
(tests/oauth_server.py) on loopback in this process, so the subprocess discovers its JWKS
from its RFC 8414 metadata while the test awaits.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import httpx
import pytest
import trio

from tests.http_helpers import POST_HEADERS
from tests.oauth_server import serve_oauth
from tests.stdio_peer import ROOT
from tests.timing import scaled
from trio_mcp.cli._serve import audience_mismatch

TIMEOUT = scaled(60)
AUDIENCE = "http://mcp.test/mcp"


async def test_run_protects_the_server_with_a_jwt_verifier() -> None:
    async with serve_oauth() as oauth:
        command = [sys.executable, "-m", "trio_mcp", "run", "demo_tools", "--transport", "http"]
        args = ["--port", "0", "--auth-issuer", oauth.issuer, "--auth-audience", AUDIENCE]
        process = await trio.lowlevel.open_process(
            [*command, *args, "--auth-scopes", "mcp"], stderr=subprocess.PIPE, cwd=ROOT
        )
        assert process.stderr is not None
        try:
            with trio.fail_after(TIMEOUT):
                printed = b""
                while b"/mcp\n" not in printed:
                    printed += await process.stderr.receive_some()
                url = printed.decode().split("serving MCP on ")[1].split()[0]
                base = url.removesuffix("/mcp")
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
        finally:
            process.terminate()
            await process.wait()
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
    command = [sys.executable, "-m", "trio_mcp", "run", "demo_tools", "--transport", "http"]
    done = await trio.run_process(
        [*command, "--auth-issuer", "http://as.test"], capture_stderr=True, check=False, cwd=ROOT
    )
    assert done.returncode == 2
    # A usage error of `run`: its own usage line, not the top-level one.
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith("usage: trio-mcp run [-h] ")
    assert lines[-1] == "trio-mcp run: error: --auth-issuer and --auth-audience go together"


async def serving(*args: str) -> str:
    """What `trio-mcp run demo_tools --transport http --port 0 ARGS` says up to serving."""
    command = [sys.executable, "-m", "trio_mcp", "run", "demo_tools", "--transport", "http"]
    process = await trio.lowlevel.open_process(
        [*command, "--port", "0", *args], stderr=subprocess.PIPE, cwd=ROOT
    )
    assert process.stderr is not None
    try:
        with trio.fail_after(TIMEOUT):
            printed = b""
            while b"serving MCP on " not in printed or not printed.endswith(b"\n"):
                chunk = await process.stderr.receive_some()
                assert chunk, printed
                printed += chunk
    finally:
        process.terminate()
        await process.wait()
    return printed.decode()


async def test_run_warns_of_an_audience_for_another_host() -> None:
    async with serve_oauth() as oauth:
        auth = ("--auth-issuer", oauth.issuer)
        other = await serving(
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
        allowed = await serving(
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
