"""A folder served as resources: the template `Server.add_directory` registers, its reads, its list.

A read never leaves the root. The URI's path (already normalised by the template's value rules:
no empty, "." or ".." segment left, no backslash nor NUL) is joined to the root and resolved,
symlinks included; what resolves outside the root, is not a regular file, has a hidden name on
either side of a symlink (unless `hidden=True`) or is left out by the globs is "not found" (the
revision's resource-not-found error), exactly like a name that does not exist: a client learns
nothing of what lies outside. The file is then opened a folder at a time, following no symlink,
so one swapped in since fails the read.

A file larger than `max_bytes` is refused (-32603 naming the limit) and never read whole.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import inspect
import logging
import mimetypes
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from .._core.types import ResourceContents
from .._exceptions import ResourceNotFoundError, ToolDefinitionError, ToolError
from .resources import BINARY, JSON, TEXT, ResourceMeta, ResourceTemplate, make_resource
from .uri_template import UriTemplate

__all__ = ["DEFAULT_MAX_FILE_BYTES", "DEFAULT_MAX_LISTED", "make_directory"]

logger = logging.getLogger("trio_mcp")

# 10 MiB: as base64 (4/3 larger) it still fits in one message under the 16 MiB default line
# limit of stdio (Limits(max_line_bytes=...)) with room to spare, on our side and the client's.
DEFAULT_MAX_FILE_BYTES: Final = 10 * 1024 * 1024
# 10,000 entries: about 1.5 MB of resources/list (some 150 bytes each), one message well under
# the line limit, and a walk of a few tens of milliseconds; a bigger tree wants a search tool.
DEFAULT_MAX_LISTED: Final = 10_000
# Text types beyond text/*: what a model reads best as text.
_TEXTUAL: Final = frozenset(
    {JSON, "application/xml", "application/javascript", "application/x-sh", "application/toml",
     "application/yaml", "application/x-yaml", "application/sql", "image/svg+xml"}
)  # fmt: skip
# How much of a file of unknown type is looked at for a NUL byte.
_SNIFF: Final = 8192


@dataclasses.dataclass(frozen=True, slots=True)
class _Folder:
    """What a directory's reads and list share."""

    root: Path  # resolved
    template: UriTemplate
    variable: str
    segments: bool  # the variable is a list of segments ({/path*}), else a string
    deep: bool  # subfolders are reachable ({+path}, {/path*}), else top-level files only
    globs: tuple[tuple[str, ...], ...]  # each split at "/"; empty: every file
    hidden: bool
    max_bytes: int
    max_listed: int

    def find(self, parts: Sequence[str]) -> tuple[tuple[str, ...], os.stat_result]:
        """Where the file `parts` names is under the root, symlinks resolved, and its status.

        Raises:
            ResourceNotFoundError: when it names nothing a read may serve (module docstring).
        """
        if not parts or (not self.deep and len(parts) > 1):
            raise ResourceNotFoundError("not a file of this directory")
        try:
            # The names exist once this succeeds, so the checks below see short strings.
            real = self.root.joinpath(*parts).resolve(strict=True)
            status = real.stat()
        except (OSError, RuntimeError):  # missing, a loop, a name too long...
            raise ResourceNotFoundError("no such file") from None
        if not real.is_relative_to(self.root):
            raise ResourceNotFoundError("outside the directory")
        inside = real.relative_to(self.root).parts
        if not stat.S_ISREG(status.st_mode) or not inside or not self.admits(parts):
            raise ResourceNotFoundError("not a file of this directory")
        if not self.hidden and _is_hidden(inside):
            raise ResourceNotFoundError("not a file of this directory")
        return inside, status

    def admits(self, parts: Sequence[str]) -> bool:
        """Whether the hidden rule and the globs let `parts` be served."""
        if not self.hidden and _is_hidden(parts):
            return False
        return not self.globs or any(_glob_match(glob, parts) for glob in self.globs)

    def read(self, parts: Sequence[str]) -> ResourceContents:
        """The contents of the file `parts` names, as text or as a blob.

        Text (UTF-8) when its MIME type, guessed from its name, is a text type, or is unknown
        and its bytes decode as UTF-8 with no NUL; otherwise a blob of that type
        (application/octet-stream when unknown).
        """
        inside, _ = self.find(parts)
        # Opened again one folder at a time, never following a symlink: a symlink put in place
        # of one of them since `find` makes the read fail, not escape.
        try:
            descriptor = _open_beneath(self.root, inside)
        except OSError:
            raise ResourceNotFoundError("no such file") from None
        with os.fdopen(descriptor, "rb") as file:
            status = os.fstat(file.fileno())
            if not stat.S_ISREG(status.st_mode):
                raise ResourceNotFoundError("not a file of this directory")
            if status.st_size > self.max_bytes:
                raise ToolError(
                    f"{'/'.join(parts)} is {status.st_size:,} bytes, more than the "
                    f"{self.max_bytes:,} this directory serves (add_directory(max_bytes=...))"
                )
            data = file.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:  # it grew since
            raise ToolError(f"{'/'.join(parts)} is more than {self.max_bytes:,} bytes")
        mime = _guess(inside[-1])
        if mime is None:
            text = _as_text(data, sniff=True)
            if text is not None:
                return ResourceContents(text=text, mime_type=TEXT)
            return ResourceContents(blob=data, mime_type=BINARY)
        if _is_textual(mime):
            text = _as_text(data, sniff=False)
            if text is not None:
                return ResourceContents(text=text, mime_type=mime)
        return ResourceContents(blob=data, mime_type=mime)

    def listing(self) -> list[dict[str, Any]]:
        """The `resources/list` entries of the files a read would serve.

        The root is walked each time (the dispatcher runs the walk in a worker thread): regular
        files in sorted order, not descending into symlinked folders, at most `max_listed`.
        """
        entries: list[dict[str, Any]] = []
        for parts, size in self._walk():
            if len(entries) == self.max_listed:
                logger.warning(
                    "directory %s has more files than the %d listed "
                    "(add_directory(max_listed=...))",
                    self.template.text,
                    self.max_listed,
                )
                break
            value: str | list[str] = list(parts) if self.segments else "/".join(parts)
            entry: dict[str, Any] = {
                "uri": self.template.expand({self.variable: value}),
                "name": "/".join(parts),
            }
            mime = _guess(parts[-1])
            if mime is not None:
                entry["mimeType"] = mime
            entry["size"] = size
            entries.append(entry)
        return entries

    def _walk(self) -> Iterable[tuple[tuple[str, ...], int]]:
        for folder, subfolders, files in os.walk(self.root):
            base = Path(folder).relative_to(self.root).parts
            if not self.deep:
                subfolders.clear()
            subfolders[:] = sorted(d for d in subfolders if self.hidden or not d.startswith("."))
            for name in sorted(files):
                parts = (*base, name)
                if not self.admits(parts):
                    continue
                try:
                    _, status = self.find(parts)
                except ResourceNotFoundError:
                    continue
                if status.st_size <= self.max_bytes:
                    yield parts, status.st_size


def _open_beneath(root: Path, parts: Sequence[str]) -> int:
    """A descriptor of the file root/parts, opened a name at a time with no symlink followed."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW
    folder = os.open(root, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = inner
        # Non-blocking: a FIFO put there since `find` must not hang the read.
        return os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=folder)
    finally:
        os.close(folder)


def _is_hidden(parts: Sequence[str]) -> bool:
    return any(part.startswith(".") for part in parts)


def _glob_match(glob: tuple[str, ...], parts: Sequence[str]) -> bool:
    """Whether the path `parts` matches `glob` (split at "/"; "**" spans any folders).

    States are the positions in `glob` reached so far: O(len(glob) x len(parts)), no regex on
    the whole path.
    """

    def closure(states: set[int]) -> set[int]:
        for start in sorted(states):
            index = start
            while index < len(glob) and glob[index] == "**":
                index += 1
                states.add(index)
        return states

    states = closure({0})
    for part in parts:
        moved = {i for i in states if i < len(glob) and glob[i] == "**"}
        moved |= {
            i + 1
            for i in states
            if i < len(glob) and glob[i] != "**" and fnmatch.fnmatchcase(part, glob[i])
        }
        states = closure(moved)
        if not states:
            return False
    return len(glob) in states


def _guess(name: str) -> str | None:
    return mimetypes.guess_type(name, strict=False)[0]


def _is_textual(mime: str) -> bool:
    return mime.startswith("text/") or mime in _TEXTUAL or mime.endswith(("+json", "+xml"))


def _as_text(data: bytes, *, sniff: bool) -> str | None:
    if sniff and b"\x00" in data[:_SNIFF]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def make_directory(
    uri: str,
    root: str | os.PathLike[str],
    *,
    glob: str | Sequence[str] | None = None,
    hidden: bool = False,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_listed: int = DEFAULT_MAX_LISTED,
    options: ResourceMeta | None = None,
) -> ResourceTemplate:
    """The resource template that serves the files under `root` (see the module docstring).

    Args:
        uri: A URI prefix ("file:///docs/", to which `{+path}` is added) or a template with one
            path variable: `{+path}` or `{/path*}` (any depth), `{name}` (top-level files).
        root: The folder; it must exist.
        glob: Globs of the files served, relative to `root` ("*.md", "docs/**/*.txt"; "**"
            spans folders); default: every file.
        hidden: Serve names starting with "." too (default: never).
        max_bytes: Files larger than this are refused, and not listed.
        max_listed: The most files `resources/list` names.
        options: Name, title, description, scopes... of the template.

    Raises:
        ToolDefinitionError: for a root that is no folder, or a URI that cannot name its files.
    """
    where = f"add_directory({uri!r}, {str(root)!r})"
    try:
        folder = Path(root).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ToolDefinitionError(f"{where}: the root cannot be opened ({exc})") from None
    if not folder.is_dir():
        raise ToolDefinitionError(f"{where}: the root is not a folder")
    if max_bytes < 0 or max_listed < 0:
        raise ToolDefinitionError(f"{where}: max_bytes and max_listed must be >= 0")
    text = uri if "{" in uri else uri + ("" if uri.endswith(("/", ":")) else "/") + "{+path}"
    parsed = UriTemplate(text)
    expressions = [part for part in parsed.parts if not isinstance(part, str)]
    forms = {("+", False): True, ("/", True): True, ("", False): False}
    shape = (
        (expressions[0].operator, expressions[0].variables[0].explode)
        if len(expressions) == 1 and len(expressions[0].variables) == 1
        else None
    )
    if shape not in forms or expressions[0].variables[0].prefix is not None:
        raise ToolDefinitionError(
            f"{where}: the URI must be a prefix ('file:///docs/') or a template with one path "
            "variable, {+path} or {/path*} (or {name} for the top-level files only)"
        )
    variable = expressions[0].variables[0].name
    segments = shape == ("/", True)
    globs = (glob,) if isinstance(glob, str) else tuple(glob or ())
    state = _Folder(
        root=folder,
        template=parsed,
        variable=variable,
        segments=segments,
        deep=forms[shape],
        globs=tuple(tuple(g.strip("/").split("/")) for g in globs),
        hidden=hidden,
        max_bytes=max_bytes,
        max_listed=max_listed,
    )

    def read(**values: Any) -> ResourceContents:
        value = values[variable]
        return state.read(value if isinstance(value, list) else value.split("/") if value else [])

    annotation: Any = list[str] if segments else str
    read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(variable, inspect.Parameter.KEYWORD_ONLY, annotation=annotation)]
    )
    read.__annotations__ = {variable: annotation, "return": ResourceContents}
    read.__qualname__ = read.__name__ = f"directory {folder.name or str(folder)}"
    defaults = ResourceMeta(
        uri=text,
        name=folder.name or str(folder),
        description=f"The files of the folder {folder.name or str(folder)!r}",
    )
    given = dataclasses.replace(options or ResourceMeta(), uri=text)
    made = make_resource(read, given.over(defaults))
    assert isinstance(made, ResourceTemplate)
    return dataclasses.replace(made, listing=state.listing)
