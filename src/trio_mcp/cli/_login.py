"""Signing the command line in to protected MCP servers: OAuth with a token file.

What `trio-mcp login URL` (sign in now, say as whom) and `trio-mcp logout URL` (forget the
tokens, and with --forget-client the client registration) stand on, and what every client
command given a URL (`tools`, `call`, `read`, ...) uses whenever the server asks for OAuth (a
401 with the MCP challenge). The commands themselves are client commands (`_client`).

Tokens live in a `FileTokenStorage`: `--token-file`, else `$TRIO_MCP_TOKEN_FILE`, else
`$XDG_CONFIG_HOME/trio-mcp/tokens.json` (`~/.config/trio-mcp/tokens.json`). Stored tokens are
used and, once expired, refreshed without the user; only when there are none, or the refresh is
refused, does the user sign in again: the authorization code flow of a native application (RFC
8252), a listener on 127.0.0.1 at a port the system picks receiving the redirect, the browser
opened with Python's `webbrowser` (so `BROWSER` chooses it) and the authorization URL printed on
stderr too, for a machine without a browser (`--no-browser` only prints it). A step-up sign-in
(the server asks for more scopes) says which scopes it is for.

`--client-credentials` (with `--client-id` and `--client-secret` or `$TRIO_MCP_CLIENT_SECRET`)
signs a machine in with no browser and no listener. A command a message suggests is the whole
command for the token file in use.

Rule 1: signing in never hangs: the browser is opened in a thread of its own, never awaited (a
        browser command may only return when the browser closes); the wait for the redirect
        is bounded (`--login-timeout`); where no browser is found and there is no terminal
        either (stdin is not a TTY), no one could open the URL, and the command fails at once.
Rule 2: an explicit `--header "Authorization: ..."` is the user's choice of credentials: no
        OAuth then. Commands that start a stdio server never use OAuth.
Rule 3: no token or secret is ever printed: messages name the server, the subject and the
        scopes, never a credential.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import logging
import os
import shlex
import sys
import webbrowser
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import trio

from .._exceptions import AuthorizationError
from ..oauth.loopback import LoopbackCallback, open_browser, open_loopback_callback
from ..oauth.rules import (
    AuthorizationResponse,
    ClientRegistration,
    OAuth,
    OAuthTokens,
    TokenStorage,
    protected_resource_metadata_urls,
    step_up_scopes,
)
from ..oauth.storage import FileTokenStorage

__all__ = [
    "FreshSignIn",
    "cli_oauth",
    "default_token_file",
    "describe_sign_in",
    "find_issuer",
    "token_command",
    "token_storage",
]

#: The name the command line registers itself under at an authorization server.
CLIENT_NAME: Final = "trio-mcp command line"


def default_token_file() -> Path:
    """Where the command line keeps its tokens, unless `--token-file` says."""
    named = os.environ.get("TRIO_MCP_TOKEN_FILE")
    if named:
        return Path(named).expanduser()
    return _config_token_file()


def token_command(words: str, path: Path) -> str:
    """`trio-mcp WORDS` for the token file `path`: `--token-file PATH` added where needed.

    Only the configuration directory's file goes without: `$TRIO_MCP_TOKEN_FILE` may not be
    set where the command is run.
    """
    if path == _config_token_file():
        return f"trio-mcp {words}"
    return f"trio-mcp {words} --token-file {shlex.quote(str(path))}"


def _config_token_file() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME")
    # The XDG spec: a relative path in the variable is invalid and is ignored.
    base = Path(config) if config and os.path.isabs(config) else Path.home() / ".config"
    return base / "trio-mcp" / "tokens.json"


def token_file(args: argparse.Namespace) -> Path:
    """The token file a command uses."""
    named = getattr(args, "token_file", None)
    return Path(named).expanduser() if named else default_token_file()


def token_storage(args: argparse.Namespace) -> FileTokenStorage:
    """The token file the command line uses; its warnings reach stderr."""
    logging.getLogger("trio_mcp.client.token_file").setLevel(logging.WARNING)
    path = token_file(args)
    return FileTokenStorage(path, sign_out_command=token_command("logout --all", path))


async def find_issuer(url: str, storage: TokenStorage) -> str | None:
    """The authorization server of the MCP server at `url`, or None when none can be found.

    The issuer of the tokens kept for it, else the first authorization server its protected
    resource metadata (RFC 9728) names.
    """
    tokens = await storage.get_tokens(url)
    if tokens is not None and tokens.issuer:
        return tokens.issuer
    import httpx  # noqa: PLC0415 - only a URL's command gets here, with the http extra

    async with httpx.AsyncClient(timeout=30) as http:
        for address in protected_resource_metadata_urls(url):
            try:
                response = await http.get(address)
                document = response.json() if response.status_code == 200 else None
            except (httpx.HTTPError, httpx.InvalidURL, ValueError):
                continue
            servers = document.get("authorization_servers") if isinstance(document, dict) else None
            if isinstance(servers, list) and servers and isinstance(servers[0], str):
                return servers[0]
    return None


def oauth_wanted(args: argparse.Namespace) -> bool:
    """Whether a command's URL gets OAuth: not when --header gives an Authorization (Rule 2)."""
    for header in getattr(args, "header", []):
        name, _, _ = header.partition(":")
        if name.strip().lower() == "authorization":
            return False
    return True


@asynccontextmanager
async def cli_oauth(
    args: argparse.Namespace, storage: TokenStorage | None = None, *, url: str | None = None
) -> AsyncIterator[OAuth | None]:
    """The `OAuth` of a command given a URL, or None (Rule 2); a listener while it lasts.

    `url` (the server's) lets a sign-in that never came back suggest the command that forgets
    a registration the authorization server may no longer know.

    Raises:
        ValueError: --client-credentials without a client id and secret (a usage error).
    """
    if not oauth_wanted(args):
        yield None
        return
    storage = storage or token_storage(args)
    if args.client_credentials:
        if args.client_id is None or args.client_secret is None:
            raise ValueError(
                "--client-credentials needs --client-id and --client-secret "
                "(or TRIO_MCP_CLIENT_SECRET)"
            )
        yield OAuth(
            grant="client_credentials",
            client_id=args.client_id,
            client_secret=args.client_secret,
            scope=args.scope,
            storage=storage,
            client_name=CLIENT_NAME,
        )
        return
    hint = None
    if url is not None and args.client_id is None:
        forget = token_command(f"logout {shlex.quote(url)} --forget-client", token_file(args))
        hint = (
            "if the authorization server showed an error (an unknown client, say), "
            f"`{forget}` forgets the stored registration so the next sign-in registers again"
        )
    async with open_loopback_callback() as loopback:
        yield OAuth(
            redirect_uri=loopback.redirect_uri,
            redirect_handler=_Browser(args.no_browser).open,
            callback_handler=_Callback(loopback, args.login_timeout, hint).wait,
            client_id=args.client_id,
            client_secret=args.client_secret,
            scope=args.scope,
            storage=storage,
            client_name=CLIENT_NAME,
        )


class _Browser:
    """The redirect handler: the URL on stderr, and the browser opened unless told not to."""

    def __init__(self, no_browser: bool) -> None:
        self._no_browser = no_browser

    async def open(self, authorization_url: str) -> None:
        needed = step_up_scopes.get()
        why = f"this request needs scope(s) {needed}: " if needed else ""
        again = " again" if needed else ""
        if self._no_browser:
            _say(f"{why}to sign in{again}, open this URL in a browser:", authorization_url)
            return
        if not await trio.to_thread.run_sync(_has_browser):
            if not _on_a_terminal():
                raise AuthorizationError(
                    "no browser found, and stdin is not a terminal: no way to sign in here; "
                    "use --client-credentials (a machine client), or sign in with `trio-mcp "
                    "login URL` on a machine with a browser and use its token file"
                )
            _say(f"{why}no browser found: open this URL to sign in{again}:", authorization_url)
            return
        signing = f"{why}signing in again" if needed else "signing in"
        _say(
            f"{signing}: your browser should open; if it does not, open this URL:",
            authorization_url,
        )
        await open_browser(authorization_url)  # not waited for (Rule 1)


def _say(line: str, url: str) -> None:
    print(f"trio-mcp: {line}\n  {url}", file=sys.stderr, flush=True)


def _has_browser() -> bool:
    # What `webbrowser.open` would run (`BROWSER`, a desktop's, a text browser); it may ask the
    # desktop (a subprocess), so it runs in a thread.
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def _on_a_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # closed
        return False


class _Callback:
    """The callback handler: the loopback listener's redirect, within the login timeout."""

    def __init__(self, loopback: LoopbackCallback, timeout: float, hint: str | None) -> None:
        self._loopback = loopback
        self._timeout = timeout
        self._hint = hint

    async def wait(self) -> AuthorizationResponse:
        with trio.move_on_after(self._timeout):
            return await self._loopback.callback()
        message = (
            f"no sign-in came back within {self._timeout:g} s (--login-timeout): "
            "the browser never reached the redirect"
        )
        raise AuthorizationError(message + (f"; {self._hint}" if self._hint else ""))


class FreshSignIn:
    """A `TokenStorage` that hides the tokens kept for one server until new ones are stored.

    `trio-mcp login` signs in anew without first throwing away the tokens it replaces: a
    sign-in that fails leaves the old ones in place.
    """

    def __init__(self, storage: TokenStorage, resource: str) -> None:
        self._storage = storage
        self._resource = resource
        self._hidden = True

    def __repr__(self) -> str:
        return f"<FreshSignIn {self._resource} in {self._storage!r}>"

    async def get_tokens(self, resource: str) -> OAuthTokens | None:
        """None for the server signing in, until its new tokens are stored."""
        if self._hidden and resource == self._resource:
            return None
        return await self._storage.get_tokens(resource)

    async def set_tokens(self, resource: str, tokens: OAuthTokens | None) -> None:
        """Keep `tokens` (the new sign-in ends the hiding)."""
        if resource == self._resource:
            self._hidden = False
        await self._storage.set_tokens(resource, tokens)

    async def get_client(self, issuer: str) -> ClientRegistration | None:
        """The stored registration, unhidden: a sign-in reuses it."""
        return await self._storage.get_client(issuer)

    async def set_client(self, issuer: str, client: ClientRegistration | None) -> None:
        """Keep `client` for `issuer`."""
        await self._storage.set_client(issuer, client)


def describe_sign_in(tokens: OAuthTokens) -> str:
    """Who signed in and with what, from the tokens, naming no credential (Rule 3).

    The subject comes from a JWT access token's payload, read without checking its signature
    (the server checks it; this is only for the user's eyes); an opaque token has none.
    """
    subject = _jwt_claims(tokens.access_token).get("sub")
    parts = []
    if isinstance(subject, str) and subject:
        parts.append(f"as {subject}")
    parts.append(f"with scopes {tokens.scope}" if tokens.scope else "with the default scopes")
    if tokens.issuer:
        parts.append(f"from {tokens.issuer}")
    return " ".join(parts)


def _jwt_claims(token: str) -> dict[str, Any]:
    pieces = token.split(".")
    if len(pieces) != 3:
        return {}
    payload = pieces[1] + "=" * (-len(pieces[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, binascii.Error):
        return {}
    return claims if isinstance(claims, dict) else {}
