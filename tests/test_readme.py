"""The README's quick start runs as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def quick_start_source() -> str:
    text = README.read_text()
    match = re.search(r"```python\n(# tools\.py\n.*?)```", text, re.DOTALL)
    assert match, "README lost its tools.py quick start"
    return match.group(1)


def test_quick_start_serves_its_tool(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(quick_start_source())
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "readme", "version": "0"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "calculator.divide", "arguments": {"a": 9, "b": 3}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "calculator.divide", "arguments": {"a": 1, "b": 0}},
        },
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "trio_mcp", "run", "tools.py"],
        input="".join(json.dumps(m) + "\n" for m in lines).encode(),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    out = {m["id"]: m for m in map(json.loads, proc.stdout.splitlines())}
    assert out[1]["result"]["serverInfo"]["name"] == "my-tools"
    assert out[2]["result"]["structuredContent"] == {"result": 3.0}
    assert out[3]["result"] == {
        "content": [{"type": "text", "text": "Cannot divide by zero"}],
        "isError": True,
    }


def test_readme_opens_with_the_two_setup_commands() -> None:
    block = re.search(r"```sh\n(.*?)```", README.read_text(), re.DOTALL)
    assert block
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "demo_tools" in commands[0]
    assert commands[1].startswith("bash .ci/run")
