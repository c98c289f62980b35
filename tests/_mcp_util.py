"""Helpers for the MCP end-to-end tests: a seeded root, a server subprocess, a client session."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

from _doubles import free_port as free_port  # re-exported: the MCP tests import it from here
from mcp import ClientSession
from mcp.types import ToolAnnotations

PY = sys.executable


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYDANTIC_AI_NO_BANNER": "1"}, **extra)
    return env


def start_http(root: Path, *args: str, port: int, env: dict[str, str] | None = None, host: str = "127.0.0.1") -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [PY, "-m", "agent_memory.mcp", "--root", str(root), "--transport", "http", "--port", str(port), "--host", host, *args],
        env=env or server_env(),
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start")


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def payload(result: Any) -> dict[str, Any]:
    """The structured result of a successful tool call."""
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    assert isinstance(data, dict)
    return data


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def write_tokens(path: Path, tokens: dict[str, dict[str, str]]) -> Path:
    path.write_text(json.dumps({"tokens": tokens}), encoding="utf-8")
    return path


def resource_text(result: Any) -> str:
    """The text of a read resource (the memory resources are all text)."""
    from mcp.types import TextResourceContents

    content = result.contents[0]
    assert isinstance(content, TextResourceContents), content
    return content.text


def hints(tool: Any) -> ToolAnnotations:
    """A listed tool's annotations (every memory tool has them)."""
    assert tool.annotations is not None, tool.name
    return cast(ToolAnnotations, tool.annotations)
