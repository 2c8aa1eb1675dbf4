"""The user's way through an authorization: a browser, and a loopback listener for the redirect.

Rule 1: the listener binds 127.0.0.1 on a port the system picks (RFC 8252 section 7.3: a native
        app's redirect URI is a loopback IP literal with any port), before the authorization
        starts, so that its URI can be registered; it lives for the `async with` and nothing
        else reaches it from outside the machine.
Rule 2: `callback` answers one request on the redirect path with a short page and returns its
        query parameters; a request for another path (a browser asking for /favicon.ico) gets
        404 and the wait goes on. A request that is not HTTP is dropped; bounded reads
        (`MAX_REQUEST_BYTES`) keep a stray client from holding memory.
Rule 3: when the state of the pending authorization is known (`callback(state=...)`, or the
        flow's `pending_state`), a redirect carrying another state (or none) gets 400 and the
        wait goes on: any local process or web page can send a request to a loopback port, and
        a forged "error" must not end the authorization nor be shown to the user.
"""

from __future__ import annotations

import contextlib
import threading
import webbrowser
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

import trio

from .rules import AuthorizationResponse, pending_state

if TYPE_CHECKING:
    import h11

__all__ = ["LoopbackCallback", "open_browser", "open_loopback_callback"]

# An authorization redirect is one request line with a query of a few hundred bytes; browsers
# cap URLs near 64 KiB, and no request here has a body.
MAX_REQUEST_BYTES: Final = 65536
# Seconds one connection may take to send its request: a browser sends at once.
READ_TIMEOUT: Final = 10.0

_PAGE: Final = (
    b"<!doctype html><meta charset=utf-8><title>Authorization</title>"
    b"<p>The authorization is back with the application. You may close this window."
)


async def open_browser(authorization_url: str) -> None:
    """A `redirect_handler` that opens the authorization URL in the user's web browser.

    The browser starts in a thread of its own and is not waited for: a browser command (one
    the `BROWSER` environment variable names, a text browser) may return only once the
    browser closes, and the redirect it brings back must be answered before then. The thread
    is a daemon, so it never holds up the program's exit.
    """
    threading.Thread(
        target=webbrowser.open, args=(authorization_url,), name="open_browser", daemon=True
    ).start()


class LoopbackCallback:
    """A `callback_handler` listening on 127.0.0.1 (make it with `open_loopback_callback`)."""

    def __init__(self, listener: trio.SocketListener, path: str) -> None:
        self._listener = listener
        self._path = path
        host, port = listener.socket.getsockname()[:2]
        #: The redirect URI to give `OAuth(redirect_uri=...)`.
        self.redirect_uri = f"http://{host}:{port}{path}"

    def __repr__(self) -> str:
        return f"<LoopbackCallback {self.redirect_uri}>"

    async def callback(self, state: str | None = None) -> AuthorizationResponse:
        """Wait for the authorization server's redirect and return its parameters (Rules 2, 3).

        Args:
            state: The `state` the authorization sent; None: the flow's `pending_state`, and
                without one, the first redirect on the path is taken.
        """
        expected = state if state is not None else pending_state.get()
        while True:
            stream = await self._listener.accept()
            async with stream:
                target = await _answer(stream, self._path, expected)
            if target is not None:
                return AuthorizationResponse.from_url(target)


async def _answer(stream: trio.SocketStream, path: str, state: str | None) -> str | None:
    # h11 comes with the `http` extra (as httpx, which any URL needs): imported here, so that
    # the command line, which imports this module, starts without it.
    import h11  # noqa: PLC0415

    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BYTES)
    request: h11.Request | None = None
    with trio.move_on_after(READ_TIMEOUT):
        while request is None:
            try:
                event = connection.next_event()
            except h11.RemoteProtocolError:
                return None
            if event is h11.NEED_DATA:
                data = await stream.receive_some(MAX_REQUEST_BYTES)
                if not data:
                    return None
                connection.receive_data(data)
            elif isinstance(event, h11.Request):
                request = event
            else:
                return None
    if request is None:
        return None
    target = request.target.decode("latin-1")
    status, body = 200, _PAGE
    if urlsplit(target).path != path or request.method != b"GET":
        status, body = 404, b"not found"
    elif state is not None and AuthorizationResponse.from_url(target).state != state:
        status, body = 400, b"this is not the authorization this application is waiting for"
    headers = [
        ("content-type", "text/html; charset=utf-8" if status == 200 else "text/plain"),
        ("content-length", str(len(body))),
        ("connection", "close"),
    ]
    with contextlib.suppress(trio.BrokenResourceError, h11.LocalProtocolError):
        await stream.send_all(
            connection.send(h11.Response(status_code=status, headers=headers))
            + connection.send(h11.Data(data=body))
            + connection.send(h11.EndOfMessage())
        )
    return target if status == 200 else None


@contextlib.asynccontextmanager
async def open_loopback_callback(
    path: str = "/callback", *, port: int = 0
) -> AsyncIterator[LoopbackCallback]:
    """Listen on 127.0.0.1 for the redirect back from the authorization server (Rule 1).

    ```python
    async with open_loopback_callback() as loopback:
        auth = OAuth(redirect_uri=loopback.redirect_uri, redirect_handler=open_browser,
                     callback_handler=loopback.callback)
        async with open_client(url, auth=auth) as client: ...
    ```

    Args:
        path: The redirect URI's path.
        port: A fixed port (for an authorization server that insists on one); 0 picks one.

    Yields:
        The listener; it closes when the block ends.
    """
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    async with listeners[0] as listener:
        for extra in listeners[1:]:
            await extra.aclose()
        yield LoopbackCallback(listener, path)
