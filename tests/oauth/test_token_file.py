"""`FileTokenStorage`: the OAuth client's tokens in a private JSON file.

Real files in a temporary directory; the concurrent writers are real processes.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from tests.stdio_peer import ROOT
from tests.timing import scaled
from trio_mcp import AuthorizationError, ClientRegistration, FileTokenStorage, OAuthTokens

TOKENS = OAuthTokens(
    access_token="access-SECRET-1",
    refresh_token="refresh-SECRET-2",
    expires_at=1_900_000_000.5,
    scope="mcp offline_access",
    issuer="http://as.test",
)
CLIENT = ClientRegistration("client-1", "client-SECRET-3", "client_secret_basic", "http://as.test")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_round_trip_of_tokens_and_registrations(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    await FileTokenStorage(path).set_tokens("http://mcp.test/mcp", TOKENS)
    await FileTokenStorage(path).set_client("http://as.test", CLIENT)
    fresh = FileTokenStorage(path)  # another run: only the file carries them
    assert await fresh.get_tokens("http://mcp.test/mcp") == TOKENS
    assert await fresh.get_client("http://as.test") == CLIENT
    assert await fresh.get_tokens("http://other.test/mcp") is None
    assert await fresh.get_client("http://other.test") is None
    assert await fresh.resources() == ["http://mcp.test/mcp"]
    await fresh.set_tokens("http://mcp.test/mcp", None)
    assert await FileTokenStorage(path).get_tokens("http://mcp.test/mcp") is None
    assert await FileTokenStorage(path).get_client("http://as.test") == CLIENT
    document = json.loads(path.read_text())
    assert document == {
        "version": 1,
        "tokens": {},
        "clients": {
            "http://as.test": {
                "client_id": "client-1",
                "client_secret": "client-SECRET-3",
                "token_endpoint_auth_method": "client_secret_basic",
                "issuer": "http://as.test",
            }
        },
    }


async def test_a_missing_file_holds_nothing(tmp_path: Path) -> None:
    storage = FileTokenStorage(tmp_path / "none" / "tokens.json")
    assert await storage.get_tokens("http://mcp.test/mcp") is None
    assert await storage.clear() is False
    assert not (tmp_path / "none").exists()  # reading makes nothing


async def test_the_file_is_0600_and_a_directory_it_makes_0700(tmp_path: Path) -> None:
    old = os.umask(0o022)  # the usual umask, which would leave both readable by others
    try:
        path = tmp_path / "config" / "trio-mcp" / "tokens.json"
        await FileTokenStorage(path).set_tokens("http://mcp.test/mcp", TOKENS)
    finally:
        os.umask(old)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert mode(path.with_name("tokens.json.lock")) == 0o600


async def test_writes_replace_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    storage = FileTokenStorage(path)
    await storage.set_tokens("http://a.test/mcp", TOKENS)
    before = path.stat().st_ino
    await storage.set_tokens("http://b.test/mcp", TOKENS)
    # A new file took the old one's name (os.replace), so a reader never sees half of one;
    # no temporary file is left beside it.
    assert path.stat().st_ino != before
    assert sorted(os.listdir(tmp_path)) == ["tokens.json", "tokens.json.lock"]
    assert await storage.resources() == ["http://a.test/mcp", "http://b.test/mcp"]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"tokens": {"http://mcp.test/mcp": {"access_token": "SECRET-9"', "it is not JSON"),
        ('["SECRET-9"]', "it is not a JSON object"),
        ('{"tokens": ["SECRET-9"]}', "its 'tokens' is not a JSON object"),
        ('{"version": 7, "tokens": {}}', "newer than this trio-mcp's"),
        ('{"tokens": {"http://mcp.test/mcp": {"scope": "SECRET-9"}}}', "an entry lacks a"),
        ('{"tokens": {"http://mcp.test/mcp": {"access_token": 9}}}', "an entry's access_token"),
        ('{"tokens": {"http://mcp.test/mcp": "SECRET-9"}}', "an entry is not a JSON object"),
    ],
)
async def test_a_corrupt_file_is_a_clear_error(tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(AuthorizationError) as raised:
        await FileTokenStorage(path).get_tokens("http://mcp.test/mcp")
    message = str(raised.value)
    assert message.startswith(f"the token file {path} is not usable: ")
    assert why in message
    assert "SECRET" not in message
    if "entry" not in why:
        # A write refuses too rather than replace what it cannot read. (A bad entry is only
        # an error when it is read: writing its key replaces it, the others are kept.)
        with pytest.raises(AuthorizationError):
            await FileTokenStorage(path).set_tokens("http://mcp.test/mcp", TOKENS)
        assert path.read_text() == content


async def test_an_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.mkdir()  # a directory where the file should be: reading it fails
    with pytest.raises(AuthorizationError, match=r"cannot read the token file .*tokens\.json"):
        await FileTokenStorage(path).get_tokens("http://mcp.test/mcp")


async def test_a_file_open_to_others_is_made_private_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.json"
    await FileTokenStorage(path).set_tokens("http://mcp.test/mcp", TOKENS)
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="trio_mcp.client.token_file"):
        tokens = await FileTokenStorage(path).get_tokens("http://mcp.test/mcp")
    assert tokens == TOKENS
    assert mode(path) == 0o600
    [record] = caplog.records
    assert record.getMessage() == (
        f"the token file {path} was open to others (mode 0644); it is now 0600. If someone "
        "else could have read it, sign out and in again (trio-mcp logout --all)"
    )


async def test_nothing_shows_a_token_or_secret(tmp_path: Path) -> None:
    storage = FileTokenStorage(tmp_path / "tokens.json")
    await storage.set_tokens("http://mcp.test/mcp", TOKENS)
    await storage.set_client("http://as.test", CLIENT)
    shown = [repr(storage), str(storage), repr(await storage.get_tokens("http://mcp.test/mcp"))]
    shown.append(repr(await storage.get_client("http://as.test")))
    assert all("SECRET" not in text for text in shown), shown
    assert repr(storage) == f"<FileTokenStorage {str(tmp_path / 'tokens.json')!r}>"


async def test_clear_removes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    storage = FileTokenStorage(path)
    await storage.set_tokens("http://mcp.test/mcp", TOKENS)
    assert await storage.clear() is True
    assert not path.exists()
    assert await storage.get_tokens("http://mcp.test/mcp") is None


async def test_two_stores_in_one_process_keep_each_others_keys(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    first, second = FileTokenStorage(path), FileTokenStorage(path)
    async with trio.open_nursery() as nursery:
        for n in range(20):
            nursery.start_soon(first.set_tokens, f"http://first.test/{n}", TOKENS)
            nursery.start_soon(second.set_client, f"http://second.test/{n}", CLIENT)
    assert len(await first.resources()) == 20
    for n in range(20):
        assert await second.get_client(f"http://second.test/{n}") == CLIENT


# Each process writes its own keys, many times over, while the others write theirs.
WRITER = """
import sys, trio
from trio_mcp import FileTokenStorage, OAuthTokens

async def main(path, name):
    storage = FileTokenStorage(path)
    for n in range(25):
        await storage.set_tokens(f"http://{name}.test/{n}", OAuthTokens(access_token=name))

trio.run(main, sys.argv[1], sys.argv[2])
"""


def test_concurrent_processes_writing_different_keys_all_survive(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"writer{n}"], cwd=ROOT)
        for n in range(4)
    ]
    assert [writer.wait(timeout=scaled(60)) for writer in writers] == [0, 0, 0, 0]
    document = json.loads(path.read_text())
    assert len(document["tokens"]) == 4 * 25
    assert document["tokens"]["http://writer3.test/24"] == {
        "access_token": "writer3",
        "token_type": "Bearer",
    }
