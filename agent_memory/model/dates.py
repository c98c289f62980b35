"""Dates in conversation text: parse a dated line ("1:56 pm on 8 May, 2023"), spell a date the ways people ask
for it, and resolve relative dates ("yesterday", "last week", "two days ago") against when they were said.

Pure functions over text; the transcript importer, capture's statement rules and contextual session search use them.
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["date_words", "spoken_day", "parse_when", "resolve_relative_dates"]

_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_MONTH_NAMES = [
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MON = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON},?\s+(\d{{4}})\b", re.I)
_MDY = re.compile(rf"\b{_MON}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?\b", re.I)


def _month_num(name: str) -> int:
    return _MONTHS[name.lower().rstrip(".")[:3]]


def parse_when(text: str | None) -> dt.datetime | None:
    """Parse a session date: ISO (``2023-05-08``, ``2023-05-08T13:56``) or prose such as
    ``"1:56 pm on 8 May, 2023"`` / ``"May 8, 2023, 1:56 PM"``. None when no date is found."""
    if not text or not isinstance(text, str):
        return None
    raw = text.strip()
    try:
        when = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        return when.replace(tzinfo=None)
    except ValueError:
        pass
    m = _DMY.search(raw)
    if m:
        day, mon, year = int(m.group(1)), _month_num(m.group(2)), int(m.group(3))
    else:
        m = _MDY.search(raw)
        if not m:
            return None
        mon, day, year = _month_num(m.group(1)), int(m.group(2)), int(m.group(3))
    hour = minute = 0
    t = _TIME.search(raw)
    if t:
        hour = int(t.group(1)) % 12 + (12 if t.group(3).lower() == "p" else 0)
        minute = int(t.group(2) or 0)
    try:
        return dt.datetime(year, mon, day, hour, minute)
    except ValueError:
        return None


def date_words(when: dt.date) -> str:
    """``Monday, 8 May 2023``: the form that matches date words in questions."""
    return f"{_WEEKDAYS[when.weekday()].capitalize()}, {when.day} {_MONTH_NAMES[when.month]} {when.year}"


def spoken_day(when: dt.date) -> str:
    return f"{when.day} {_MONTH_NAMES[when.month]} {when.year}"


def _month(year: int, month: int) -> str:
    while month < 1:
        year, month = year - 1, month + 12
    while month > 12:
        year, month = year + 1, month - 12
    return f"{_MONTH_NAMES[month]} {year}"


def _week_of(when: dt.date) -> str:
    return f"the week of {spoken_day(when - dt.timedelta(days=when.weekday()))}"


_NUM = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
    "couple of": 2,
    "few": 3,
}
_REL = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|last night|this morning|"
    r"(?:last|this|next) (?:week(?:end)?|month|year|" + "|".join(_WEEKDAYS) + r")|"
    r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few) (day|week|month|year)s? ago)\b",
    re.I,
)


def resolve_relative_dates(text: str, when: dt.date) -> list[tuple[str, str]]:
    """``[(phrase, absolute date text)]`` for relative date phrases in ``text`` ("yesterday" → "7 May 2023")."""
    out: list[tuple[str, str]] = []
    for m in _REL.finditer(text):
        phrase = m.group(0).lower()
        value: str | None = None
        if phrase in ("yesterday", "last night"):
            value = spoken_day(when - dt.timedelta(days=1))
        elif phrase in ("today", "tonight", "this morning"):
            value = spoken_day(when)
        elif phrase == "tomorrow":
            value = spoken_day(when + dt.timedelta(days=1))
        elif m.group(2):
            n = int(m.group(2)) if m.group(2).isdigit() else _NUM.get(m.group(2).lower(), 1)
            unit = m.group(3).lower()
            if unit == "day":
                value = spoken_day(when - dt.timedelta(days=n))
            elif unit == "week":
                value = _week_of(when - dt.timedelta(weeks=n))
            elif unit == "month":
                value = _month(when.year, when.month - n)
            else:
                value = str(when.year - n)
        else:
            which, unit = phrase.split(" ", 1)
            step = {"last": -1, "this": 0, "next": 1}[which]
            if unit == "week":
                value = _week_of(when + dt.timedelta(weeks=step))
            elif unit == "weekend":
                # "this weekend" is the coming Saturday (or the one just past, said on a Sunday)
                saturday = when + dt.timedelta(days=-1 if when.weekday() == 6 else 5 - when.weekday())
                value = f"the weekend of {spoken_day(saturday + dt.timedelta(weeks=step))}"
            elif unit == "month":
                value = _month(when.year, when.month + step)
            elif unit == "year":
                value = str(when.year + step)
            else:
                target = _WEEKDAYS.index(unit)
                delta = (target - when.weekday()) % 7
                if step < 0:
                    delta = delta - 7 if delta else -7
                elif step > 0:
                    delta = delta or 7
                value = spoken_day(when + dt.timedelta(days=delta))
        if value and (phrase, value) not in out:
            out.append((phrase, value))
    return out


# -- records ------------------------------------------------------------------------------------
