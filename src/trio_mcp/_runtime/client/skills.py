"""The client's side of the skills extension (SEP-2640): list, get, load and read, all checked.

Rule 1: nothing is fetched ahead of need. Listing (`skills/list`) and getting (`skills/get`)
        send only those methods; a skill's SKILL.md is read when it is loaded (`load`), each
        other file when it is asked for (`read_file`).
Rule 2: every file read is checked against the entry the caller holds (`SkillInfo`) before it
        is handed out: a file the entry does not list is refused without being read, then the
        byte length, the digest and, for SKILL.md, the front matter field by field
        (`_features.skills` Rule 4). A mismatch raises `SkillVerificationError`; the content is
        dropped. A dynamic skill (no digests) is loaded only when the caller allows it, and
        its reads stay inside its folder.
Rule 3: the methods need a server that declared the extension: `list` returns nothing without
        asking (such a server has no skills to list), `get`, `load` and `read_file` refuse with
        `LocalProtocolError` (SEP-2640: clients issue them only after observing the
        declaration).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from ..._core.client_records import ResourceResult
from ..._core.types import ResourceContents
from ..._exceptions import LocalProtocolError, SkillVerificationError
from ..._features.skills import (
    SKILL_FILE,
    SKILLS_EXTENSION,
    LoadedSkill,
    SkillInfo,
    check_file,
    check_front_matter,
    skill_info,
)

__all__ = ["Skills"]

# A SKILL.md longer than this has its front matter read in a worker thread: reading 64 KiB
# takes about a millisecond, which the event loop can spare; a 16 MiB one (the limit) cannot.
_THREADED_TEXT: Final = 64 * 1024


class Skills:
    """The skills methods of one client.

    Args:
        list_all: Pages through a list: `(method, field) -> every item`.
        request: Sends one request: `(method, params) -> result`.
        read: Reads one resource: `uri -> ResourceResult`.
        capabilities: The server's capabilities now.
    """

    def __init__(
        self,
        list_all: Callable[[str, str], Awaitable[list[Any]]],
        request: Callable[[str, dict[str, Any]], Awaitable[Any]],
        read: Callable[[str], Awaitable[ResourceResult]],
        capabilities: Callable[[], dict[str, Any]],
    ) -> None:
        self._list_all = list_all
        self._request = request
        self._read = read
        self._capabilities = capabilities

    @property
    def declared(self) -> bool:
        """Whether the server declared the extension."""
        extensions = self._capabilities().get("extensions")
        return isinstance(extensions, dict) and SKILLS_EXTENSION in extensions

    def _require(self, what: str) -> None:
        if not self.declared:
            raise LocalProtocolError(
                f"{what}: the server does not declare the skills extension ({SKILLS_EXTENSION})"
            )

    async def list(self) -> list[SkillInfo]:
        """Every skill the server lists (Rule 3: none without the extension)."""
        if not self.declared:
            return []
        return [skill_info(item) for item in await self._list_all("skills/list", "skills")]

    async def get(self, uri: str) -> SkillInfo:
        """The entry of the skill whose SKILL.md is at `uri` (`skills/get`)."""
        self._require("get_skill")
        result = await self._request("skills/get", {"uri": uri})
        if not isinstance(result, dict):
            raise LocalProtocolError(f"skills/get answered {str(result)[:200]}")
        return skill_info(result.get("skill"), "skills/get")

    async def load(self, skill: SkillInfo | str, *, allow_dynamic: bool = False) -> LoadedSkill:
        """Fetch a skill's SKILL.md and check it against the entry (Rule 2)."""
        self._require("load_skill")
        info = skill if isinstance(skill, SkillInfo) else await self.get(skill)
        contents, data = await self._fetch(info, info.uri, allow_dynamic)
        text = contents.text
        if text is None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise SkillVerificationError(
                    f"{info.uri}: its {SKILL_FILE} is not UTF-8 text: not loading it",
                    uri=info.uri,
                    reason="frontmatter",
                ) from None
        if len(text) > _THREADED_TEXT:
            matter, body = await trio.to_thread.run_sync(check_front_matter, info, text)
        else:
            matter, body = check_front_matter(info, text)
        return LoadedSkill(info, text, matter, body, verified=info.files is not None)

    async def read_file(
        self, skill: SkillInfo | LoadedSkill, path: str, *, allow_dynamic: bool = False
    ) -> ResourceContents:
        """Read one file of a skill, checked against the entry (Rule 2)."""
        self._require("read_skill_file")
        if isinstance(skill, LoadedSkill):
            skill = skill.info
        listed = skill.file(path)
        uri = listed.uri if listed is not None else skill.resolve(path)
        if uri is None:
            raise _unlisted(skill, path)
        contents, _ = await self._fetch(skill, uri, allow_dynamic)
        return contents

    async def _fetch(
        self, info: SkillInfo, uri: str, allow_dynamic: bool
    ) -> tuple[ResourceContents, bytes]:
        """Read `uri` of the skill `info` and check its bytes: the contents, and the bytes."""
        if info.files is None:
            if not allow_dynamic:
                raise SkillVerificationError(
                    f"{info.uri} is a dynamic skill: its server publishes no digests to check "
                    "its files against (pass allow_dynamic=True to use it unchecked)",
                    uri=info.uri,
                    reason="dynamic",
                )
            if uri != info.uri and not uri.startswith(info.root + "/"):
                raise _unlisted(info, uri)
            listed = None
        else:
            listed = info.file(uri)
            if listed is None:
                raise _unlisted(info, uri)
        result = await self._read(uri)
        found = [part for part in result.contents if part.uri == uri]
        if not found and len(result.contents) == 1:
            found = list(result.contents)
        if len(found) != 1:
            raise SkillVerificationError(
                f"reading {uri} returned {len(result.contents)} contents, none or several of "
                "them for that URI: not using them",
                uri=uri,
                reason="contents",
            )
        contents = found[0]
        if contents.text is not None:
            data = contents.text.encode("utf-8")
        else:
            blob = contents.blob
            data = blob if isinstance(blob, bytes) else str(blob).encode()
        if listed is not None:
            check_file(listed, data)
        return contents, data


def _unlisted(info: SkillInfo, uri: str) -> SkillVerificationError:
    return SkillVerificationError(
        f"{uri} is not a file of skill {info.uri} as its entry lists them: not reading it "
        "(refresh the entry with get_skill if the skill changed)",
        uri=uri,
        reason="unlisted",
    )
