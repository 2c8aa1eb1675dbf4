"""Agent Skills over MCP (the `io.modelcontextprotocol/skills` extension, SEP-2640), both sides.

A skill is a folder with a `SKILL.md` (YAML front matter, at least `name` and `description`,
then instructions) and the files it refers to. The server side reads such folders once
(`read_skills`) into `Skill` records that `Server.add_skills` serves: each file as a resource
`skill://<skill-path>/<file-path>`, each skill's entry (its front matter and every file's
digest and size) through `skills/list` and `skills/get`, its folders through
`resources/directory/read` (`SkillCatalog`). The client side reads entries (`skill_info`) and
checks what it fetched against them (`check_file`, `check_front_matter`).

Rule 1: what is served is what was read. Every file's bytes are read once, when the skill is
        added, and served from memory: an entry's digest and size always describe the bytes a
        read returns, however the folder changes on disk afterwards.
Rule 2: a skill never reaches past its folder. A symlink is followed only to a regular file
        inside the same skill's folder; one that leads elsewhere, a symlinked folder, or
        anything that is neither a regular file nor a folder makes registration fail with a
        `ToolDefinitionError` naming the path. Hidden names (".git", ".env") are left out
        unless asked for, as `add_directory` does. A URI names the file by its path, each
        segment escaped where RFC 3986 needs it.
Rule 3: a skill the extension's limits would make unloadable is never served: more than
        `MAX_SKILL_FILES` files or `MAX_SKILL_BYTES` bytes in all, a name that breaks the
        Agent Skills naming rules or differs from its folder's, a description that is empty
        or too long, front matter `metadata` keys under the reserved `io.modelcontextprotocol/`
        prefix: each is a `ToolDefinitionError` naming the skill. The size check comes before
        any file is read whole.
Rule 4: a client holds an entry and checks every file it reads of the skill against it: the
        byte length first, then the SHA-256 digest, then, for `SKILL.md`, its front matter
        field by field; a file the entry does not list is not read at all. Any mismatch is a
        `SkillVerificationError`, and the content is not handed out.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, unquote

from .._exceptions import RemoteProtocolError, SkillVerificationError, ToolDefinitionError
from .directories import _as_text, _guess, _is_textual
from .frontmatter import FrontMatterError, front_matter, same_json, split_front_matter

__all__ = [
    "DIRECTORY_MIME",
    "MAX_DESCRIPTION",
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "RESERVED_METADATA",
    "SKILLS_EXTENSION",
    "SKILL_FILE",
    "LoadedSkill",
    "Skill",
    "SkillCatalog",
    "SkillFile",
    "SkillInfo",
    "SkillSource",
    "check_file",
    "check_front_matter",
    "digest_of",
    "read_skills",
    "skill_info",
]

#: The extension's identifier, under `capabilities.extensions`.
SKILLS_EXTENSION: Final = "io.modelcontextprotocol/skills"
#: The file every skill has at its root.
SKILL_FILE: Final = "SKILL.md"
#: The MIME type of a directory resource (`resources/directory/read`).
DIRECTORY_MIME: Final = "inode/directory"
# The extension's limits (SEP-2640, Limits): what every conforming host accepts, so what a
# server serves. Counted over a skill's files, SKILL.md included.
MAX_SKILL_FILES: Final = 512
MAX_SKILL_BYTES: Final = 16 * 1024 * 1024
#: The longest description the Agent Skills specification allows (its `description` field).
MAX_DESCRIPTION: Final = 1024
#: Front matter `metadata` keys under this prefix are reserved for MCP extensions.
RESERVED_METADATA: Final = "io.modelcontextprotocol/"
_SCHEME: Final = "skill://"
# The Agent Skills naming rule: 1-64 lowercase letters, digits and hyphens, no hyphen at
# either end nor two in a row.
_NAME: Final = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
# A prefix segment: RFC 3986 unreserved characters (the first is the URI's authority).
_PREFIX_SEGMENT: Final = re.compile(r"[A-Za-z0-9._~-]+")
# Characters of a path segment left as they are in a URI (RFC 3986 pchar, less "%").
_PCHAR: Final = "!$&'()*+,;=:@-._~"
_MARKDOWN: Final = "text/markdown"


def digest_of(data: bytes) -> str:
    """The digest the extension gives a file: "sha256:" and 64 lowercase hex digits."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


# -- the server's side ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SkillSource:
    """One file of a skill as served: its bytes, read once (Rule 1).

    Attributes:
        path: Its path in the skill's folder, "/"-separated ("references/forms.md").
        uri: Its resource URI.
        data: Its bytes.
        digest: `digest_of(data)`.
        mime_type: Its MIME type (text/markdown for SKILL.md, else guessed from its name).
        text: Its text, when it is served as text (UTF-8 of a textual type), else None.
    """

    path: str
    uri: str
    data: bytes
    digest: str
    mime_type: str
    text: str | None

    @property
    def value(self) -> str | bytes:
        """What a read returns: the text, or the bytes (sent as a blob)."""
        return self.text if self.text is not None else self.data


@dataclass(frozen=True, slots=True)
class Skill:
    """A skill as a server serves it (read by `read_skills`).

    Attributes:
        path: Its skill path: its name, after the prefix it was added with ("acme/refunds").
        frontmatter: Its SKILL.md front matter, as JSON.
        files: Its files, SKILL.md first, then by path.
        scopes: OAuth scopes a token must grant to see it and read its files.
    """

    path: str
    frontmatter: dict[str, Any]
    files: tuple[SkillSource, ...]
    scopes: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        """Its name (the front matter's, and its folder's)."""
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        """What it is for (the front matter's)."""
        return str(self.frontmatter["description"])

    @property
    def root(self) -> str:
        """The URI of its folder, a directory resource (no trailing slash)."""
        return _SCHEME + _quoted(self.path)

    @property
    def uri(self) -> str:
        """The URI of its SKILL.md: the skill's identity."""
        return f"{self.root}/{SKILL_FILE}"

    @property
    def size(self) -> int:
        """Its files' bytes in all."""
        return sum(len(file.data) for file in self.files)

    def entry(self) -> dict[str, Any]:
        """Its entry, as `skills/list` and `skills/get` send it."""
        return {
            "uri": self.uri,
            "frontmatter": self.frontmatter,
            "resources": [
                {"uri": file.uri, "digest": file.digest, "size": len(file.data)}
                for file in self.files
            ],
        }


def read_skills(
    folder: str | os.PathLike[str],
    *,
    prefix: str = "",
    hidden: bool = False,
    scopes: Iterable[str] = (),
) -> list[Skill]:
    """The skills in `folder`: itself, if it has a SKILL.md; else each subfolder that has one.

    Subfolders without a SKILL.md are not skills, and are passed over, as are hidden ones (no
    skill's name starts with ".").

    Args:
        folder: A skill's folder, or a folder of skill folders.
        prefix: Path segments put before each skill's name in its URIs ("acme/billing" serves
            `skill://acme/billing/refunds/SKILL.md`).
        hidden: Serve a skill's files and folders whose names start with "." too.
        scopes: OAuth scopes of the skills (see `Skill.scopes`).

    Raises:
        ToolDefinitionError: for a folder that cannot be read or holds no skill, a bad prefix,
            or a skill that cannot be served (Rules 2 and 3).
    """
    where = f"add_skills({str(folder)!r})"
    try:
        base = Path(folder).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ToolDefinitionError(f"{where}: the folder cannot be opened ({exc})") from None
    if not base.is_dir():
        raise ToolDefinitionError(f"{where}: not a folder")
    segments = [segment for segment in prefix.split("/") if segment]
    if any(not _PREFIX_SEGMENT.fullmatch(segment) for segment in segments):
        raise ToolDefinitionError(
            f"{where}: prefix {prefix!r} must be '/'-separated segments of letters, digits and "
            "'.', '_', '~', '-'"
        )
    owned = frozenset(scopes)
    if (base / SKILL_FILE).is_file():
        return [_read_skill(base, "/".join([*segments, base.name]), owned, hidden)]
    skills = [
        _read_skill(sub, "/".join([*segments, sub.name]), owned, hidden)
        for sub in sorted(base.iterdir())
        if sub.is_dir() and not sub.name.startswith(".") and (sub / SKILL_FILE).is_file()
    ]
    if not skills:
        raise ToolDefinitionError(
            f"{where}: no skill here; a skill is a folder with a {SKILL_FILE} (this folder, or "
            "each of its subfolders)"
        )
    return skills


def _read_skill(folder: Path, path: str, scopes: frozenset[str], hidden: bool) -> Skill:
    where = f"skill {str(folder)!r}"
    try:
        real = folder.resolve(strict=True)  # a skill's folder may itself be a symlink
    except (OSError, RuntimeError) as exc:
        raise ToolDefinitionError(f"{where}: the folder cannot be opened ({exc})") from None
    found = list(_walk(real, where, hidden))
    if len(found) > MAX_SKILL_FILES:
        raise ToolDefinitionError(
            f"{where} has {len(found)} files; a skill may have at most {MAX_SKILL_FILES} "
            "(SEP-2640 limits), SKILL.md included"
        )
    total = sum(size for _, _, size in found)
    if total > MAX_SKILL_BYTES:
        raise ToolDefinitionError(
            f"{where} holds {total:,} bytes; a skill may hold at most {MAX_SKILL_BYTES:,} "
            "(16 MiB, SEP-2640 limits)"
        )
    root = _SCHEME + _quoted(path)
    files: list[SkillSource] = []
    for relative, real, size in found:
        data = _read_file(real, size, where, relative)
        mime = _MARKDOWN if relative == SKILL_FILE else (_guess(relative) or "")
        text = _as_text(data, sniff=not mime) if not mime or _is_textual(mime) else None
        if not mime:
            mime = "text/plain" if text is not None else "application/octet-stream"
        files.append(
            SkillSource(relative, f"{root}/{_quoted(relative)}", data, digest_of(data), mime, text)
        )
    files.sort(key=lambda file: (file.path != SKILL_FILE, file.path))
    manifest = files[0]
    if manifest.path != SKILL_FILE or manifest.text is None:
        raise ToolDefinitionError(f"{where}: its {SKILL_FILE} is not UTF-8 text")
    try:
        matter = front_matter(manifest.text)
    except FrontMatterError as exc:
        raise ToolDefinitionError(f"{where}: {SKILL_FILE}: {exc}") from None
    _check_front_matter(matter, folder.name, where)
    return Skill(path, matter, tuple(files), scopes)


def _check_front_matter(matter: dict[str, Any], folder: str, where: str) -> None:
    """The Agent Skills rules an entry must keep (Rule 3)."""
    name = matter.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ToolDefinitionError(
            f"{where}: name {name!r} must be 1-64 lowercase letters, digits and hyphens, with "
            "no hyphen at either end nor two in a row (the Agent Skills naming rules)"
        )
    if name != folder:
        raise ToolDefinitionError(
            f"{where}: name {name!r} differs from its folder's name {folder!r}; they must be "
            "the same (the skill's URI ends with its name)"
        )
    description = matter.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError(f"{where}: the front matter needs a description (text)")
    if len(description) > MAX_DESCRIPTION:
        raise ToolDefinitionError(
            f"{where}: the description is {len(description)} characters; at most "
            f"{MAX_DESCRIPTION} (the Agent Skills specification)"
        )
    metadata = matter.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ToolDefinitionError(f"{where}: metadata must be a mapping of keys to values")
    reserved = sorted(key for key in metadata or {} if key.startswith(RESERVED_METADATA))
    if reserved:
        raise ToolDefinitionError(
            f"{where}: metadata keys under {RESERVED_METADATA!r} are reserved for MCP extensions "
            f"(none is defined yet): {', '.join(reserved)}"
        )


def _walk(folder: Path, where: str, hidden: bool) -> Iterable[tuple[str, Path, int]]:
    """(path in the skill, real path, size) of every file of the skill (Rule 2)."""
    for current, subfolders, names in os.walk(folder, onerror=_raise):
        here = Path(current)
        kept = []
        for sub in sorted(subfolders):
            if not hidden and sub.startswith("."):
                continue
            if (here / sub).is_symlink():
                raise ToolDefinitionError(
                    f"{where}: {_relative(here / sub, folder)} is a symlinked folder, which is "
                    "not followed; put a real folder there"
                )
            kept.append(sub)
        subfolders[:] = kept
        for name in sorted(names):
            if not hidden and name.startswith("."):
                continue
            relative = _relative(here / name, folder)
            try:
                real = (here / name).resolve(strict=True)
                status = real.stat()
            except (OSError, RuntimeError) as exc:
                raise ToolDefinitionError(f"{where}: {relative} cannot be read ({exc})") from None
            if not real.is_relative_to(folder):
                raise ToolDefinitionError(
                    f"{where}: {relative} is a symlink to {str(real)!r}, outside the skill's folder"
                )
            if not stat.S_ISREG(status.st_mode):
                raise ToolDefinitionError(f"{where}: {relative} is not a regular file")
            yield relative, real, status.st_size


def _raise(error: OSError) -> None:
    raise ToolDefinitionError(f"a skill's folder cannot be read ({error})") from None


def _relative(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()


def _read_file(real: Path, size: int, where: str, relative: str) -> bytes:
    # The resolved path, opened without following a symlink put there since, nor waiting on a
    # FIFO: what is read is the regular file that was checked.
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        with os.fdopen(os.open(real, flags), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise ToolDefinitionError(f"{where}: {relative} is not a regular file")
            data = file.read(MAX_SKILL_BYTES + 1)
    except OSError as exc:
        raise ToolDefinitionError(f"{where}: {relative} cannot be read ({exc})") from None
    if len(data) != size:
        raise ToolDefinitionError(f"{where}: {relative} changed while it was read; add it again")
    return data


def _quoted(path: str) -> str:
    """A "/"-separated path as URI path segments (each escaped where it must be)."""
    return "/".join(quote(segment, safe=_PCHAR) for segment in path.split("/"))


@dataclass(frozen=True, slots=True)
class _Folder:
    """A directory resource: the skill it is in (None for a prefix's), its children's entries."""

    skill: Skill | None
    children: dict[str, dict[str, Any]] = field(default_factory=dict)


class SkillCatalog:
    """The skills one server serves: by URI, in the order they were added, and their folders."""

    def __init__(self) -> None:
        self._skills: dict[str, Skill] = {}
        self._entries: dict[str, dict[str, Any]] = {}  # made once: the skills never change
        self._folders: dict[str, _Folder] = {}

    def __len__(self) -> int:
        return len(self._skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._skills.values())

    def get(self, uri: str) -> Skill | None:
        """The skill whose SKILL.md is at `uri`, or None."""
        return self._skills.get(uri)

    def entry(self, skill: Skill) -> dict[str, Any]:
        """The skill's entry (`Skill.entry`), made when it was added: not to be changed."""
        return self._entries[skill.uri]

    def check(self, skills: Sequence[Skill]) -> None:
        """Refuse skills whose URIs are taken (before anything is registered).

        Raises:
            ToolDefinitionError: naming the first URI taken.
        """
        seen = set(self._skills)
        for skill in skills:
            if skill.uri in seen:
                raise ToolDefinitionError(f"a skill is already served at {skill.uri}")
            seen.add(skill.uri)

    def add(self, skills: Sequence[Skill]) -> None:
        """Serve `skills` (`check` them first)."""
        self.check(skills)
        for skill in skills:
            self._skills[skill.uri] = skill
            self._entries[skill.uri] = skill.entry()
            segments = skill.path.split("/")
            for depth in range(1, len(segments)):  # the prefix's folders
                self._child(_SCHEME + _quoted("/".join(segments[:depth])), None, segments[depth])
            self._folders.setdefault(skill.root, _Folder(skill))
            for file in skill.files:
                parts = file.path.split("/")
                folder = skill.root
                for part in parts[:-1]:
                    self._child(folder, skill, part)
                    folder = f"{folder}/{_quoted(part)}"
                self._folders.setdefault(folder, _Folder(skill)).children[file.uri] = {
                    "uri": file.uri,
                    "name": parts[-1],
                    "mimeType": file.mime_type,
                    "size": len(file.data),
                }

    def _child(self, parent: str, skill: Skill | None, name: str) -> None:
        """Record folder `name` as a child of the folder `parent`."""
        uri = f"{parent}/{_quoted(name)}"
        self._folders.setdefault(parent, _Folder(skill)).children.setdefault(
            uri, {"uri": uri, "name": name, "mimeType": DIRECTORY_MIME}
        )
        self._folders.setdefault(uri, _Folder(skill))

    def directory(self, uri: str) -> list[dict[str, Any]] | None:
        """The entries of a folder's children, by URI; None when `uri` is no folder served."""
        folder = self._folders.get(uri)
        if folder is None:
            return None
        return [folder.children[key] for key in sorted(folder.children)]

    def owner(self, uri: str) -> Skill | None:
        """The skill a folder belongs to (None for a prefix's folder, or no folder)."""
        folder = self._folders.get(uri)
        return folder.skill if folder is not None else None

    def scopes_of_folder(self, uri: str) -> frozenset[str]:
        """The scopes needed to read a folder: its skill's, or all its skills' for a prefix's."""
        folder = self._folders.get(uri)
        if folder is None:
            return frozenset()
        if folder.skill is not None:
            return folder.skill.scopes
        inside = [s for s in self._skills.values() if s.root.startswith(uri + "/")]
        return frozenset().union(*(s.scopes for s in inside))


# -- the client's side ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill, as its entry lists it.

    Attributes:
        uri: The file's resource URI.
        digest: "sha256:" and the hex SHA-256 of its bytes.
        size: Its length in bytes.
    """

    uri: str
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class SkillInfo:
    """A skill's entry (`skills/list`, `skills/get`): what a client checks every read against.

    Attributes:
        uri: The URI of its SKILL.md, which identifies it on its server.
        frontmatter: Its SKILL.md front matter, as the server read it.
        files: Every file of the skill, SKILL.md included; None when the server generates
            the skill's content (`"dynamic"`), so no digest can be checked.
        raw: The entry exactly as the server sent it.
    """

    uri: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...] | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        """Its name (the front matter's)."""
        return str(self.frontmatter.get("name", ""))

    @property
    def description(self) -> str:
        """What it is for (the front matter's)."""
        return str(self.frontmatter.get("description", ""))

    @property
    def root(self) -> str:
        """The URI of its folder: its SKILL.md's, without "/SKILL.md"."""
        return self.uri.removesuffix("/" + SKILL_FILE)

    @property
    def size(self) -> int | None:
        """Its files' bytes in all (None for a dynamic skill)."""
        return None if self.files is None else sum(file.size for file in self.files)

    def resolve(self, path: str) -> str | None:
        """The URI `path` names: a URI as it is, a path resolved against the skill's folder.

        None for a path that leaves the folder ("../x") or names the folder itself.
        """
        if "://" in path:
            return path
        parts = [part for part in path.split("/") if part not in ("", ".")]
        if not parts or ".." in parts:
            return None
        return f"{self.root}/{'/'.join(parts)}"

    def file(self, path: str) -> SkillFile | None:
        """The listed file at `path` (a URI, or a path in the skill's folder); None if unlisted.

        A relative path is resolved against the skill's folder; one that leaves it ("../x")
        names nothing of the skill.
        """
        if self.files is None:
            return None
        wanted = self.resolve(path)
        if wanted is None:
            return None
        for file in self.files:
            if file.uri == wanted or unquote(file.uri) == unquote(wanted):
                return file
        return None


@dataclass(frozen=True, slots=True)
class LoadedSkill:
    """A skill whose SKILL.md was fetched and checked against its entry (`Client.load_skill`).

    Attributes:
        info: The entry it was checked against: read the skill's other files with it.
        text: The whole SKILL.md.
        frontmatter: Its front matter, which equals the entry's.
        body: The instructions after the front matter.
        verified: False only for a dynamic skill (no digest to check: its front matter was).
    """

    info: SkillInfo
    text: str
    frontmatter: dict[str, Any]
    body: str
    verified: bool = True


def skill_info(wire: Any, method: str = "skills/list") -> SkillInfo:
    """A skill entry as a `SkillInfo`.

    Raises:
        RemoteProtocolError: for an entry that breaks the extension's shape: no string `uri`
            ending in /SKILL.md, no front matter object with a string `name` and `description`,
            `resources` neither a list of {uri, digest, size} nor "dynamic".
    """

    def malformed(why: str) -> RemoteProtocolError:
        return RemoteProtocolError(f"malformed skill entry in {method} ({why}): {str(wire)[:200]}")

    if not isinstance(wire, dict) or not isinstance(wire.get("uri"), str):
        raise malformed("no uri")
    uri: str = wire["uri"]
    if not uri.endswith("/" + SKILL_FILE):
        raise malformed(f"its uri does not end in /{SKILL_FILE}")
    matter = wire.get("frontmatter")
    if not isinstance(matter, dict):
        raise malformed("no frontmatter object")
    if not isinstance(matter.get("name"), str) or not isinstance(matter.get("description"), str):
        raise malformed("the frontmatter lacks a name or a description")
    resources = wire.get("resources")
    if resources == "dynamic":
        return SkillInfo(uri, matter, None, wire)
    if not isinstance(resources, list):
        raise malformed('resources is neither a list nor "dynamic"')
    files = []
    for item in resources:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("uri"), str)
            and isinstance(item.get("digest"), str)
            and type(item.get("size")) is int
            and item["size"] >= 0
        ):
            raise malformed("a resource without uri, digest and size")
        files.append(SkillFile(item["uri"], item["digest"], item["size"]))
    return SkillInfo(uri, matter, tuple(files), wire)


def check_file(file: SkillFile, data: bytes) -> None:
    """Check bytes read for a listed file against its entry: length, then digest (Rule 4).

    Raises:
        SkillVerificationError: on a mismatch ("size" or "digest").
    """
    if len(data) != file.size:
        raise SkillVerificationError(
            f"{file.uri} is {len(data):,} bytes; its skill entry says {file.size:,}: "
            "not using it (refresh the entry with get_skill if the skill changed)",
            uri=file.uri,
            reason="size",
        )
    digest = digest_of(data)
    if digest != file.digest.lower():
        raise SkillVerificationError(
            f"{file.uri} has digest {digest}; its skill entry says {file.digest}: not using it "
            "(refresh the entry with get_skill if the skill changed)",
            uri=file.uri,
            reason="digest",
        )


def check_front_matter(info: SkillInfo, text: str) -> tuple[dict[str, Any], str]:
    """The front matter and body of a fetched SKILL.md, checked field by field (Rule 4).

    Raises:
        SkillVerificationError: ("frontmatter") when it cannot be read or differs from the
            entry's.
    """
    try:
        matter = front_matter(text)
    except FrontMatterError as exc:
        raise SkillVerificationError(
            f"{info.uri}: its front matter cannot be read ({exc}): not loading it",
            uri=info.uri,
            reason="frontmatter",
        ) from None
    differ = sorted(
        key
        for key in {*matter, *info.frontmatter}
        if not same_json(matter.get(key), info.frontmatter.get(key))
        or (key in matter) != (key in info.frontmatter)
    )
    if differ:
        raise SkillVerificationError(
            f"{info.uri}: its front matter differs from its skill entry's in "
            f"{', '.join(differ)}: not loading it",
            uri=info.uri,
            reason="frontmatter",
        )
    split = split_front_matter(text)
    return matter, split[1] if split is not None else ""
