"""Test doubles shared by several test files: toy embedders, a local JSON-over-HTTP server, the JSON CLI runner.

Import as ``from _doubles import ...`` (the tests folder is on the path, as for ``_pg``). Nothing here touches the
network beyond 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

if TYPE_CHECKING:
    import numpy as np
    from pydantic_ai.messages import ModelMessage

    from agent_memory.integrations.pydantic_ai import MemoryTurn

# -- toy embedders ---------------------------------------------------------------------------------------------


def concept_vectors_for(concepts: Mapping[str, int], dim: int = 8) -> Callable[[list[str]], list[list[float]]]:
    """A toy "meaning": each word in ``concepts`` adds 1 on its axis (so synonyms share one), any other word adds
    0.05 on one of the last ``dim - 4`` axes chosen by its hash (a little deterministic noise)."""
    noise = dim - 4

    def vectors(texts: list[str]) -> list[list[float]]:
        out = []
        for t in texts:
            v = [0.0] * dim
            for w in t.lower().replace("?", " ").replace(".", " ").split():
                if w in concepts:
                    v[concepts[w]] += 1.0
                else:
                    v[4 + int(hashlib.md5(w.encode()).hexdigest(), 16) % noise] += 0.05
            out.append(v)
        return out

    return vectors


def letter_vectors(texts: list[str]) -> np.ndarray:
    """A tiny deterministic embedder: letter counts (26 axes, a small bias on each)."""
    import numpy as np  # not in every venv the doubles are imported in (.venv-litellm)

    out = np.full((len(texts), 26), 0.01, dtype=np.float32)
    for i, text in enumerate(texts):
        for ch in text.lower():
            if "a" <= ch <= "z":
                out[i, ord(ch) - 97] += 1.0
    return out


# -- a local JSON-over-HTTP server (fake OpenAI-compatible endpoints) ------------------------------------------

Route = Callable[[str, dict[str, Any], Any], tuple[int, "dict[str, Any] | bytes"]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeJSONServer:
    """A threaded HTTP server on 127.0.0.1 answering every POST with ``route(path, body, headers)``.

    ``route`` returns ``(status, payload)``: a dict is sent as JSON, bytes as they are. A client that hangs up
    before the answer (a timeout test) is not an error. Use as a context manager, or ``start()`` / ``stop()``.
    """

    def __init__(self, route: Route, get: Callable[[str], tuple[int, Any]] | None = None) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server API
                self._answer(*(get(self.path) if get is not None else (404, {"error": "no GET here"})))

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"{}")
                self._answer(*route(self.path, body, self.headers))

            def _answer(self, status: int, payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the CLI ---------------------------------------------------------------------------------------------------


def cli_target(kind: str, tmp_path: Path) -> str:
    """A new target for CLI tests: an initialised files root under ``tmp_path``, or a PostgreSQL database of its own
    (the CLI's default schema is shared by the session)."""
    if kind == "postgres":
        from _matrix import fresh_database
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)
    root = str(tmp_path / "root")
    cli_json(root, "init")
    return root


def cli_json(root: Path | str, *args: str, ok: bool = True) -> Any:
    """``agent-memory --root ROOT --json ARGS`` in a subprocess; asserts the exit status (0 unless ``ok=False``)
    and returns the parsed stdout."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), "--json", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert (out.returncode == 0) is ok, out.stderr
    return json.loads(out.stdout)


# -- scripted models (pydantic-ai FunctionModel bodies) ---------------------------------------------------------


def first_prompt(messages: Sequence[ModelMessage]) -> str:
    """The user prompt a worker's model was given: the last part of the first message."""
    from pydantic_ai.messages import UserPromptPart

    part = messages[0].parts[-1]
    assert isinstance(part, UserPromptPart), part
    return str(part.content)


def returned(part: object) -> dict[str, Any]:
    """The structured content of a tool's return part (what a memory tool answered)."""
    content = getattr(part, "content", None)
    assert isinstance(content, dict), part
    return content


def tool_returns(messages: Sequence[ModelMessage], tool: str) -> list[Any]:
    """What ``tool`` returned to the model so far, oldest first."""
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    return [
        p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart) and p.tool_name == tool
    ]


def plain_tools(toolset: Any) -> dict[str, Callable[..., Awaitable[Any]]]:
    """A memory toolset's tools as the plain async functions they are (none takes a RunContext), by name."""
    return {name: tool.function for name, tool in toolset.tools.items()}


def last_turn(capability: Any) -> MemoryTurn:
    """What a ``MemoryCapability`` did in its last run (asserting it ran)."""
    turn = capability.last_turn
    assert turn is not None, "the capability has not run"
    return cast("MemoryTurn", turn)


# -- owners of sessions: a log message, an episode and a session record each (purge tests) ------------------------
Owner = tuple[str | None, str]  # (user, session)


def owner_word(user: str | None, sid: str) -> str:
    """A word only that owner's data holds."""
    return f"{user or 'nobody'}-{sid}"


async def fill_owners(provider: Any, owners: Sequence[Owner]) -> dict[Owner, str]:
    """Give every owner a log message, an episode and a session record; their record ids."""
    ids = {}
    for user, sid in owners:
        word = owner_word(user, sid)
        await provider.log_messages([{"role": "user", "text": f"{word} says hi"}], session_id=sid, user_id=user)
        await provider.record_episode(f"{word} works", user_id=user, session_id=sid)
        rec = await provider.remember(f"{word} noted a fact.", user_id=user, session_id=sid, scope="session")
        ids[(user, sid)] = rec.id
    return ids


async def owned_left(provider: Any, owners: Sequence[Owner]) -> set[tuple[str, str | None, str]]:
    """What each owner still sees of its own: ("log" | "episode" | "record", user, session)."""
    out = set()
    for user, sid in owners:
        if any(i.session_id == sid and i.user_id == user for i in await provider.sessions(session_id=sid, user_id=user)):
            out.add(("log", user, sid))
        if any(e.session_id == sid and e.user_id == user for e in await provider.episodes(session_id=sid, user_id=user)):
            out.add(("episode", user, sid))
        if any(r.session_id == sid and r.user_id == user for r in await provider.list(session_id=sid, user_id=user)):
            out.add(("record", user, sid))
    return out
