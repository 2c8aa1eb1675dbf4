"""Resource URIs a client may not abuse: the length cap, the value rules, `add_directory`.

In-process over memory channels, in both eras (2025-11-25 with a handshake, 2026-07-28 without),
through the real dispatch path. Every answer is checked against the official schema of its
revision. The same attacks over a subprocess and HTTP are rows of
`tests/transports/test_primitive_errors.py`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import MODERN, ask, session
from tests.timing import scaled
from trio_mcp import Limits, ResourceContents, Server, ToolDefinitionError
from trio_mcp._features.directories import _open_beneath

TIMEOUT = scaled(60)
HANDSHAKE = "2025-11-25"
ERAS = [HANDSHAKE, MODERN]
# What each era answers for a URI that names nothing.
NOT_FOUND = {HANDSHAKE: -32002, MODERN: -32602}
TRAVERSALS = [
    "file:///files/..%2F..%2F..%2Fetc%2Fpasswd",
    "file:///files/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "file:///files/%2Fetc%2Fpasswd",
    "file:///files/..",
    "file:///files/a%5C..%5Cb",
    "file:///files/a%00.txt",
]


def naive_files(data: Path, **options: Any) -> Server:
    """A server whose template joins what it is given to a folder, as a careless user would."""
    server = Server("naive", **options)

    @server.resource("file:///files/{name}")
    def files(name: str) -> str:
        return (data / name).read_text()

    return server


# -- the length cap --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
async def test_a_uri_over_the_cap_is_refused_naming_the_cap(tmp_path: Path, version: str) -> None:
    server = naive_files(tmp_path)
    async with session(server, version) as peer:
        for method in ("resources/read", "resources/subscribe"):
            if method == "resources/subscribe" and version == MODERN:
                continue  # 2026-07-28 has no resources/subscribe
            response = await ask(peer, method, {"uri": "file:///files/" + "a" * 70_000}, version)
            error = response["error"]
            assert error["code"] == -32602
            assert "70,014 characters long" in error["message"]
            assert "at most 65,536 (Limits(max_uri_length=...))" in error["message"]
            assert error["data"] == {"maxUriLength": 65536}
        ok = await ask(peer, "resources/read", {"uri": "file:///files/" + "a" * 60_000}, version)
        assert ok["error"]["code"] == -32603  # matched: the file is missing, the function says


async def test_the_cap_is_a_server_option(tmp_path: Path) -> None:
    (tmp_path / "abc").write_text("x")
    server = naive_files(tmp_path, limits=Limits(max_uri_length=16))
    async with session(server, HANDSHAKE) as peer:
        assert (await ask(peer, "resources/read", {"uri": "file:///files/abc"}, HANDSHAKE))[
            "error"
        ]["data"] == {"maxUriLength": 16}
    with pytest.raises(ValueError, match="max_uri_length must be positive"):
        Limits(max_uri_length=0)


# -- the value rules -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("uri", TRAVERSALS)
async def test_traversals_never_reach_the_function(tmp_path: Path, version: str, uri: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "secret").write_text("the secret")
    server = naive_files(data)
    async with session(server, version) as peer:
        response = await ask(peer, "resources/read", {"uri": uri}, version)
    error = response["error"]
    assert error["code"] == -32602, error
    assert error["message"].startswith(f"Invalid params: {uri} matches a resource template, but:")
    assert "- name: " in error["message"]
    assert "a path belongs in {+name}" in error["message"]
    assert error["data"] == {"uri": uri}


@pytest.mark.parametrize(
    ("template", "uri", "seen"),
    [
        ("x://p/{+path}", "x://p/a/./b//c/", "a/b/c"),
        ("x://p/{+path}", "x://p/a/../b", "b"),
        ("x://p/{+path}", "x://p//etc/passwd", "etc/passwd"),
        ("x://p/{+path}", "x://p/a%2F..%2F..%2Fetc", None),
        ("x://p/{+path}", "x://p/a%5Cb", None),
        ("x://p{/path*}", "x://p/a/b%2Fc/../d", ["a", "b", "d"]),
        ("x://p{/path*}", "x://p/../x", None),
        ("x://q{?path}", "x://q?path=a/b", None),
        ("x://q{?path}", "x://q?path=..", None),
        ("x://e{.path}", "x://e.a%2Fb", None),
    ],
)
async def test_path_forms_are_normalised_and_plain_ones_checked(
    template: str, uri: str, seen: str | list[str] | None
) -> None:
    server = Server()
    got: list[Any] = []

    @server.resource(template)
    def read(path: Any) -> str:
        got.append(path)
        return "read"

    async with session(server, HANDSHAKE) as peer:
        response = await ask(peer, "resources/read", {"uri": uri}, HANDSHAKE)
    if seen is None:
        assert response["error"]["code"] == -32602
        assert got == []
    else:
        assert response["result"]["contents"][0]["text"] == "read"
        assert got == [seen]


async def test_verbatim_variables_take_any_value() -> None:
    server = Server()

    @server.resource("search://docs{?q}", verbatim=["q"])
    def search(q: str) -> str:
        return f"results for {q}"

    async with session(server, HANDSHAKE) as peer:
        response = await ask(peer, "resources/read", {"uri": "search://docs?q=AC/DC"}, HANDSHAKE)
    assert response["result"]["contents"][0]["text"] == "results for AC/DC"


def test_verbatim_names_variables_of_the_template() -> None:
    def one(a: str) -> str:
        return a

    with pytest.raises(ToolDefinitionError, match="verbatim names nope, which the template lacks"):
        Server().add_resource("x://{a}", one, verbatim=["nope"])
    with pytest.raises(ToolDefinitionError, match="has no variables"):
        Server().add_resource("x://plain", "a value", verbatim=["a"])


# -- the event loop --------------------------------------------------------------------------------


async def test_a_ping_behind_a_hostile_read_is_answered_while_the_read_waits() -> None:
    """A 64 KiB URI that made the regex matcher backtrack for minutes, then a ping.

    The template's function waits until the ping has been answered: with the match on the
    event loop (or slow), the ping would wait behind it and the test would time out.
    """
    server = Server()
    pinged = threading.Event()

    @server.resource("r://dot/{name}.{ext}")
    def dot(name: str, ext: str) -> str:
        pinged.wait(TIMEOUT)
        return f"{len(name)} {len(ext)}"

    hostile = "r://dot/" + "." * (64 * 1024 - 20)
    async with session(server, HANDSHAKE) as peer:
        read_id = await peer.start_request("resources/read", {"uri": hostile})
        ping_id = await peer.start_request("ping", {})
        answers: list[Any] = []
        while len(answers) < 2:
            answer = await peer.receive()
            answers.append(answer["id"])
            if answer["id"] == ping_id:
                pinged.set()
        assert answers == [ping_id, read_id]
        failing = await ask(peer, "resources/read", {"uri": hostile + "/"}, HANDSHAKE)
        assert failing["error"]["code"] == -32002


async def test_long_uris_are_read_and_watched_like_short_ones(tmp_path: Path) -> None:
    """Past 4 KiB a URI is matched in a worker thread: same answers, to reads and subscribes."""
    name = "a" * 5000
    (tmp_path / name[:200]).write_text("long")
    server = Server()

    @server.resource("file:///long/{name}")
    def long_name(name: str) -> str:
        return (tmp_path / name[:200]).read_text()

    async with session(server, HANDSHAKE) as peer:
        read = await ask(peer, "resources/read", {"uri": f"file:///long/{name}"}, HANDSHAKE)
        watched = await ask(peer, "resources/subscribe", {"uri": f"file:///long/{name}"}, HANDSHAKE)
        refused = await ask(
            peer, "resources/subscribe", {"uri": f"file:///long/{name}/"}, HANDSHAKE
        )
        unsafe = await ask(peer, "resources/read", {"uri": f"file:///long/{name}%2F"}, HANDSHAKE)
    assert read["result"]["contents"][0]["text"] == "long"
    assert watched["result"] == {}
    assert refused["error"]["code"] == -32002
    assert unsafe["error"]["code"] == -32602


# -- add_directory ---------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder to serve, and beside it what must never be served."""
    root = tmp_path / "docs"
    (root / "guide").mkdir(parents=True)
    (root / "README.md").write_text("# Read me\n")
    (root / "guide" / "intro.txt").write_text("intro")
    (root / "guide" / "data.json").write_text('{"a": 1}')
    (root / "pixel.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "notes").write_text("plain notes, no suffix")
    (root / "blob").write_bytes(b"\x00\x01\x02")
    (root / "big.txt").write_text("x" * 100)
    (root / ".env").write_text("TOKEN=secret")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]")
    (tmp_path / "secret.txt").write_text("the secret")
    (root / "escape.txt").symlink_to(tmp_path / "secret.txt")
    (root / "outside").symlink_to(tmp_path, target_is_directory=True)
    (root / "inside.txt").symlink_to(root / "README.md")
    os.mkfifo(root / "pipe")
    return root


def directory_server(tree: Path, **options: Any) -> Server:
    server = Server("dirs")
    server.add_resource("x://static", "a static resource")
    server.add_directory("file:///docs/", tree, max_bytes=50, **options)
    return server


@pytest.mark.parametrize("version", ERAS)
async def test_a_directory_lists_and_serves_its_files(tree: Path, version: str) -> None:
    async with session(directory_server(tree), version) as peer:
        listed = (await ask(peer, "resources/list", {}, version))["result"]["resources"]
        templates = (await ask(peer, "resources/templates/list", {}, version))["result"]
        read = {}
        for uri in ("README.md", "guide/intro.txt", "guide/data.json", "pixel.png", "notes"):
            response = await ask(peer, "resources/read", {"uri": "file:///docs/" + uri}, version)
            read[uri] = response["result"]["contents"][0]
        blob = await ask(peer, "resources/read", {"uri": "file:///docs/blob"}, version)
    assert [entry["uri"] for entry in listed] == [
        "x://static",
        "file:///docs/README.md",
        "file:///docs/blob",
        "file:///docs/inside.txt",
        "file:///docs/notes",
        "file:///docs/pixel.png",
        "file:///docs/guide/data.json",
        "file:///docs/guide/intro.txt",
    ]
    assert listed[1] == {
        "uri": "file:///docs/README.md",
        "name": "README.md",
        "mimeType": "text/markdown",
        "size": 10,
    }
    assert templates["resourceTemplates"][0]["uriTemplate"] == "file:///docs/{+path}"
    assert read["README.md"] == {
        "uri": "file:///docs/README.md",
        "mimeType": "text/markdown",
        "text": "# Read me\n",
    }
    assert read["guide/data.json"]["mimeType"] == "application/json"
    assert read["guide/data.json"]["text"] == '{"a": 1}'
    assert read["pixel.png"] == {
        "uri": "file:///docs/pixel.png",
        "mimeType": "image/png",
        "blob": "iVBORw0KGgo=",
    }
    assert read["notes"]["mimeType"] == "text/plain"  # unknown type, UTF-8 bytes: text
    assert blob["result"]["contents"][0]["mimeType"] == "application/octet-stream"


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize(
    "path",
    [
        "escape.txt",  # a symlink to a file outside
        "outside/secret.txt",  # through a symlink to a folder outside
        ".env",  # hidden
        ".git/config",
        "missing.txt",
        "guide",  # a folder
        "pipe",  # a FIFO: opening it would block
        "",
    ],
)
async def test_a_directory_never_serves_what_lies_outside(
    tree: Path, version: str, path: str
) -> None:
    uri = "file:///docs/" + path
    async with session(directory_server(tree), version) as peer:
        response = await ask(peer, "resources/read", {"uri": uri}, version)
    assert response["error"] == {
        "code": NOT_FOUND[version],
        "message": f"Resource not found: {uri}",
        "data": {"uri": uri},
    }


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize(
    "path", ["..%2Fsecret.txt", "guide/../../secret.txt", "%2e%2e/secret.txt", "a%5Cb", "a%00"]
)
async def test_a_directory_refuses_escapes_in_the_uri(tree: Path, version: str, path: str) -> None:
    uri = "file:///docs/" + path
    async with session(directory_server(tree), version) as peer:
        response = await ask(peer, "resources/read", {"uri": uri}, version)
    assert response["error"]["code"] == -32602
    assert "- path: " in response["error"]["message"]


async def test_a_file_over_max_bytes_is_refused_and_not_listed(tree: Path) -> None:
    async with session(directory_server(tree), HANDSHAKE) as peer:
        listed = (await ask(peer, "resources/list", {}, HANDSHAKE))["result"]["resources"]
        response = await ask(peer, "resources/read", {"uri": "file:///docs/big.txt"}, HANDSHAKE)
    assert "file:///docs/big.txt" not in [entry["uri"] for entry in listed]
    assert response["error"]["code"] == -32603
    assert (
        "big.txt is 100 bytes, more than the 50 this directory serves"
        in (response["error"]["message"])
    )


async def test_globs_hidden_files_and_other_uri_forms(tree: Path) -> None:
    server = Server()
    server.add_directory("notes:", tree, glob=["*.md", "guide/**/*.json"])
    server.add_directory("all://root{/path*}", tree, hidden=True)
    server.add_directory("top://{name}", tree)
    async with session(server, HANDSHAKE) as peer:
        listed = (await ask(peer, "resources/list", {}, HANDSHAKE))["result"]["resources"]
        reads = {}
        for uri in (
            "notes:README.md",
            "notes:guide/intro.txt",
            "all://root/.git/config",
            "all://root/guide/intro.txt",
            "top://README.md",
            "top://guide%2Fintro.txt",
        ):
            reads[uri] = await ask(peer, "resources/read", {"uri": uri}, HANDSHAKE)
    uris = [entry["uri"] for entry in listed]
    assert [u for u in uris if u.startswith("notes:")] == [
        "notes:README.md",
        "notes:guide/data.json",
    ]
    assert "all://root/.git/config" in uris
    assert "all://root/guide/intro.txt" in uris
    assert [u for u in uris if u.startswith("top:")] == [
        "top://README.md",
        "top://big.txt",
        "top://blob",
        "top://inside.txt",
        "top://notes",
        "top://pixel.png",
    ]
    assert reads["notes:README.md"]["result"]["contents"][0]["text"] == "# Read me\n"
    assert reads["notes:guide/intro.txt"]["error"]["code"] == -32002  # not in the globs
    assert reads["all://root/.git/config"]["result"]["contents"][0]["text"] == "[core]"
    assert reads["all://root/guide/intro.txt"]["result"]["contents"][0]["text"] == "intro"
    assert reads["top://README.md"]["result"]["contents"][0]["text"] == "# Read me\n"
    assert reads["top://guide%2Fintro.txt"]["error"]["code"] == -32602  # "/" in a {name}


async def test_a_directory_list_pages_after_the_static_resources(tree: Path) -> None:
    server = Server(page_size=3)
    server.add_resource("x://static", "a static resource")
    server.add_directory("file:///docs/", tree)
    seen: list[str] = []
    async with session(server, HANDSHAKE) as peer:
        cursor = None
        while True:
            params: dict[str, Any] = {"cursor": cursor} if cursor else {}
            page = (await ask(peer, "resources/list", params, HANDSHAKE))["result"]
            assert len(page["resources"]) <= 3
            seen += [entry["uri"] for entry in page["resources"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        bad = await ask(peer, "resources/list", {"cursor": 5}, HANDSHAKE)
    assert seen[0] == "x://static"
    assert len(seen) == len(set(seen)) == 9
    assert bad["error"]["code"] == -32602


def test_add_directory_refuses_what_cannot_serve_a_folder(tmp_path: Path) -> None:
    server = Server()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ToolDefinitionError, match="the root cannot be opened"):
        server.add_directory("x:", tmp_path / "missing")
    with pytest.raises(ToolDefinitionError, match="the root is not a folder"):
        server.add_directory("x:", tmp_path / "file")
    for uri in ("x://{a}/{b}", "x://{a:3}", "x://{?q}", "x://{.ext}"):
        with pytest.raises(ToolDefinitionError, match="one path variable"):
            server.add_directory(uri, tmp_path)
    template = server.add_directory("file:///data", tmp_path, name="data", scopes=["read"])
    assert template.uri_template == "file:///data/{+path}"
    assert template.name == "data"
    assert template.scopes == frozenset({"read"})


async def test_a_directory_read_runs_the_confined_read(tree: Path) -> None:
    """The read is the template's function: a `ResourceContents` with the guessed type."""
    template = directory_server(tree).resource_templates[0]
    assert template.fn is not None
    contents = template.fn(path="guide/intro.txt")
    assert contents == ResourceContents(text="intro", mime_type="text/plain")


def test_a_read_opens_its_file_without_following_a_symlink(tree: Path) -> None:
    """A symlink put in place of a folder or of the file between the check and the open (a
    race) makes the read fail instead of leaving the folder."""
    descriptor = _open_beneath(tree, ("guide", "intro.txt"))
    os.close(descriptor)
    (tree / "swapped").symlink_to(tree.parent, target_is_directory=True)
    for parts in (("swapped", "secret.txt"), ("escape.txt",), ("outside", "secret.txt")):
        with pytest.raises(OSError, match=r"symbolic links|Not a directory"):
            _open_beneath(tree, parts)
