"""Stateless trio-mcp servers behind nginx, as one benchmark peer for `benchmarks/http_bench.py`.

    python benchmarks/servers/behind_nginx.py [--servers N]

Starts N single-process `trio-mcp run benchmarks/servers/trio_mcp_http.py --transport http
--stateless` servers on free loopback ports and nginx in front of them with the shipped
`deploy/nginx.conf` (its ports replaced, its prefix a temporary directory), prints `serving MCP
on <url>` on stderr once nginx accepts connections, and stops them all on SIGTERM or SIGINT.
Exits 3 with a message when nginx is not installed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TARGET = HERE / "trio_mcp_http.py"
START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def nginx_binary() -> str | None:
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def wait_listening(port: int, process: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"exited {process.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.05)
        else:
            return
    sys.exit(f"nothing listened on {port} within {START_TIMEOUT:.0f} s")


def config(front: int, backs: list[int]) -> str:
    text = (ROOT / "deploy" / "nginx.conf").read_text()
    lines = "".join(f"        server 127.0.0.1:{port};\n" for port in backs)
    text = re.sub(r"(        server 127\.0\.0\.1:800[1-9];\n)+", lines, text, count=1)
    head = "user root;\n" if os.geteuid() == 0 else ""  # nobody cannot enter a root temp dir
    return head + text.replace("127.0.0.1:8000", f"127.0.0.1:{front}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--servers", type=int, default=2)
    args = parser.parse_args()
    nginx = nginx_binary()
    if nginx is None:
        print("nginx is not installed (apt-get install nginx)", file=sys.stderr)
        return 3
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    processes: list[subprocess.Popen[Any]] = []
    with tempfile.TemporaryDirectory(prefix="trio-mcp-nginx-") as prefix:
        try:
            backs = [free_port() for _ in range(args.servers)]
            for port in backs:
                command = [sys.executable, "-m", "trio_mcp", "run", str(TARGET)]
                command += ["--transport", "http", "--stateless", "--port", str(port)]
                command += ["--allow-host", "127.0.0.1"]
                processes.append(subprocess.Popen(command, stdin=subprocess.DEVNULL))
            for port, process in zip(backs, processes, strict=True):
                wait_listening(port, process)
            front = free_port()
            conf = Path(prefix) / "nginx.conf"
            conf.write_text(config(front, backs))
            command = [nginx, "-p", prefix, "-c", str(conf), "-e", "stderr"]
            processes.append(subprocess.Popen(command, stdin=subprocess.DEVNULL))
            wait_listening(front, processes[-1])
            print(f"serving MCP on http://127.0.0.1:{front}/mcp", file=sys.stderr, flush=True)
            while not stop and all(p.poll() is None for p in processes):
                time.sleep(0.1)
        finally:
            for process in processes:
                if process.poll() is None:
                    process.terminate()
            for process in processes:
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
