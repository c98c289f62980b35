"""A few libpq calls over ctypes, for one-shot reads that must not pay psycopg's import (≈ 110 ms).

Only what :mod:`.oneshot` needs: connect, run a statement with *text parameters* (values are never put
into SQL text; ``%(name)s`` placeholders become ``$n``), read rows as dicts decoded by column type. A
column type it does not know raises :class:`Unsupported`, and so does a missing libpq: the caller then
takes the psycopg path. Nothing here keeps state across statements beyond the open connection.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["Connection", "ServerError", "Unsupported", "load"]

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")
_ARRAY_ITEM = re.compile(r'"((?:[^"\\]|\\.)*)"|([^,{}]+)')
_LIB: Any = None
# notices (e.g. "query contains only stop words") would go to stderr; psycopg logs them instead: drop them
_NOTICE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
_IGNORE_NOTICE = _NOTICE(lambda _arg, _res: None)


class Unsupported(Exception):
    """libpq is not loadable, or a value or column type is outside what this client decodes."""


class ServerError(Exception):
    """The server refused a statement or the connection; ``sqlstate`` as PostgreSQL reports it."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def _candidates() -> Iterator[str]:
    yield from ("libpq.so.5", "libpq.5.dylib", "libpq.so")
    import importlib.util

    spec = importlib.util.find_spec("psycopg_binary")  # locates, never imports, the wheel's bundled copy
    if spec is not None and spec.origin:
        libs = os.path.join(os.path.dirname(os.path.dirname(spec.origin)), "psycopg_binary.libs")
        if os.path.isdir(libs):
            yield from sorted(os.path.join(libs, f) for f in os.listdir(libs) if f.startswith("libpq"))


def load() -> Any:
    """The libpq shared library with the signatures used here (cached); :class:`Unsupported` when absent."""
    global _LIB
    if _LIB is not None:
        return _LIB
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        p, c, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        for fn, res, args in (
            ("PQconnectdbParams", p, [ctypes.POINTER(c), ctypes.POINTER(c), i]),
            ("PQstatus", i, [p]),
            ("PQerrorMessage", c, [p]),
            ("PQfinish", None, [p]),
            ("PQexecParams", p, [p, c, i, ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(c), p, p, i]),
            ("PQresultStatus", i, [p]),
            ("PQresultErrorMessage", c, [p]),
            ("PQresultErrorField", c, [p, i]),
            ("PQntuples", i, [p]),
            ("PQnfields", i, [p]),
            ("PQfname", c, [p, i]),
            ("PQftype", ctypes.c_uint, [p, i]),
            ("PQgetvalue", p, [p, i, i]),
            ("PQgetlength", i, [p, i, i]),
            ("PQgetisnull", i, [p, i, i]),
            ("PQclear", None, [p]),
            ("PQsetNoticeReceiver", p, [p, _NOTICE, p]),
        ):
            f = getattr(lib, fn)
            f.restype, f.argtypes = res, args
        _LIB = lib
        return lib
    raise Unsupported("no libpq shared library found")


def _array(text: str) -> list[str | None]:
    if text == "{}":
        return []
    if not (text.startswith("{") and text.endswith("}")) or text.startswith("{{"):
        raise Unsupported(f"array literal {text[:40]!r}")
    out: list[str | None] = []
    for quoted, bare in _ARRAY_ITEM.findall(text[1:-1]):
        if bare:
            out.append(None if bare == "NULL" else bare)
        else:
            out.append(re.sub(r"\\(.)", r"\1", quoted))
    return out


def _instant(text: str) -> dt.datetime:
    if text in ("infinity", "-infinity"):
        raise Unsupported("infinite timestamp")
    return dt.datetime.fromisoformat(text)


_DECODERS: dict[int, Callable[[str], Any]] = {
    16: lambda v: v == "t",
    20: int,
    21: int,
    23: int,
    26: int,
    700: float,
    701: float,
    25: str,
    1043: str,
    19: str,
    18: str,
    114: json.loads,
    3802: json.loads,
    1184: _instant,
    1009: _array,
    1015: _array,
}


def _param(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, (int, float, str)):
        data = str(value).encode("utf-8")
        if b"\x00" in data:  # a C string cannot carry it; psycopg refuses it too
            raise Unsupported("a NUL character in a parameter")
        return data
    if isinstance(value, dt.datetime):
        return value.isoformat().encode("utf-8")
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        quoted = ('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in value)
        return ("{" + ",".join(quoted) + "}").encode("utf-8")
    raise Unsupported(f"parameter of type {type(value).__name__}")


def _oid(value: Any) -> int:
    """The parameter's type where the server could not infer one from a text literal (0: let it infer)."""
    if isinstance(value, bool):
        return 16
    if isinstance(value, int):
        return 20
    if isinstance(value, float):
        return 701
    if isinstance(value, dt.datetime):
        return 1184
    if isinstance(value, (list, tuple)):
        return 1009
    return 0


class Result:
    """Rows of one statement, decoded (mirrors the bits of a psycopg cursor the search code uses)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    async def fetchall(self) -> list[dict[str, Any]]:
        return self.rows

    async def fetchone(self) -> dict[str, Any] | None:
        return self.rows[0] if self.rows else None


class Connection:
    """One libpq connection; ``execute`` is ``async`` only so psycopg-shaped code can await it (it never suspends)."""

    def __init__(self, url: str, *, connect_timeout_s: float = 30.0) -> None:
        self.lib = lib = load()
        keys = (ctypes.c_char_p * 4)(b"dbname", b"client_encoding", b"connect_timeout", None)
        vals = (ctypes.c_char_p * 4)(url.encode("utf-8"), b"UTF8", str(max(1, int(connect_timeout_s))).encode(), None)
        self.conn = lib.PQconnectdbParams(keys, vals, 1)
        if not self.conn or lib.PQstatus(self.conn) != 0:
            message = (lib.PQerrorMessage(self.conn) or b"out of memory").decode("utf-8", "replace").strip()
            self.close()
            raise ServerError(message, "08001")
        lib.PQsetNoticeReceiver(self.conn, _IGNORE_NOTICE, None)

    def run(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run one statement; rows as dicts (column name → decoded value)."""
        names: list[str] = []

        def number(m: re.Match[str]) -> str:
            if m.group(0) == "%%":
                return "%"
            names.append(m.group(1))
            return f"${len(names)}"

        text = _PLACEHOLDER.sub(number, sql)
        values = [(params or {})[n] for n in names]
        n = len(values)
        types = (ctypes.c_uint * max(n, 1))(*(_oid(v) for v in values))
        args = (ctypes.c_char_p * max(n, 1))(*(_param(v) for v in values))
        lib = self.lib
        res = lib.PQexecParams(self.conn, text.encode("utf-8"), n, types, args, None, None, 0)
        if not res:
            raise ServerError((lib.PQerrorMessage(self.conn) or b"").decode("utf-8", "replace").strip(), "08006")
        try:
            status = lib.PQresultStatus(res)
            if status not in (1, 2):  # PGRES_COMMAND_OK, PGRES_TUPLES_OK
                state = lib.PQresultErrorField(res, ord("C"))
                raise ServerError(
                    (lib.PQresultErrorMessage(res) or b"").decode("utf-8", "replace").strip(), state.decode() if state else None
                )
            fields = [(lib.PQfname(res, c).decode("utf-8"), lib.PQftype(res, c)) for c in range(lib.PQnfields(res))]
            decoders = []
            for name, oid in fields:
                if oid not in _DECODERS:
                    raise Unsupported(f"column {name} of type oid {oid}")
                decoders.append(_DECODERS[oid])
            rows = []
            for r in range(lib.PQntuples(res)):
                row: dict[str, Any] = {}
                for c, (name, _) in enumerate(fields):
                    if lib.PQgetisnull(res, r, c):
                        row[name] = None
                    else:
                        raw = ctypes.string_at(lib.PQgetvalue(res, r, c), lib.PQgetlength(res, r, c))
                        try:
                            row[name] = decoders[c](raw.decode("utf-8"))
                        except UnicodeDecodeError:  # e.g. an SQL_ASCII database: psycopg's path decides
                            raise Unsupported(f"column {name} is not UTF-8") from None
                rows.append(row)
            return rows
        finally:
            lib.PQclear(res)

    async def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> Result:
        return Result(self.run(sql, params))

    def close(self) -> None:
        if self.conn:
            self.lib.PQfinish(self.conn)
            self.conn = None
