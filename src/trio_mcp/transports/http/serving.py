"""Serving the ASGI application over TCP: our own accept loop, Hypercorn's HTTP per connection.

Why an accept loop of our own: Hypercorn's trio worker accepts with `trio.serve_listeners`,
which bounds nothing, cannot answer an overload, and logs a full traceback every 0.1 s for as
long as descriptors are short (a logging filter could hide the repeats, but only by matching
trio's wording, and still could not bound or answer anything). Each accepted connection is
served exactly as Hypercorn's worker serves it (`TCPServer`: HTTP/1.1 by h11, HTTP/2 by h2,
keep-alive and its idle timer, graceful close); only the accepting is ours. The application
gets no lifespan events: `McpHttpApp` needs none (its `run` is started beside it). A process
may serve a listening socket it inherited (`listen_fd`) instead of binding one: several worker
processes then accept from one socket, the kernel gives each new connection to one of them
(`trio-mcp run --workers`), and nothing is shared between them but the socket.

A connection turned away is read from until the client closes it (at most `_LINGER` seconds),
so the close does not reset the connection under the answer; past a bound on those waits, a
connection is answered and closed in passing. Each episode of refusals from one address is
logged once. Behind a reverse proxy every connection comes from the proxy's address: there
`max_connections_per_address` must be raised or set to None (the proxy limits its clients
itself: nginx limit_conn, HAProxy src_conn_cur).

Rule 1: connections are bounded, in all and per client: at most `max_connections` are served
        at once (by default a share of the process's open-files limit, RLIMIT_NOFILE, see
        `connection_limit`, so serving never runs the process out of file descriptors by
        itself), and one client address holds at most `max_connections_per_address` of them
        (IPv6 clients counted by their /64), so one client, slow on purpose or not, cannot lock
        every other out. Past either bound a new connection is still accepted, answered (503,
        or 429 for the address) with Retry-After and `Connection: close`, and closed: the
        client learns at once, instead of waiting in the listen backlog.
Rule 2: nothing one connection does stops the server. Running out of descriptors anyway
        (EMFILE and its kin, e.g. a tool holding files open) pauses accepting for
        `_RETRY_AFTER_SHORTAGE`, logged once per episode (a warning when it starts, a note
        when a connection is accepted again); a connection's failure is logged, and only that
        connection closed.
Rule 3: nothing holds the server for ever. Shutting down stops accepting, then tells the open
        connections: an idle one closes at once, a busy one after its response; all get
        `graceful_timeout` seconds, after which every connection still open is closed by force
        (Hypercorn shields its writes). One write to a client may wait `send_timeout` seconds
        for it to read; past that the connection is closed (its call is cancelled as by a
        disconnect).
Rule 4: binding a wildcard address (0.0.0.0, ::) needs `allowed_hosts`
        (`transports/http/guard` Rule 1).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.config import Config
from hypercorn.events import Closed, RawData
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext

from ..._core.jsonrpc import INVALID_REQUEST, dumps, error_response
from .asgi import client_key
from .options import HttpOptions

__all__ = [
    "bind_listener",
    "check_bind",
    "client_key",
    "connection_limit",
    "listener_url",
    "serve_app",
]

logger = logging.getLogger("trio_mcp.http")

#: accept() errors that mean "no descriptor or buffer to spare now", not a broken listener:
#: trio.serve_listeners retries the same set.
_SHORTAGE: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
#: Pause before accepting again after a shortage: trio.serve_listeners' own pause.
_RETRY_AFTER_SHORTAGE: Final = 0.1
#: Shortages less than this many seconds apart are one episode, logged once: while
#: descriptors are short, accepting succeeds now and then as a connection closes, and fails
#: again at once.
_EPISODE_GAP: Final = 60.0
#: With no open-files limit to stay under (RLIM_INFINITY, or no `resource` module as on
#: Windows): the C10k round number. Past it, more worker processes serve better than one.
_UNLIMITED_CONNECTIONS: Final = 10_000
#: How long a turned-away connection waits for the client to close after its 503: the client
#: may still be sending its request, and closing on unread bytes makes the kernel reset the
#: connection, which can destroy the 503 before the client reads it.
_LINGER: Final = 2.0


def _refusal(status: bytes, message: str) -> bytes:
    """A whole HTTP/1.1 response turning a connection away, JSON-RPC error as its body."""
    body = dumps(error_response(None, INVALID_REQUEST, message))
    return (
        b"HTTP/1.1 %s\r\n"
        b"content-type: application/json\r\n"
        b"content-length: %d\r\n"
        b"retry-after: 1\r\n"
        b"connection: close\r\n\r\n" % (status, len(body))
    ) + body


#: Past `max_connections` (Rule 1): the server is busy, whoever asks.
_BUSY: Final = _refusal(b"503 Service Unavailable", "Too many connections; try again later")
#: Past `max_connections_per_address` (Rule 1): this client holds its share already.
_CROWDED: Final = _refusal(
    b"429 Too Many Requests",
    "Too many connections from your address; close some, or try again later",
)


def connection_limit(configured: int | None) -> tuple[int, int]:
    """How many connections to serve at once, and how many to answer 503 at once past that.

    Each connection holds one file descriptor. By default an eighth of the open-files limit
    (at least 32) stays free for everything else the process opens: the listener, logs,
    files and sockets that tools open, and the 503 answers themselves (a quarter of that
    reserve, at least 8). nginx asks the same of its worker_connections, which must stay
    below the open-files limit.

    Args:
        configured: `HttpOptions.max_connections`; None derives the bound from RLIMIT_NOFILE.

    Returns:
        The bound on connections served, and on connections being answered 503.
    """
    try:
        import resource  # noqa: PLC0415 - Unix only

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        unlimited = soft == resource.RLIM_INFINITY
    except ImportError:
        soft, unlimited = 0, True
    reserve = 32 if unlimited else max(32, soft // 8)
    turn_away = max(8, reserve // 4)
    if configured is not None:
        return configured, turn_away
    if unlimited:
        return _UNLIMITED_CONNECTIONS, turn_away
    return max(1, soft - reserve), turn_away


async def serve_app(
    app: Callable[..., Awaitable[None]],
    options: HttpOptions,
    *,
    host: str,
    port: int,
    graceful_timeout: float,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    listen_fd: int | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve an ASGI application on `host`:`port` until `shutdown_trigger` returns.

    Args:
        app: The ASGI application.
        options: `max_connections` and `keep_alive_timeout` are read from it.
        host: Address to bind.
        port: Port to bind; 0 picks a free one.
        listen_fd: A listening TCP socket this process inherited: served in place of
            binding `host`:`port`, which are then only checked.
        graceful_timeout: Seconds open connections get to finish once shutting down.
        shutdown_trigger: Awaited; when it returns, the server shuts down (Rule 3).
        task_status: Reports the bound URLs (e.g. ["http://127.0.0.1:8000"]).

    Raises:
        ValueError: for a wildcard `host` (0.0.0.0, ::) without `options.allowed_hosts`.
    """
    check_bind(host, options)
    config = Config()
    if listen_fd is not None:
        config.bind = [f"fd://{listen_fd}"]  # Hypercorn adopts the socket as it is
    else:
        config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.graceful_timeout = graceful_timeout
    config.keep_alive_timeout = options.keep_alive_timeout
    config.accesslog = None
    config.errorlog = logging.getLogger("trio_mcp.hypercorn")
    sockets = config.create_sockets().insecure_sockets
    listeners = []
    for sock in sockets:
        sock.listen(config.backlog)
        listeners.append(trio.SocketListener(trio.socket.from_stdlib_socket(sock)))
    binds = [_url(sock.getsockname()) for sock in sockets]
    acceptor = _Acceptor(
        ASGIWrapper(app),
        config,
        *connection_limit(options.max_connections),
        options.send_timeout,
        per_address=options.max_connections_per_address,
    )
    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as accepting:
            for listener in listeners:
                accepting.start_soon(acceptor.accept, listener, connections)
            task_status.started(binds)
            if shutdown_trigger is None:
                await trio.sleep_forever()
            await shutdown_trigger()
            accepting.cancel_scope.cancel()
        for listener in listeners:
            await listener.aclose()
        await acceptor.context.terminated.set()
        deadline = trio.current_time() + graceful_timeout
        connections.cancel_scope.deadline = deadline
        connections.start_soon(acceptor.close_all_at, deadline)


def bind_listener(host: str, port: int, options: HttpOptions) -> socket.socket:
    """Bind and listen on `host`:`port` as `serve_app` does, for processes to inherit.

    Returns:
        The listening socket, inheritable, with Hypercorn's options (SO_REUSEADDR,
        TCP_NODELAY) and backlog.

    Raises:
        ValueError: for a wildcard `host` (0.0.0.0, ::) without `options.allowed_hosts`.
        OSError: when the address cannot be bound.
    """
    check_bind(host, options)
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    (sock,) = config.create_sockets().insecure_sockets
    sock.listen(config.backlog)
    sock.set_inheritable(True)
    return sock


def listener_url(sock: socket.socket) -> str:
    """The http:// URL of a listening socket's address."""
    return _url(sock.getsockname())


def check_bind(host: str, options: HttpOptions) -> None:
    """Refuse to bind a wildcard address without `allowed_hosts` (Rule 4).

    On every address of the machine, a request may come by any name that reaches it: which
    names are this server's is the deployer's to say (`guard` then checks them).

    Raises:
        ValueError: for a wildcard `host` (0.0.0.0, ::, "") without `options.allowed_hosts`.
    """
    try:
        wildcard = not host or ipaddress.ip_address(host).is_unspecified
    except ValueError:  # a name, resolved when binding
        wildcard = False
    if wildcard and not options.allowed_hosts:
        raise ValueError(
            f"binding {host or 'every address'} serves other machines: list the Host names "
            "clients will use in HttpOptions.allowed_hosts (trio-mcp run --allow-host NAME), "
            "or ('*',) to accept any"
        )


def _url(address: Any) -> str:
    host, port = address[0], address[1]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _turn_away_now(stream: trio.SocketStream, answer: bytes) -> None:
    """Answer (503 or 429) and close without waiting: drop what the client sent, write, close.

    Best effort, for when too many turned-away clients are being waited for already: a request
    that arrives after the close makes the kernel reset the connection, which can destroy the
    answer on its way; nothing here can block.
    """
    sock = socket.socket(fileno=stream.socket.detach())
    with sock:
        sock.setblocking(False)
        with contextlib.suppress(OSError):
            while sock.recv(65536):
                pass
        with contextlib.suppress(OSError):
            sock.send(answer)


class _Connection(TCPServer):
    """Hypercorn's handler of one connection: it ends once the client closed; writes time out.

    Hypercorn's own, when the client closes a connection idle between requests, still waits
    for its keep-alive timer before it closes its end: the descriptor stays held (and counted
    against `max_connections`) for up to `keep_alive_timeout` after the client has gone. And
    it writes under a shielded cancel scope with no deadline, so a client that stops reading
    holds the connection, the call that writes to it and a graceful shutdown for ever (Rule 3).
    """

    send_timeout: float = 60.0

    async def _read_data(self) -> None:
        await super()._read_data()
        # Nothing more can arrive: no request will come to keep this connection alive for.
        await self.idle_task.stop()

    async def protocol_send(self, event: Any) -> None:
        if not isinstance(event, RawData):
            await super().protocol_send(event)
            return
        async with self.send_lock:
            try:
                # Shielded as Hypercorn's (a cancelled write would leave the stream half
                # written), but bounded: a write that makes no progress ends the connection.
                with trio.CancelScope(shield=True) as scope:
                    scope.deadline = trio.current_time() + self.send_timeout
                    await self.stream.send_all(event.data)
                if not scope.cancelled_caught:
                    return
                logger.info("closed a connection whose client did not read for %.0f s",
                            self.send_timeout)  # fmt: skip
                await trio.aclose_forcefully(self.stream)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            await self.protocol.handle(Closed())


class _Acceptor:
    """Accepts connections and hands each to Hypercorn, or turns it away (Rules 1, 2)."""

    def __init__(
        self,
        app: ASGIWrapper,
        config: Config,
        limit: int,
        turn_away: int,
        send_timeout: float,
        *,
        per_address: int | None = None,
    ) -> None:
        self.app = app
        self.per_address = per_address  # connections one client address may hold (Rule 1)
        self.send_timeout = send_timeout
        self.streams: set[trio.SocketStream] = set()  # connections served now
        self._closed = trio.Event()  # set (and replaced) whenever one closes
        self.config = config
        self.context = WorkerContext(None)
        self.limit = limit
        self.turn_away_limit = turn_away
        self.open = 0  # connections served now
        self.turning_away = 0  # connections being answered 503 or 429 now
        self._last_shortage: float | None = None  # when accept last failed for a shortage
        self._recovered = True  # accepted again since the episode's warning
        self.by_address: dict[str, int] = {}  # connections served now, by `client_key`
        self._crowded_at: dict[str, float] = {}  # when each address was last turned away

    async def accept(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        """Accept from `listener` until cancelled, starting each connection in `nursery`."""
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno not in _SHORTAGE:
                    raise
                self._short(exc)
                await trio.sleep(_RETRY_AFTER_SHORTAGE)
                continue
            if not self._recovered:
                self._recovered = True
                logger.info("accepting connections again (%d open)", self.open)
            key = self._key(stream)
            if self.open >= self.limit:
                answer = _BUSY
            elif key is not None and self.by_address.get(key, 0) >= (self.per_address or 0):
                answer = _CROWDED
                self._crowded(key)
            else:
                self.open += 1
                self.streams.add(stream)
                if key is not None:
                    self.by_address[key] = self.by_address.get(key, 0) + 1
                nursery.start_soon(self._serve, stream, key)
                continue
            if self.turning_away < self.turn_away_limit:
                self.turning_away += 1
                nursery.start_soon(self._turn_away, stream, answer)
            else:  # turning away as many as we wait for already: answer this one in passing
                _turn_away_now(stream, answer)

    def _key(self, stream: trio.SocketStream) -> str | None:
        """The address `stream` counts against (Rule 1); None when no cap applies."""
        if self.per_address is None:
            return None
        try:
            return client_key(stream.socket.getpeername())
        except OSError:  # the client is gone already: its connection ends at its first read
            return None

    def _crowded(self, key: str) -> None:
        """Log an address's episode of refusals once, when it starts (Rule 1)."""
        now = trio.current_time()
        last = self._crowded_at.get(key)
        if last is None or now - last > _EPISODE_GAP:
            logger.warning(
                "%s holds %d connections, the most one client address may "
                "(max_connections_per_address); its new ones are answered 429 until some close "
                "(behind a reverse proxy every client has the proxy's address: raise the bound "
                "or set it to None)",
                key,
                self.by_address.get(key, 0),
            )
            # Episodes that ended are forgotten here: the table holds only recent ones.
            for old in [k for k, t in self._crowded_at.items() if now - t > _EPISODE_GAP]:
                del self._crowded_at[old]
        self._crowded_at[key] = now

    def _short(self, exc: OSError) -> None:
        now = trio.current_time()
        if self._last_shortage is None or now - self._last_shortage > _EPISODE_GAP:
            logger.warning(
                "cannot accept connections: %s; %d open, retrying until some close "
                "(raise the open-files limit, ulimit -n, or lower max_connections)",
                exc.strerror or errno.errorcode.get(exc.errno or 0, "out of resources"),
                self.open,
            )
            self._recovered = False
        self._last_shortage = now

    async def _serve(self, stream: trio.SocketStream, key: str | None) -> None:
        try:
            # Hypercorn's connection handler; it tells an SSL stream from a plain one itself.
            connection = _Connection(self.app, self.config, self.context, {}, stream)  # type: ignore[arg-type]
            connection.send_timeout = self.send_timeout
            await connection.run()
        except Exception:
            # Rule 2: Hypercorn handles socket errors itself; anything else is a bug on one
            # connection, which must not end the others.
            logger.exception("HTTP connection failed")
        finally:
            self.open -= 1
            self.streams.discard(stream)
            if key is not None:
                left = self.by_address[key] - 1
                if left:
                    self.by_address[key] = left
                else:
                    del self.by_address[key]
            self._closed.set()
            self._closed = trio.Event()
            # Hypercorn closes the stream itself, except when cancelled (the shutdown's
            # deadline) before it gets there: the client must see the close then too.
            await trio.aclose_forcefully(stream)

    async def close_all_at(self, deadline: float) -> None:
        """At `deadline`, close every connection still open, even one blocked in a write.

        Returns as soon as none is open (Rule 3).
        """
        with trio.CancelScope(shield=True):
            with trio.move_on_at(deadline):
                while self.streams:
                    await self._closed.wait()
            for stream in list(self.streams):
                await trio.aclose_forcefully(stream)

    async def _turn_away(self, stream: trio.SocketStream, answer: bytes) -> None:
        try:
            with trio.move_on_after(_LINGER):
                await stream.send_all(answer)
                await stream.send_eof()
                while await stream.receive_some(65536):
                    pass  # the request nobody will serve: read so that closing resets nothing
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client left first
        finally:
            self.turning_away -= 1
            await trio.aclose_forcefully(stream)
