"""`FileTokenStorage`: an OAuth client's tokens and registrations in one JSON file.

The document: `{"version": 1, "tokens": {RESOURCE: {...}}, "clients": {ISSUER: {...}}}`, the
records' fields by name; fields a newer version adds are ignored.

Rule 1: the file is as secret as a password file. It is created with mode 0600, and its
        directory with 0700 when the store creates it. A file found open to the group or to
        others is narrowed to 0600 with a warning (logger `trio_mcp.client.token_file`): the
        exposure has happened already, refusing would not undo it, and the warning says what
        to do (sign out and in again). A file owned by another user is refused. A file that
        cannot be read or is not a token file is an `AuthorizationError` naming the path and
        what is wrong, never the contents; tokens and secrets never appear in a repr, a log
        line or a message.
Rule 2: a write never leaves a half-written file: the whole document goes to a temporary file
        in the same directory (mode 0600 from its creation), is flushed to disk (fsync), and
        replaces the old one (`os.replace`, atomic on POSIX); the directory is synced too.
Rule 3: several processes may share the file (two `trio-mcp` commands at once). Every read
        reads the file afresh; every write re-reads it under an exclusive lock (`flock` on a
        `.lock` file beside it, where the platform has one) and changes only its own key, so
        writers of different keys all survive and writers of the same key: the last one wins.
Rule 4: all file I/O runs in a worker thread (`trio.to_thread`), so a slow disk never blocks
        the event loop.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import trio

from .._exceptions import AuthorizationError
from .rules import ClientRegistration, OAuthTokens

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, writes are still atomic
    fcntl = None  # type: ignore[assignment]

__all__ = ["FILE_VERSION", "FileTokenStorage"]

logger = logging.getLogger("trio_mcp.client.token_file")

#: The document version this module writes; a file of a later version is refused.
FILE_VERSION: Final = 1
_FILE_MODE: Final = 0o600
_DIR_MODE: Final = 0o700
_TOKEN_FIELDS: Final = ("access_token", "token_type", "refresh_token", "expires_at", "scope",
                        "issuer")  # fmt: skip
_CLIENT_FIELDS: Final = ("client_id", "client_secret", "token_endpoint_auth_method", "issuer")

_KINDS: Final = ("string", "number")

Document = dict[str, dict[str, dict[str, Any]]]


class FileTokenStorage:
    """`TokenStorage` in a JSON file, kept across runs (module Rules 1-4).

    ```python
    storage = FileTokenStorage("~/.config/my-app/tokens.json")
    auth = OAuth(..., storage=storage)
    ```

    Tokens are kept per MCP server URL, registrations per authorization server (issuer), as
    the `TokenStorage` protocol says. The file and its directory are made on the first write.

    Args:
        path: The file.
        sign_out_command: What a message suggests running to start afresh (for a file that
            is not the command line's default one: `trio-mcp logout --all --token-file PATH`).
    """

    def __init__(
        self, path: str | os.PathLike[str], *, sign_out_command: str = "trio-mcp logout --all"
    ) -> None:
        #: Where the tokens are kept (`~` expanded).
        self.path = Path(path).expanduser()
        #: The command that empties this file, named in the messages that suggest it.
        self.sign_out_command = sign_out_command
        self._lock = trio.Lock()

    def __repr__(self) -> str:
        return f"<FileTokenStorage {str(self.path)!r}>"

    async def get_tokens(self, resource: str) -> OAuthTokens | None:
        """The tokens last stored for the MCP server at `resource`, or None."""
        entry = (await self._read()).get("tokens", {}).get(resource)
        return None if entry is None else self._record(OAuthTokens, entry, _TOKEN_FIELDS)

    async def set_tokens(self, resource: str, tokens: OAuthTokens | None) -> None:
        """Keep `tokens` for `resource` (None forgets them)."""
        entry = None if tokens is None else _fields(tokens, _TOKEN_FIELDS)
        await self._update("tokens", resource, entry)

    async def get_client(self, issuer: str) -> ClientRegistration | None:
        """The registration last stored for the authorization server `issuer`, or None."""
        entry = (await self._read()).get("clients", {}).get(issuer)
        return None if entry is None else self._record(ClientRegistration, entry, _CLIENT_FIELDS)

    async def set_client(self, issuer: str, client: ClientRegistration | None) -> None:
        """Keep `client` for `issuer` (None forgets it)."""
        entry = None if client is None else _fields(client, _CLIENT_FIELDS)
        await self._update("clients", issuer, entry)

    async def resources(self) -> list[str]:
        """The MCP servers that tokens are kept for."""
        return sorted((await self._read()).get("tokens", {}))

    async def clear(self) -> bool:
        """Forget everything: remove the file. Returns whether there was one."""
        async with self._lock:
            return await trio.to_thread.run_sync(self._remove)

    # -- the file ---------------------------------------------------------------------------

    async def _read(self) -> Document:
        return await trio.to_thread.run_sync(self._load)

    async def _update(self, section: str, key: str, entry: dict[str, Any] | None) -> None:
        def change(document: Document) -> None:
            records = document.setdefault(section, {})
            if entry is None:
                records.pop(key, None)
            else:
                records[key] = entry

        async with self._lock:
            await trio.to_thread.run_sync(self._rewrite, change)

    def _record(self, kind: Callable[..., Any], entry: Any, names: tuple[str, ...]) -> Any:
        if not isinstance(entry, dict):
            raise self._invalid("an entry is not a JSON object")
        for name in names:
            value = entry.get(name)
            allowed = (int, float) if name == "expires_at" else str
            if value is not None and (not isinstance(value, allowed) or isinstance(value, bool)):
                raise self._invalid(f"an entry's {name} is not a {_KINDS[name == 'expires_at']}")
        try:
            return kind(**{name: entry[name] for name in names if name in entry})
        except TypeError:
            raise self._invalid("an entry lacks a required field") from None

    def _invalid(self, why: str) -> AuthorizationError:
        return AuthorizationError(
            f"the token file {self.path} is not usable: {why} (remove it, or "
            f"`{self.sign_out_command}`, to sign in afresh)"
        )

    def _load(self) -> Document:
        """The document as the file holds it now (empty sections when there is no file)."""
        try:
            with open(self.path, "rb") as file:
                self._check_mode(os.fstat(file.fileno()))
                raw = file.read()
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}}
        except OSError as exc:
            raise AuthorizationError(
                f"cannot read the token file {self.path}: {exc.strerror or exc}"
            ) from None
        try:
            document = json.loads(raw) if raw.strip() else {}
        except (ValueError, UnicodeDecodeError):
            raise self._invalid("it is not JSON") from None
        if not isinstance(document, dict):
            raise self._invalid("it is not a JSON object")
        version = document.get("version", FILE_VERSION)
        if not isinstance(version, int) or version > FILE_VERSION:
            raise self._invalid(f"it is of version {version!r}, newer than this trio-mcp's")
        for section in ("tokens", "clients"):
            if not isinstance(document.get(section, {}), dict):
                raise self._invalid(f"its {section!r} is not a JSON object")
        return {
            "tokens": dict(document.get("tokens", {})),
            "clients": dict(document.get("clients", {})),
        }

    def _check_mode(self, status: os.stat_result) -> None:
        """Rule 1 for a file found on disk."""
        getuid = getattr(os, "getuid", None)
        if getuid is not None and status.st_uid != getuid():
            raise AuthorizationError(
                f"the token file {self.path} belongs to another user: refusing to use it"
            )
        mode = stat.S_IMODE(status.st_mode)
        if os.name == "posix" and mode & 0o077:
            try:
                os.chmod(self.path, _FILE_MODE)
            except OSError as exc:
                raise AuthorizationError(
                    f"the token file {self.path} is open to others (mode {mode:04o}) and cannot "
                    f"be made private: {exc.strerror or exc}"
                ) from None
            logger.warning(
                "the token file %s was open to others (mode %04o); it is now 0600. If someone "
                "else could have read it, sign out and in again (%s)",
                self.path,
                mode,
                self.sign_out_command,
            )

    def _rewrite(self, change: Callable[[Document], None]) -> None:
        """Read, change and write the file back whole, under the lock (Rules 2 and 3)."""
        self._make_directory()
        with self._locked():
            document = self._load()
            change(document)
            self._write({"version": FILE_VERSION, **document})

    def _make_directory(self) -> None:
        directory = self.path.parent
        if directory.is_dir():
            return
        try:
            directory.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
            os.chmod(directory, _DIR_MODE)  # the umask may have taken bits away; never added
        except OSError as exc:
            raise AuthorizationError(
                f"cannot make the directory {directory} for the token file: {exc.strerror or exc}"
            ) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if fcntl is None:  # pragma: no cover - Windows
            yield
            return
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, _FILE_MODE)
        except OSError as exc:
            raise AuthorizationError(
                f"cannot lock the token file {self.path}: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _write(self, document: dict[str, Any]) -> None:
        data = json.dumps(document, indent=2, sort_keys=True).encode() + b"\n"
        directory = self.path.parent
        try:
            # mkstemp creates the file with mode 0600 (O_EXCL), so it is never readable by
            # others, not even for the moment before a chmod.
            descriptor, temporary = tempfile.mkstemp(
                prefix=f".{self.path.name}.", suffix=".tmp", dir=directory
            )
        except OSError as exc:
            raise AuthorizationError(
                f"cannot write the token file {self.path}: {exc.strerror or exc}"
            ) from None
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.chmod(temporary, _FILE_MODE)
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise AuthorizationError(
                f"cannot write the token file {self.path}: {exc.strerror or exc}"
            ) from None
        _sync_directory(directory)

    def _remove(self) -> bool:
        if not self.path.parent.is_dir():
            return False
        with self._locked():
            try:
                self.path.unlink()
            except FileNotFoundError:
                return False
            except OSError as exc:
                raise AuthorizationError(
                    f"cannot remove the token file {self.path}: {exc.strerror or exc}"
                ) from None
        return True


def _fields(record: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(record, name) for name in names if getattr(record, name) is not None}


def _sync_directory(directory: Path) -> None:
    # The rename is durable once the directory is synced (POSIX); elsewhere this is best effort.
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
