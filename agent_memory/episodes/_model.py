"""One agent run as data: the :class:`Episode`, its id, and its Markdown + frontmatter file.

An episode file is ``episodes/<yyyy-mm>/<id>.md``: YAML frontmatter holding every field (the
truth), then a readable Markdown rendering of the same facts (which search also reads). Every
text field is redacted and trimmed before it is built; a file whose fields cannot be fully
understood raises :class:`EpisodeParseError` (the store then quarantines it).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent_memory.errors import InvalidIdError, InvalidInputError
from agent_memory.formats.frontmatter import FrontmatterError, as_text, split_text
from agent_memory.model.drafts import (
    MAX_DETAIL_CHARS,
    MAX_GOAL_CHARS,
    MAX_ID_CHARS,
    MAX_NOTE_CHARS,
    MAX_NOTES,
    MAX_SEQUENCE,
    MAX_SUMMARY_CHARS,
    MAX_TOOL_NAME,
    check_ident,
    clean_text,
    prepare_episode,
)
from agent_memory.model.records import RecordParseError, Scope, normalize_instant, yaml_scalar
from agent_memory.model.scopes import check_namespace

__all__ = [
    "EXITS",
    "STATUSES",
    "Episode",
    "EpisodeParseError",
    "ToolCall",
    "ToolUse",
    "episode_month",
    "gated",
    "new_episode_id",
    "parse_episode",
    "parse_episode_text",
    "validate_episode_id",
    "MAX_DETAIL_CHARS",
    "MAX_GOAL_CHARS",
    "MAX_NOTE_CHARS",
    "MAX_NOTES",
    "MAX_SEQUENCE",
    "MAX_SUMMARY_CHARS",
    "MAX_TOOL_NAME",
]

ID_RE = re.compile(r"ep-(\d{4})(\d{2})(\d{2})-(\d{6})-([0-9a-f]{8})")
EXITS = ("output", "error", "limit", "cancelled", "deferred")
STATUSES = ("ok", "failed", "paused")
OUTCOMES = ("success", "failed", "retried", "denied", "interrupted")
MAX_OWNER_CHARS = MAX_ID_CHARS
MAX_COUNT = 10**15  # token, request and call counts: anything larger is not a real run's
_FLOAT_TEXT = re.compile(r"[+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class EpisodeParseError(RecordParseError):
    """An episode file the store cannot fully understand: quarantined, named by ``doctor``."""


def new_episode_id(started: str) -> str:
    """``ep-YYYYMMDD-HHMMSS-<8 hex>`` from the run's start (UTC) and randomness."""
    when = started.replace("-", "").replace(":", "")
    return f"ep-{when[:8]}-{when[9:15]}-{secrets.token_hex(4)}"


def validate_episode_id(episode_id: object) -> str:
    """``episode_id`` if it is a well-formed episode id, else :class:`InvalidIdError`."""
    if not isinstance(episode_id, str) or not ID_RE.fullmatch(episode_id):
        raise InvalidIdError(f"invalid episode id: {episode_id!r} (expected ep-YYYYMMDD-HHMMSS-xxxxxxxx)")
    return episode_id


def episode_month(episode_id: str) -> str:
    """The ``yyyy-mm`` directory an episode's file lives in."""
    m = ID_RE.fullmatch(validate_episode_id(episode_id))
    assert m is not None
    return f"{m.group(1)}-{m.group(2)}"


def clean(text: Any, limit: int, *, one_line: bool = False) -> str:
    """Redacted, control characters dropped, trimmed to ``limit`` characters with ``…`` (the write gate's
    :func:`agent_memory.model.drafts.clean_text`)."""
    return clean_text(text, limit, one_line=one_line)


def check_owner(name: str, value: object) -> str | None:
    """A session or user id: one line, at most 200 characters, never a secret (the write gate's
    :func:`agent_memory.model.drafts.check_ident`)."""
    return check_ident(name, value)


@dataclasses.dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a run: the tool's name, how it ended, and (when it failed) why."""

    name: str
    outcome: str = "success"
    detail: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class ToolUse:
    """How often one tool was called in a run, and how many of those calls failed or were retried."""

    name: str
    calls: int
    errors: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Episode:
    """One agent run: what it was asked (goal), how it went about it, what worked and failed, how it ended."""

    id: str
    goal: str
    started: str
    ended: str
    status: str = "ok"
    exit: str = "output"
    exit_detail: str = ""
    scope: Scope = Scope.PROJECT
    session_id: str | None = None
    user_id: str | None = None
    run_id: str | None = None
    conversation_id: str | None = None
    source: str = "api"
    tools: tuple[ToolUse, ...] = ()
    sequence: tuple[str, ...] = ()
    worked: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    retries: int = 0
    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    summary: str = ""  # written by a model that refined the episode (``refined_by``); empty otherwise
    refined_by: str | None = None
    git_sha: str | None = None  # the commit the run worked on (hex, 4 to 64 digits)
    verify_exit: int | None = None  # the exit status of the run's verification command (tests, build), when one ran
    namespace: str = ""  # the writer's namespace ('' the root; docs/namespaces.md): stamped by the store
    path: str | None = None

    @property
    def approach(self) -> str:
        """The tools in the order they were called, repeats collapsed: ``search ×2 → get → search``."""
        if not self.sequence:
            return "answered directly (no tool calls)"
        runs: list[list[Any]] = []
        for name in self.sequence:
            if runs and runs[-1][0] == name:
                runs[-1][1] += 1
            else:
                runs.append([name, 1])
        text = " → ".join(f"{n} ×{c}" if c > 1 else n for n, c in runs)
        calls = sum(t.calls for t in self.tools)
        return text + (" → …" if calls > len(self.sequence) else "")

    @property
    def tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def frontmatter(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "goal": self.goal,
            "started": self.started,
            "ended": self.ended,
            "status": self.status,
            "exit": self.exit,
            "scope": self.scope.value,
        }
        optional = {
            "exit_detail": self.exit_detail,
            "session_id": self.session_id,
            "user_id": self.user_id,
            "namespace": self.namespace,  # omitted for the root: a root episode's file is what it was
            "run_id": self.run_id,
            "conversation_id": self.conversation_id,
            "source": self.source,
            "tools": [dataclasses.asdict(t) for t in self.tools],
            "sequence": list(self.sequence),
            "worked": list(self.worked),
            "failed": list(self.failed),
            "retries": self.retries or None,
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "model": self.model,
            "summary": self.summary,
            "refined_by": self.refined_by,
            "git_sha": self.git_sha,
            "verify_exit": self.verify_exit,
        }
        data.update({k: v for k, v in optional.items() if v is not None and v != "" and v != []})
        return data

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field (absent ones as ``None``), plus ``approach`` and ``tokens``."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["scope"] = self.scope.value
        data["tools"] = [dataclasses.asdict(t) for t in self.tools]
        for name in ("sequence", "worked", "failed"):
            data[name] = list(data[name])
        data["approach"] = self.approach
        data["tokens"] = self.tokens
        return data

    def body(self) -> str:
        """The readable Markdown rendering (searched together with the goal)."""
        head = " ".join(self.goal.split())
        lines = [f"# Episode: {head[:80] + ('…' if len(head) > 80 else '')}", "", f"Goal: {self.goal}", ""]
        if self.summary:
            lines += [f"Summary ({self.refined_by or 'refined'}): {self.summary}", ""]
        calls = sum(t.calls for t in self.tools)
        counts = f"{calls} tool call{'s' if calls != 1 else ''}"
        if self.requests is not None:
            counts += f", {self.requests} model request{'s' if self.requests != 1 else ''}"
        lines.append(f"Approach: {self.approach} ({counts})")
        for title, notes in (("Worked", self.worked), ("Failed", self.failed)):
            if notes:
                lines += ["", f"{title}:"] + [f"- {n}" for n in notes]
        lines += ["", f"Exit: {self.exit} ({self.status})" + (f": {self.exit_detail}" if self.exit_detail else "")]
        if self.git_sha or self.verify_exit is not None:
            facts = ([f"commit {self.git_sha}"] if self.git_sha else []) + (
                [f"verification exit {self.verify_exit}"] if self.verify_exit is not None else []
            )
            lines.append("Checked: " + ", ".join(facts))
        if self.tokens is not None or self.cost_usd is not None:
            usage = f"{self.input_tokens or 0} input + {self.output_tokens or 0} output tokens"
            if self.cost_usd is not None:
                usage += f", cost ${self.cost_usd:.6f}"
            lines.append(f"Usage: {usage}")
        return "\n".join(lines)

    def render(self) -> str:
        out = ["---"] + [f"{k}: {_scalar(v)}" for k, v in self.frontmatter().items()] + ["---", self.body()]
        return "\n".join(out) + "\n"


def gated(episode: Episode) -> Episode:
    """``episode`` as it may be stored: through the write gate (:func:`agent_memory.model.drafts.prepare_episode`:
    owners checked, every text redacted and trimmed), whoever built it. Every store's ``write`` and ``replace``
    call this, so a hand-built or refined :class:`Episode` is held to the same rules as :func:`build_episode`'s."""
    if not isinstance(episode, Episode):
        raise InvalidInputError(f"an episode must be an Episode, not {type(episode).__name__}")
    data = prepare_episode(episode.to_dict())
    for name in ("approach", "tokens"):
        data.pop(name, None)
    tools = []
    for t in data["tools"]:
        calls, errors = t.get("calls"), t.get("errors", 0)
        if any(isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < MAX_COUNT for n in (calls, errors)):
            raise InvalidInputError("an episode tool's calls and errors must be whole numbers ≥ 0")
        tools.append(ToolUse(t["name"], calls, errors))
    data["tools"] = tuple(tools)
    for name in ("sequence", "worked", "failed"):
        data[name] = tuple(data[name])
    data["git_sha"], data["verify_exit"] = _git_sha(data.get("git_sha")), _verify_exit(data.get("verify_exit"))
    data["namespace"] = check_namespace(data.get("namespace"))
    try:
        data["scope"] = Scope(str(data.get("scope")))
    except ValueError:
        raise InvalidInputError("an episode's scope must be user, session or project") from None
    return Episode(**data)


def _scalar(value: Any) -> str:
    """One frontmatter value; a float always in a form YAML reads back as that float (``5e-05`` is a *string*
    in YAML 1.1, which wants a dot in the mantissa and a signed exponent: ``5.0e-05``)."""
    if isinstance(value, float) and not isinstance(value, bool):
        return _float_text(value)
    return yaml_scalar(value)


def _float_text(value: float) -> str:
    if not math.isfinite(value):
        raise InvalidInputError("an episode number must be finite")
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if not e:
        return text
    if "." not in mantissa:
        mantissa += ".0"
    if exponent[:1] not in "+-":
        exponent = "+" + exponent
    return f"{mantissa}e{exponent}"


# -- reading a file ---------------------------------------------------------------------------
def _text(data: Mapping[str, Any], name: str, limit: int, *, required: bool = False, one_line: bool = True) -> str | None:
    value = data.get(name)
    if value is None:
        if required:
            raise EpisodeParseError(f"{name} is missing", f"add {name}: …")
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        value = as_text(value)
    if not isinstance(value, str):
        raise EpisodeParseError(f"{name} must be text, not {type(value).__name__}", f"write {name} as quoted text")
    if len(value) > limit or "\x00" in value or (one_line and ("\n" in value or "\r" in value)):
        raise EpisodeParseError(f"{name} must be {'one line of ' if one_line else ''}at most {limit} characters", f"shorten {name}")
    return value


def _when(data: Mapping[str, Any], name: str) -> str:
    text = _text(data, name, 64, required=True)
    norm = normalize_instant(text or "")
    if norm is None:
        raise EpisodeParseError(f"{name} is not an ISO datetime", f"write {name} like 2026-11-22T10:00:00Z")
    return norm


def _count(data: Mapping[str, Any], name: str) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_COUNT:
        raise EpisodeParseError(f"{name} must be a whole number ≥ 0", f"write {name} as a number")
    return value


def _strings(data: Mapping[str, Any], name: str, limit: int, max_items: int) -> tuple[str, ...]:
    value = data.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > max_items or not all(isinstance(v, str) for v in value):
        raise EpisodeParseError(f"{name} must be a list of at most {max_items} texts", f'write {name}: ["…"]')
    if any(len(v) > limit or "\n" in v or "\x00" in v for v in value):
        raise EpisodeParseError(f"an item of {name} is not one line of at most {limit} characters", f"shorten {name}")
    return tuple(value)


def _tools(value: Any) -> tuple[ToolUse, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > 1000:
        raise EpisodeParseError("tools must be a list of {name, calls, errors}", "write tools as a list of mappings")
    out: list[ToolUse] = []
    for item in value:
        if not isinstance(item, dict) or set(item) - {"name", "calls", "errors"}:
            raise EpisodeParseError("each tool must be {name, calls, errors}", "write tools as a list of mappings")
        name = _text(item, "name", MAX_TOOL_NAME, required=True)
        calls, errors = _count(item, "calls") or 0, _count(item, "errors") or 0
        out.append(ToolUse(name or "", calls, errors))
    return tuple(out)


def _scope(data: Mapping[str, Any]) -> tuple[Scope, str | None, str | None]:
    session_id = _text(data, "session_id", MAX_OWNER_CHARS)
    user_id = _text(data, "user_id", MAX_OWNER_CHARS)
    raw = data.get("scope")
    try:
        scope = Scope(str(raw).strip().lower()) if isinstance(raw, str) else None
    except ValueError:
        scope = None
    if scope is None:
        raise EpisodeParseError("scope is missing or unknown", "write scope: user, session or project")
    if scope is Scope.USER and user_id is None:
        raise EpisodeParseError("scope user without a user_id", "add user_id: <the user>")
    if scope is Scope.SESSION and session_id is None:
        raise EpisodeParseError("scope session without a session_id", "add session_id: <the session>")
    return scope, session_id, user_id


def _choice(data: Mapping[str, Any], name: str, allowed: Sequence[str]) -> str:
    value = data.get(name)
    if value not in allowed:
        raise EpisodeParseError(f"{name} must be one of {', '.join(allowed)}", f"write {name}: {allowed[0]}")
    return str(value)


def parse_episode(text: str, episode_id: str, *, path: str | None = None) -> Episode:
    """The :class:`Episode` in a file's text, or :class:`EpisodeParseError` (the file is then quarantined)."""
    return parse_episode_text(text, episode_id, path=path)[0]


def parse_episode_text(text: str, episode_id: str, *, path: str | None = None) -> tuple[Episode, str]:
    """:func:`parse_episode` and the file's Markdown body as written (hand edits included)."""
    try:
        split = split_text(text)
    except FrontmatterError as exc:
        raise EpisodeParseError(exc.reason, exc.fix) from None
    except (RecursionError, MemoryError, OverflowError, TypeError, ValueError) as exc:
        raise EpisodeParseError(f"unreadable frontmatter ({type(exc).__name__})", "simplify the frontmatter") from None
    data = split.data
    if not data:
        raise EpisodeParseError("no frontmatter", "an episode file starts with a '---' block of its fields")
    if data.get("id") != episode_id:
        raise EpisodeParseError("the id in the file does not match its file name", f"write id: {episode_id}")
    scope, session_id, user_id = _scope(data)
    cost = data.get("cost_usd")
    if isinstance(cost, str) and _FLOAT_TEXT.fullmatch(cost.strip()):
        cost = float(cost)  # written as ``5e-05`` by earlier versions: YAML 1.1 reads that as text
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost < 0):
        raise EpisodeParseError("cost_usd must be a number ≥ 0", "write cost_usd as a number")
    return Episode(
        id=episode_id,
        goal=_text(data, "goal", MAX_GOAL_CHARS + 1, required=True, one_line=False) or "",
        started=_when(data, "started"),
        ended=_when(data, "ended"),
        status=_choice(data, "status", STATUSES),
        exit=_choice(data, "exit", EXITS),
        exit_detail=_text(data, "exit_detail", MAX_DETAIL_CHARS + 1, one_line=False) or "",
        scope=scope,
        session_id=session_id,
        user_id=user_id,
        run_id=_text(data, "run_id", MAX_OWNER_CHARS),
        conversation_id=_text(data, "conversation_id", MAX_OWNER_CHARS),
        source=_text(data, "source", 32) or "api",
        tools=_tools(data.get("tools")),
        sequence=_strings(data, "sequence", MAX_TOOL_NAME, MAX_SEQUENCE),
        worked=_strings(data, "worked", MAX_NOTE_CHARS + 1, MAX_NOTES),
        failed=_strings(data, "failed", MAX_NOTE_CHARS + 1, MAX_NOTES),
        retries=_count(data, "retries") or 0,
        requests=_count(data, "requests"),
        input_tokens=_count(data, "input_tokens"),
        output_tokens=_count(data, "output_tokens"),
        cost_usd=None if cost is None else float(cost),
        model=_text(data, "model", MAX_OWNER_CHARS),
        path=path,
        summary=_text(data, "summary", MAX_SUMMARY_CHARS + 1, one_line=False) or "",
        refined_by=_text(data, "refined_by", MAX_OWNER_CHARS),
        git_sha=_git_sha(data.get("git_sha"), EpisodeParseError),
        verify_exit=_verify_exit(data.get("verify_exit"), EpisodeParseError),
        namespace=_namespace(data.get("namespace")),
    ), split.body


def _namespace(value: Any) -> str:
    try:
        return check_namespace(value)
    except InvalidInputError as exc:
        raise EpisodeParseError(str(exc), "write namespace: a/b (or remove the line for the root)") from None


_SHA = re.compile(r"[0-9a-f]{4,64}")


def _git_sha(value: Any, error: type[Exception] = InvalidInputError) -> str | None:
    """A commit id (4 to 64 hex digits, lower-cased), or None."""
    if value is None or value == "":
        return None
    text = str(value).strip().lower() if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    if text is None or not _SHA.fullmatch(text):
        raise error("git_sha must be a commit id: 4 to 64 hexadecimal digits")
    return text


def _verify_exit(value: Any, error: type[Exception] = InvalidInputError) -> int | None:
    """A verification command's exit status (a whole number from -255 to 255), or None."""
    if value is None:
        return None
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,3}", value.strip()):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not -255 <= value <= 255:
        raise error("verify_exit must be a whole number from -255 to 255 (a command's exit status)")
    return value


def tool_uses(calls: Iterable[ToolCall]) -> tuple[ToolUse, ...]:
    """Per-tool counts in the order of first use."""
    counts: dict[str, list[int]] = {}
    for call in calls:
        entry = counts.setdefault(call.name, [0, 0])
        entry[0] += 1
        entry[1] += call.outcome != "success"
    return tuple(ToolUse(name, c, e) for name, (c, e) in counts.items())
