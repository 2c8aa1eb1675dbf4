"""Resource templates an attacker aims at, for `benchmarks/reliability.py` rows 9-11.

    python -m trio_mcp run benchmarks/servers/uri_server.py [--transport http --port 0]

`r://dot/{name}.{ext}` made the regex matcher backtrack for minutes on a URI of dots;
`file:///files/{name}` joins its value to a folder as a careless user would write it, with no
check of its own; `dir:///` serves a folder with `add_directory` (when the library has it),
beside a secret file and with a symlink to it inside. The folders are made at start, in a
temporary folder removed at exit.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from trio_mcp import Server

TOP = Path(tempfile.mkdtemp(prefix="trio-mcp-uri-probe-"))
atexit.register(shutil.rmtree, TOP, ignore_errors=True)
DATA = TOP / "data"
DATA.mkdir()
(DATA / "hello.txt").write_text("hello\n")
(TOP / "secret.txt").write_text("the secret\n")
(DATA / "escape.txt").symlink_to(TOP / "secret.txt")

server = Server("uri-probe")


@server.resource("r://dot/{name}.{ext}")
def dot(name: str, ext: str) -> str:
    return f"{len(name)} {len(ext)}"


@server.resource("file:///files/{name}")
def files(name: str) -> str:
    return (DATA / name).read_text()


if hasattr(server, "add_directory"):  # absent before issue 24: the row says so
    server.add_directory("dir:///", DATA)
