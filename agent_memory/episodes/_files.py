"""Episode files on disk: reading one defensively (anything not fully understood is an
:class:`~agent_memory.episodes._model.EpisodeParseError`, i.e. quarantined), scanning the month
directories, judging a file's owner for a purge, and dropping the derived index."""

from __future__ import annotations

import contextlib
import errno
import os
import re
from pathlib import Path

from agent_memory.episodes._model import ID_RE, Episode, EpisodeParseError, episode_month, parse_episode_text
from agent_memory.formats.atomic import TMP_PREFIX
from agent_memory.formats.quarantine import Quarantined, check_stat

__all__ = ["MAX_EPISODE_BYTES", "MONTH", "drop_index", "entries", "owned", "read_episode", "read_episode_file", "scan", "stamp"]

MAX_EPISODE_BYTES = 256 * 1024
MONTH = re.compile(r"\d{4}-\d{2}")


def read_episode_file(path: Path, name: str) -> Episode:
    """Read, check and parse one episode file; :class:`EpisodeParseError` (quarantine) or ``FileNotFoundError``."""
    return read_episode(path, name)[0]


def read_episode(path: Path, name: str) -> tuple[Episode, str]:
    if not name.endswith(".md") or not ID_RE.fullmatch(name[:-3]):
        raise EpisodeParseError("file name is not an episode id", "name it ep-YYYYMMDD-HHMMSS-xxxxxxxx.md")
    episode_id = name[:-3]
    if path.parent.name != episode_month(episode_id):
        raise EpisodeParseError("file is not in the month directory of its id", f"move it to episodes/{episode_month(episode_id)}/")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENAMETOOLONG):
            raise FileNotFoundError(str(path)) from None
        if exc.errno == errno.ELOOP:
            raise EpisodeParseError("a symlink is never an episode", "replace it with a regular file") from None
        raise EpisodeParseError(f"file cannot be opened ({exc.strerror})", "check its permissions") from None
    try:
        st = os.fstat(fd)
        try:
            check_stat(st)
        except Quarantined as exc:
            raise EpisodeParseError(exc.reason, exc.fix) from None
        if st.st_size > MAX_EPISODE_BYTES:
            raise EpisodeParseError(f"file is over {MAX_EPISODE_BYTES} bytes", "episodes are small; remove the file")
        raw = os.read(fd, MAX_EPISODE_BYTES + 1)
    finally:
        os.close(fd)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EpisodeParseError("file is not valid UTF-8", "save it as UTF-8") from None
    return parse_episode_text(text, episode_id, path=str(path))


def stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def entries(path: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return [e for e in it if not e.name.startswith((".", TMP_PREFIX))]
    except (FileNotFoundError, NotADirectoryError):
        return []


def scan(base: Path) -> dict[str, tuple[int, int]]:
    """``{month/name.md: (mtime_ns, size)}`` for every candidate episode file (symlinks included: they are quarantined)."""
    out: dict[str, tuple[int, int]] = {}
    for month in entries(base):
        if not (MONTH.fullmatch(month.name) and month.is_dir(follow_symlinks=False)):
            continue
        for entry in entries(Path(month.path)):
            if entry.name.endswith(".md"):
                with contextlib.suppress(FileNotFoundError):
                    st = entry.stat(follow_symlinks=False)
                    out[f"{month.name}/{entry.name}"] = (st.st_mtime_ns, st.st_size)
    return out


_OWNER_LINE = re.compile(r"^(user_id|session_id|namespace):\s*\"?(.*?)\"?\s*$", re.M)


def owned(path: Path, user_id: str | None, session_id: str | None, *, anonymous: bool = False, namespace: str | None = None) -> bool:
    """Whether the file at ``path`` belongs to the owner being purged (parsed, or read from its owner lines);
    ``anonymous``: the owner is a session without a user (an episode naming a user is not its); ``namespace``:
    and it is in that namespace or one of its descendants."""
    try:
        episode = read_episode_file(path, path.name)
        owners = {"user_id": episode.user_id, "session_id": episode.session_id, "namespace": episode.namespace}
    except FileNotFoundError:
        return False
    except EpisodeParseError:  # quarantined: still the user's bytes; judge by the owner lines it holds
        try:
            head = path.read_bytes()[:MAX_EPISODE_BYTES].decode("utf-8", "replace")
        except OSError:
            return False
        owners = {k: v for k, v in _OWNER_LINE.findall(head)}
    if user_id is not None and owners.get("user_id") != user_id:
        return False
    ns = owners.get("namespace") or ""
    if namespace is not None and not (ns == namespace or ns.startswith(namespace + "/")):
        return False
    if anonymous and owners.get("user_id") not in (None, "", "null"):
        return False
    return session_id is None or owners.get("session_id") == session_id


def drop_index(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
