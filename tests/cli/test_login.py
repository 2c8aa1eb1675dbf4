"""The command line signs in to protected servers: `trio-mcp tools|call|login|logout URL`.

Everything is real: the protected MCP server (trio-mcp's HTTP server with a `JwtVerifier`) and
the authorization server (tests/oauth_server.py) serve on loopback in this process; the command
line runs as a subprocess; its "browser" is the command the `BROWSER` environment variable
names (Python's `webbrowser` runs it), here tests/fixtures/browser.py, which records that it
ran and follows the authorization server's redirect to the command line's loopback listener.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

import demo_tools
from tests.http_helpers import serve
from tests.oauth_server import OAuthServer, serve_oauth
from tests.stdio_peer import ROOT
from tests.timing import scaled
from trio_mcp import JwtVerifier, ProtectedResource, Server

pytestmark = pytest.mark.slow  # every test here starts processes: seconds each

TIMEOUT = scaled(60)
BROWSER = ROOT / "tests" / "fixtures" / "browser.py"


@dataclass
class Setup:
    """A protected server, its authorization server, and the command line's surroundings."""

    oauth: OAuthServer
    url: str
    home: Path

    @property
    def token_file(self) -> Path:
        return self.home / "config" / "trio-mcp" / "tokens.json"

    @property
    def browser_log(self) -> Path:
        return self.home / "browser.log"

    def opened(self) -> int:
        """How many times the browser was opened."""
        if not self.browser_log.exists():
            return 0
        return len(self.browser_log.read_text().splitlines())

    def env(self, **extra: str) -> dict[str, str]:
        browser = self.home / "browser"
        browser.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{BROWSER}" "$@"\n')
        browser.chmod(0o755)
        env = {
            **os.environ,
            "BROWSER": str(browser),
            "TEST_BROWSER_LOG": str(self.browser_log),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            **extra,
        }
        env.pop("TRIO_MCP_TOKEN_FILE", None)
        env.pop("TRIO_MCP_CLIENT_SECRET", None)
        return {**env, **extra}

    async def cli(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        with trio.fail_after(TIMEOUT):
            done = await trio.run_process(
                [sys.executable, "-m", "trio_mcp", *args],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                cwd=ROOT,
                env=self.env(**env),
            )
        return subprocess.CompletedProcess(
            done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
        )

    def stored(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.token_file.read_text())
        return document

    def secrets(self) -> list[str]:
        """Every token the token file holds (none may ever be printed)."""
        if not self.token_file.exists():
            return []
        found = []
        for entry in self.stored()["tokens"].values():
            found += [entry["access_token"], entry.get("refresh_token", "")]
        return [secret for secret in found if secret]


def notes_server() -> Server:
    """The demo tools and one that needs the scope notes:write (a step-up)."""
    server = demo_tools.build_server()

    @server.tool(scopes=["notes:write"])
    def write_note(text: str) -> str:
        """Save a note."""
        return "saved " + text

    return server


@asynccontextmanager
async def protected(
    tmp_path: Path, *, leeway: float = 30.0, server: Server | None = None, **oauth_knobs: Any
) -> AsyncIterator[Setup]:
    """The demo tools (or `server`) behind a `JwtVerifier` of a live test authorization server."""
    async with serve_oauth(**oauth_knobs) as oauth:
        verifier = JwtVerifier(
            issuer=oauth.issuer,
            audience="http://unset.invalid/mcp",  # the served URL, once the port is bound
            jwks_url=oauth.endpoint("jwks"),
            leeway=leeway,
        )
        metadata = ProtectedResource(
            authorization_servers=(oauth.issuer,), scopes_supported=("mcp",)
        )
        async with serve(server, auth=verifier, resource_metadata=metadata) as served:
            verifier.audience = served.url
            yield Setup(oauth, served.url, tmp_path)


def no_secret_shown(setup: Setup, *done: subprocess.CompletedProcess[str]) -> bool:
    shown = "".join(d.stdout + d.stderr for d in done)
    return all(secret not in shown for secret in setup.secrets())


async def printed_sign_in(process: trio.Process) -> tuple[str, str]:
    """What the command printed on stderr up to its sign-in URL, and that URL."""
    assert process.stderr is not None
    printed = b""
    while b"\n  http" not in printed or not printed.endswith(b"\n"):
        chunk = await process.stderr.receive_some()
        assert chunk, printed
        printed += chunk
    text = printed.decode()
    return text, text.split("\n  ")[1].split("\n")[0]


async def rest_of_output(process: trio.Process) -> str:
    """The command's stdout to its end, once it exited 0."""
    assert process.stdout is not None
    output = b""
    while chunk := await process.stdout.receive_some():
        output += chunk
    assert await process.wait() == 0
    return output.decode()


async def test_tools_signs_in_in_the_browser_then_a_call_uses_the_kept_tokens(
    tmp_path: Path,
) -> None:
    async with protected(tmp_path) as setup:
        listed = await setup.cli("tools", setup.url)
        assert listed.returncode == 0, listed.stderr
        assert "calculator.add  Add two numbers" in listed.stdout
        assert "trio-mcp: signing in: your browser should open" in listed.stderr
        assert f"  {setup.oauth.endpoint('authorize')}?" in listed.stderr
        assert setup.opened() == 1
        assert setup.oauth.requests["authorize"] == 1
        assert stat.S_IMODE(setup.token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(setup.token_file.parent.stat().st_mode) == 0o700
        kept = setup.stored()
        assert set(kept["tokens"]) == {setup.url}
        tokens = kept["tokens"][setup.url]
        assert tokens["issuer"] == setup.oauth.issuer
        assert tokens["scope"] == "mcp"
        assert tokens["access_token"].count(".") == 2  # the authorization server's JWT
        assert tokens["refresh_token"]
        assert set(kept["clients"]) == {setup.oauth.issuer}  # registered once, kept

        called = await setup.cli("call", setup.url, "calculator.add", "a=5", "b=3")
        assert (called.returncode, called.stdout, called.stderr) == (0, "8\n", "")
        # No new sign-in, no new registration: the kept tokens were used as they were.
        assert setup.opened() == 1
        assert setup.oauth.requests["authorize"] == 1
        assert setup.oauth.requests["register"] == 1
        assert setup.oauth.requests["token"] == 1
        assert no_secret_shown(setup, listed, called)


async def test_an_expired_access_token_is_refreshed_without_the_browser(tmp_path: Path) -> None:
    async with protected(tmp_path, leeway=0, access_token_lifetime=2) as setup:
        first = await setup.cli("tools", setup.url)
        assert first.returncode == 0, first.stderr
        expires_at = setup.stored()["tokens"][setup.url]["expires_at"]
        await trio.sleep(max(0.0, expires_at - time.time()) + 1)  # past it: the server refuses
        refreshes = sum(
            seen.params.get("grant_type") == "refresh_token" for seen in setup.oauth.log
        )
        called = await setup.cli("call", setup.url, "calculator.add", "a=1", "b=2")
        assert (called.returncode, called.stdout) == (0, "3\n"), called.stderr
        assert setup.opened() == 1
        assert setup.oauth.requests["authorize"] == 1
        after = sum(seen.params.get("grant_type") == "refresh_token" for seen in setup.oauth.log)
        assert after > refreshes
        assert setup.stored()["tokens"][setup.url]["expires_at"] > expires_at
        assert no_secret_shown(setup, first, called)


async def test_login_says_who_signed_in_and_signs_in_anew(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        done = await setup.cli("login", setup.url)
        assert done.returncode == 0, done.stderr
        assert done.stdout == ""
        assert done.stderr.splitlines()[-1] == (
            f"trio-mcp login: signed in to {setup.url} (trio-mcp-demo) as user-1 with scopes "
            f"mcp from {setup.oauth.issuer}; tokens kept in {setup.token_file}"
        )
        before = setup.stored()["tokens"][setup.url]["access_token"]
        again = await setup.cli("login", setup.url)
        assert again.returncode == 0, again.stderr
        assert setup.opened() == 2  # login always signs in, even with tokens kept
        assert setup.stored()["tokens"][setup.url]["access_token"] != before
        assert setup.oauth.requests["register"] == 1  # the registration is reused
        assert no_secret_shown(setup, done, again)


async def test_logout_forgets_the_tokens(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        assert (await setup.cli("login", setup.url)).returncode == 0
        out = await setup.cli("logout", setup.url)
        assert (out.returncode, out.stderr) == (0, f"trio-mcp logout: signed out of {setup.url}\n")
        assert setup.stored()["tokens"] == {}
        assert set(setup.stored()["clients"]) == {setup.oauth.issuer}
        twice = await setup.cli("logout", setup.url)
        assert twice.stderr == f"trio-mcp logout: no sign-in was kept for {setup.url}\n"
        # Signed out: the next command signs in again.
        assert (await setup.cli("tools", setup.url)).returncode == 0
        assert setup.opened() == 2
        everything = await setup.cli("logout", "--all")
        assert everything.stderr == f"trio-mcp logout: removed {setup.token_file}\n"
        assert not setup.token_file.exists()
        neither = await setup.cli("logout")
        assert neither.returncode == 2
        assert neither.stderr == "trio-mcp logout: give the server's URL (or --all): " \
            "trio-mcp logout URL\n"  # fmt: skip


async def test_no_browser_prints_the_url_to_open(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        command = [sys.executable, "-m", "trio_mcp", "tools", setup.url, "--no-browser"]
        process = await trio.lowlevel.open_process(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=setup.env()
        )
        assert process.stdout is not None
        assert process.stderr is not None
        with trio.fail_after(TIMEOUT):
            text, url = await printed_sign_in(process)
            assert text.startswith("trio-mcp: to sign in, open this URL in a browser:\n  ")
            async with httpx.AsyncClient(follow_redirects=True) as http:  # the user, by hand
                page = await http.get(url)
            assert page.status_code == 200
            assert "back with the application" in page.text
            output = await rest_of_output(process)
        assert "calculator.add" in output
        assert setup.opened() == 0
        assert set(setup.stored()["tokens"]) == {setup.url}


async def test_a_sign_in_that_never_comes_back_times_out(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        done = await setup.cli(
            "tools", setup.url, "--login-timeout", "0.5", TEST_BROWSER_MODE="ignore"
        )
        assert setup.opened() == 1
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr.splitlines()[-1] == (
            "trio-mcp: no sign-in came back within 0.5 s (--login-timeout): the browser never "
            "reached the redirect; if the authorization server showed an error (an unknown "
            f"client, say), `trio-mcp logout {setup.url} --forget-client` forgets the stored "
            "registration so the next sign-in registers again"
        )
        assert "Traceback" not in done.stderr
        assert not setup.token_file.exists() or setup.stored()["tokens"] == {}


async def test_a_denied_sign_in_is_a_clear_error(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        setup.oauth.deny_next_authorization()
        done = await setup.cli("call", setup.url, "calculator.add", "a=1", "b=2")
        assert setup.opened() == 1
        assert done.returncode == 2
        assert done.stderr.splitlines()[-1] == (
            "trio-mcp: authorization refused (access_denied): denied by the test"
        )
        assert "Traceback" not in done.stderr
        assert setup.stored()["tokens"] == {}


async def test_client_credentials_sign_a_machine_in_without_a_browser(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        machine = setup.oauth.register_client(
            token_endpoint_auth_method="client_secret_basic", grant_types=("client_credentials",)
        )
        assert machine.client_secret is not None
        args = ("--client-credentials", "--client-id", machine.client_id)
        done = await setup.cli(
            "call", setup.url, "calculator.add", "a=2", "b=2", *args,
            TRIO_MCP_CLIENT_SECRET=machine.client_secret,
        )  # fmt: skip
        assert (done.returncode, done.stdout, done.stderr) == (0, "4\n", "")
        assert setup.opened() == 0
        assert setup.oauth.requests["authorize"] == 0
        [grant] = [seen for seen in setup.oauth.log if seen.endpoint == "token"]
        assert grant.params["grant_type"] == "client_credentials"
        assert set(setup.stored()["tokens"]) == {setup.url}
        assert machine.client_secret not in setup.token_file.read_text()  # not ours to keep
        login = await setup.cli("login", setup.url, *args, "--client-secret", "not-it-4711")
        assert login.returncode == 2
        assert "invalid_client" in login.stderr.splitlines()[-1]
        assert "not-it-4711" not in login.stderr
        missing = await setup.cli("tools", setup.url, "--client-credentials")
        assert missing.returncode == 2
        assert missing.stderr == (
            "trio-mcp: --client-credentials needs --client-id and --client-secret "
            "(or TRIO_MCP_CLIENT_SECRET)\n"
        )


async def test_an_authorization_header_turns_oauth_off(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        token = setup.oauth.mint(audience=setup.url, scopes=["mcp"])
        done = await setup.cli("tools", setup.url, "--header", f"Authorization: Bearer {token}")
        assert done.returncode == 0, done.stderr
        assert "calculator.add" in done.stdout
        refused = await setup.cli("tools", setup.url, "--header", "authorization: Bearer nope")
        assert refused.returncode == 2
        assert refused.stderr.splitlines()[-1] == (
            f"trio-mcp: HTTP 401 from {setup.url}: Invalid bearer token (The access token is "
            "not a well-formed JWT)"
        )
        assert setup.opened() == 0
        assert setup.oauth.requests["authorize"] == 0
        assert not setup.token_file.exists()


async def test_a_server_that_asks_no_sign_in_and_stdio_servers_use_no_oauth(
    tmp_path: Path,
) -> None:
    async with protected(tmp_path) as setup, serve() as open_server:
        login = await setup.cli("login", open_server.url)
        assert (login.returncode, login.stderr) == (
            0,
            f"trio-mcp login: {open_server.url} (trio-mcp-demo) asks no one to sign in\n",
        )
        stdio = await setup.cli("call", "demo_tools", "calculator.add", "a=5", "b=3")
        assert (stdio.returncode, stdio.stdout, stdio.stderr) == (0, "8\n", "")
        assert setup.opened() == 0
        assert not setup.token_file.exists()


async def test_token_file_option_and_environment_variable(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        named = tmp_path / "named.json"
        by_option = await setup.cli("login", setup.url, "--token-file", str(named))
        assert by_option.returncode == 0, by_option.stderr
        assert by_option.stderr.endswith(f"; tokens kept in {named}\n")
        assert set(json.loads(named.read_text())["tokens"]) == {setup.url}
        called = await setup.cli(
            "call", setup.url, "calculator.add", "a=5", "b=3", TRIO_MCP_TOKEN_FILE=str(named)
        )
        assert (called.returncode, called.stdout) == (0, "8\n"), called.stderr
        assert setup.opened() == 1
        assert not setup.token_file.exists()


async def test_a_token_file_in_a_bad_state_is_one_clear_line(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        assert (await setup.cli("login", setup.url)).returncode == 0
        setup.token_file.chmod(0o644)
        widened = await setup.cli("call", setup.url, "calculator.add", "a=1", "b=1")
        assert (widened.returncode, widened.stdout) == (0, "2\n")
        assert widened.stderr == (
            f"trio-mcp: the token file {setup.token_file} was open to others (mode 0644); it is "
            "now 0600. If someone else could have read it, sign out and in again (trio-mcp "
            "logout --all)\n"
        )
        assert stat.S_IMODE(setup.token_file.stat().st_mode) == 0o600
        setup.token_file.write_text('{"tokens": {"x": {"access_token": "SECRET-1"')
        for args in (("tools", setup.url), ("logout", setup.url)):
            broken = await setup.cli(*args)
            assert (broken.returncode, broken.stdout) == (2, "")
            assert broken.stderr == (
                f"trio-mcp: the token file {setup.token_file} is not usable: it is not JSON "
                "(remove it, or `trio-mcp logout --all`, to sign in afresh)\n"
            )
        assert setup.opened() == 1
        not_a_url = await setup.cli("login", "demo_tools")
        assert (not_a_url.returncode, not_a_url.stderr) == (
            2,
            "trio-mcp login: login takes a server's http(s) URL, not 'demo_tools'\n",
        )


async def test_a_failed_login_keeps_the_sign_in_it_would_replace(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        assert (await setup.cli("login", setup.url)).returncode == 0
        kept = setup.stored()["tokens"][setup.url]
        setup.oauth.deny_next_authorization()
        refused = await setup.cli("login", setup.url)
        assert refused.returncode == 2
        assert refused.stderr.splitlines()[-1] == (
            "trio-mcp: authorization refused (access_denied): denied by the test"
        )
        assert setup.stored()["tokens"][setup.url] == kept
        called = await setup.cli("call", setup.url, "calculator.add", "a=2", "b=5")
        assert (called.returncode, called.stdout) == (0, "7\n"), called.stderr
        assert setup.opened() == 2


async def test_a_scope_the_server_never_grants_is_one_line_after_one_step_up(
    tmp_path: Path,
) -> None:
    async with protected(tmp_path, server=notes_server(), withheld_scopes=["notes:write"]) as setup:
        done = await setup.cli("call", setup.url, "write_note", "text=x")
        assert (done.returncode, done.stdout) == (2, "")
        # The step-up says why the user signs in again; its grant left notes:write out, so
        # the command stops there rather than opening the browser again for the same answer.
        assert (
            "trio-mcp: this request needs scope(s) notes:write: signing in again: your browser "
            "should open; if it does not, open this URL:\n"
        ) in done.stderr
        assert done.stderr.splitlines()[-1] == (
            "trio-mcp: the authorization server did not grant scope(s) notes:write, which this "
            "request needs (the server said: This request needs scope(s): notes:write)"
        )
        assert "Traceback" not in done.stderr
        assert setup.opened() == 2
        assert setup.oauth.requests["authorize"] == 2
        assert no_secret_shown(setup, done)


async def test_a_step_up_that_is_granted_says_why_and_succeeds(tmp_path: Path) -> None:
    async with protected(tmp_path, server=notes_server()) as setup:
        done = await setup.cli("call", setup.url, "write_note", "text=x")
        assert (done.returncode, done.stdout) == (0, "saved x\n"), done.stderr
        lines = [line for line in done.stderr.splitlines() if not line.startswith("  http")]
        assert lines == [
            "trio-mcp: signing in: your browser should open; if it does not, open this URL:",
            "trio-mcp: this request needs scope(s) notes:write: signing in again: your browser "
            "should open; if it does not, open this URL:",
        ]
        assert setup.stored()["tokens"][setup.url]["scope"] == "mcp notes:write"


async def test_a_registration_the_server_forgot_is_forgotten_by_logout(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        named = tmp_path / "named.json"
        file = ("--token-file", str(named))
        assert (await setup.cli("login", setup.url, *file)).returncode == 0
        assert (await setup.cli("logout", setup.url, *file)).returncode == 0
        setup.oauth.clients.clear()  # a development authorization server restarted
        lost = await setup.cli("tools", setup.url, *file, "--login-timeout", "0.5")
        assert lost.returncode == 2
        forget = f"trio-mcp logout {setup.url} --forget-client --token-file {named}"
        assert lost.stderr.splitlines()[-1].endswith(
            "the browser never reached the redirect; if the authorization server showed an "
            f"error (an unknown client, say), `{forget}` forgets the stored registration so the "
            "next sign-in registers again"
        )
        # The command the message suggests, as it is: the next sign-in registers anew.
        forgot = await setup.cli(*forget.split()[1:])
        assert (forgot.returncode, forgot.stderr) == (
            0,
            f"trio-mcp logout: no sign-in was kept for {setup.url}; forgot the client "
            f"registration at {setup.oauth.issuer}: the next sign-in registers again\n",
        )
        assert json.loads(named.read_text())["clients"] == {}
        listed = await setup.cli("tools", setup.url, *file)
        assert listed.returncode == 0, listed.stderr
        assert setup.oauth.requests["register"] == 2
        # With tokens kept, their issuer names the registration; twice, nothing is left.
        again = await setup.cli("logout", setup.url, "--forget-client", *file)
        assert again.stderr == (
            f"trio-mcp logout: signed out of {setup.url}; forgot the client registration at "
            f"{setup.oauth.issuer}: the next sign-in registers again\n"
        )
        twice = await setup.cli("logout", setup.url, "--forget-client", *file)
        assert twice.stderr == (
            f"trio-mcp logout: no sign-in was kept for {setup.url}; no client registration "
            f"was kept for {setup.oauth.issuer}\n"
        )
        assert not setup.token_file.exists()  # the default file was never touched


async def test_token_file_messages_name_the_file_in_use(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        named = tmp_path / "named.json"
        chosen = {"TRIO_MCP_TOKEN_FILE": str(named)}
        assert (await setup.cli("login", setup.url, **chosen)).returncode == 0
        named.chmod(0o644)
        widened = await setup.cli("call", setup.url, "calculator.add", "a=1", "b=1", **chosen)
        assert (widened.returncode, widened.stdout) == (0, "2\n")
        assert widened.stderr == (
            f"trio-mcp: the token file {named} was open to others (mode 0644); it is now 0600. "
            "If someone else could have read it, sign out and in again (trio-mcp logout --all "
            f"--token-file {named})\n"
        )
        named.write_text("[]")
        for env in (chosen, {}):
            flags = () if env else ("--token-file", str(named))
            broken = await setup.cli("tools", setup.url, *flags, **env)
            assert (broken.returncode, broken.stdout) == (2, "")
            assert broken.stderr == (
                f"trio-mcp: the token file {named} is not usable: it is not a JSON object "
                f"(remove it, or `trio-mcp logout --all --token-file {named}`, to sign in "
                "afresh)\n"
            )
        assert not setup.token_file.exists()


def no_browser_env(setup: Setup) -> dict[str, str]:
    """The environment of a machine with no browser: none named, no desktop, none on PATH."""
    env = setup.env()
    for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(name, None)
    empty = setup.home / "empty-bin"
    empty.mkdir(exist_ok=True)
    env["PATH"] = str(empty)
    return env


async def test_no_browser_and_no_terminal_fails_at_once(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        with trio.fail_after(TIMEOUT):
            done = await trio.run_process(
                [sys.executable, "-m", "trio_mcp", "tools", setup.url],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                cwd=ROOT,
                env=no_browser_env(setup),
            )
        assert done.returncode == 2
        assert done.stdout == b""
        assert done.stderr.decode().splitlines() == [
            "trio-mcp: no browser found, and stdin is not a terminal: no way to sign in here; "
            "use --client-credentials (a machine client), or sign in with `trio-mcp login URL` "
            "on a machine with a browser and use its token file"
        ]
        assert setup.oauth.requests["authorize"] == 0


async def test_no_browser_on_a_terminal_prints_the_url_to_open(tmp_path: Path) -> None:
    async with protected(tmp_path) as setup:
        terminal, stdin = os.openpty()
        try:
            process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "trio_mcp", "tools", setup.url],
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=ROOT,
                env=no_browser_env(setup),
            )
            assert process.stdout is not None
            assert process.stderr is not None
            with trio.fail_after(TIMEOUT):
                text, url = await printed_sign_in(process)
                assert text.startswith("trio-mcp: no browser found: open this URL to sign in:\n  ")
                async with httpx.AsyncClient(follow_redirects=True) as http:  # on a phone, say
                    assert (await http.get(url)).status_code == 200
                output = await rest_of_output(process)
        finally:
            os.close(stdin)
            os.close(terminal)
        assert "calculator.add" in output
        assert setup.opened() == 0
