"""Values bound to a credential *name* in any syntax, whatever lies between the name and the value.

Three blind corpora missed the same thing in many dresses: a name that says "this is a secret"
(``HONEYCOMB_API_KEY``, ``X-Api-Key``, ``tc_kimlik_no``, ``garage_keypad_code``, ``mail.smtp1.password``)
followed, within a few characters, by the value, with the binding written as prose in any language
("… यह है:", "…是：", "… bilgisi şu:"), as a name/value pair (HAR ``{"name": …, "value": …}``, spreadsheet
cells, ``<env name=… value=…>``, SQL ``VALUES (…, 'x_api_key', '…')``, ``user_pref("…", "…")``), a label
with a note ("(part 1):"), an arrow, a code fence, or a value dictated in groups.  So the mechanism is
the name, not the syntax:

* ``name_spans``: an identifier (two or more parts joined by ``_ . -`` or camelCase) whose last part names a
  secret of a kind (password, key/token/secret, PIN/code/combination, identity number) binds the first value
  of its kind within a short window after it (at most three short ASCII words and one line break between);
* ``qa_spans``: a chat question that names a secret ("what is the alarm code?") binds a one-token reply in
  the next few lines;
* ``comment_spans``: a code comment that names a secret binds the string literal on its line
  (``let key = "…"; // TOTP_SECRET``).

What a value must look like depends on its kind (a key must look random, a PIN is digits, an identity
number is digits or mixed), so the words between name and value are never taken.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agent_memory.redaction.base import I, Lazy
from agent_memory.redaction.generic import _HASH_CONTEXT, _id_value, _key_value, _placeholder, _pw_value

Span = tuple[int, int, str]

_IDENT = Lazy(
    r"(?<![\w.\-/$%{@])(?:[A-Za-z][A-Za-z0-9]*(?:[_.\-][A-Za-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+|[A-Z]{2,}[a-z]+(?:[A-Z][a-z0-9]+)+)"
    r"(?![A-Za-z0-9_\-]|\.[A-Za-z0-9_]|\[REDACTED)"
)
_PARTS = Lazy(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PW = frozenset("password passwd pass pwd pw passphrase passcode kennwort senha contrasena parola sifre haslo".split())
_KEY = frozenset("key apikey token secret sk secretkey accesskey privatekey credential credentials seed salt license licence".split())
_PIN = frozenset("pin puk combination combo".split())
_PIN_CODE_QUALIFIER = frozenset("alarm door gate garage keypad safe lock backup recovery entry unlock access security pin puk sim".split())
_ID = frozenset("ssn nir aadhaar personnummer tckn kimlik dni nie nif cpf curp pesel bsn passport rrn teudat zehut".split())
_ID_PAIRS = frozenset({("id", "number"), ("id", "no"), ("id", "nr"), ("kimlik", "no"), ("tax", "id"), ("national", "id")})
# parts that make a name about a secret rather than the secret ("SECRET_NAME", "key_id", "PASSWORD_POLICY")
_NOT = frozenset(
    "public pub publishable site name type path file url uri endpoint length len size min max hint policy expiry expires ttl "
    "rotated version header field env var ref kid fingerprint hash digest format prefix count id ids arn label description "
    "store vault manager rotation enabled required placeholder example template".split()
)


def _kind(name: str) -> str | None:
    """The kind of value a name binds (``pw``, ``key``, ``pin``, ``id``) or None."""
    parts = [p.lower() for p in _PARTS.get().findall(name)]
    if len(parts) < 2:
        return None
    last = parts[-1]
    if (parts[-2], last) in _ID_PAIRS:
        return "id"
    if any(p in _NOT for p in parts):
        return None
    if last in _PW:
        return "pw"
    if last in _PIN or last == "code" and parts[-2] in _PIN_CODE_QUALIFIER:
        return "pin"
    if last in _ID or parts[-2] in _ID and last in ("no", "number", "nr"):
        return "id"
    if last in _KEY:
        return "key"
    return None


_DIGIT_GROUPS = Lazy(r"#?\d{2,8}(?:[ \-]\d{2,8}){0,9}#?")


def _pin_value(v: str) -> bool:
    core = v.strip("#")
    digits = sum(c.isdigit() for c in core)
    return _DIGIT_GROUPS.get().fullmatch(v) is not None and 3 <= digits <= 64 and not re.fullmatch(r"(?:19|20)\d\d", core)


_PUBLIC_VALUE = Lazy(r"(?:~|\.{1,2})?/[\w.-]+/|arn:|\$|%|\{|process\.env|os\.environ|getenv|env\(|secrets\.|vars\.|var\.|ENV\[|true$|false$|null$|none$", I)


def _check(kind: str, v: str, quoted: bool) -> bool:
    if not v or _placeholder(v) or _PUBLIC_VALUE.get().match(v) or "://" in v or "[REDACTED" in v:
        return False
    if kind == "pw":
        return _pw_value(v) or quoted and len(v) >= 10 and v.isalpha() and v.islower() and not re.search(r"[aeiou]{3}", v)
    if kind == "pin":
        return _pin_value(v)
    if kind == "id":
        return _id_value(v) and sum(c.isdigit() for c in v) >= 5
    if _key_value(v) or _random_enough(v):
        return True
    core = v.replace("-", "").replace(" ", "")
    return core.isdigit() and len(core) >= 16 and v.count("-") >= 2  # recovery keys in digit groups


def _random_enough(v: str) -> bool:
    """After a credential name a key may be plainer than a free-standing random token: upper- or lower-case base36 or
    base32 of 16+ characters with digits spread through it (``OLGOD853JQH3JMYZ…``, ``az9lpefterung6dm…``)."""
    if len(v) < 16 or len(v) > 200 or not v.isalnum() or v.isdigit() or v.isalpha():
        return False
    if not (v.isupper() or v.islower()):
        return False
    digit_runs = re.findall(r"\d+", v)
    return len(digit_runs) >= 3 and max(len(w) for w in re.findall(r"[A-Za-z]+", v)) <= 14


# a value candidate: a run without spaces, quotes or brackets (ASCII-only punctuation ends it; other scripts end it too)
_CAND = Lazy(r"[A-Za-z0-9+/=_\-.~!@#$%^&*?:;,]+")
# a value dictated in groups: "c1d0 9b64 9aa6 …", "/IgB MbY/ CDig …"
_GROUPS = Lazy(r"[!-~]{2,6}(?: [!-~]{2,6}){3,}(?!\S)")
_WORDISH = Lazy(r"[A-Za-z]{1,14}|\(?(?:part|teil|parte)\)?|\d\)?:?|[A-Z]\d{1,3}", I)
_QUOTE_BEFORE = Lazy(r"[\"'`「『]$")


def _value_after(text: str, pos: int, kind: str, limit: int = 64) -> tuple[int, int] | None:
    """The first value of ``kind`` after ``pos``: words, punctuation, other scripts and one line break may come first."""
    end = min(len(text), pos + limit)
    nl = text.find("\n", pos, end)
    if nl >= 0:
        nl2 = text.find("\n", nl + 1, end)
        if nl2 >= 0:
            end = nl2
    words = 0
    for m in _CAND.get().finditer(text, pos):
        if m.start() >= end:
            return None
        raw = m.group()
        s, e = m.start(), m.end()
        lead = len(raw) - len(raw.lstrip(":=>-,;"))
        s += lead
        v = text[s:e]
        while v and v[-1] in ".,;:!?" and not (kind == "pw" and len(v) > 1 and v[-1] in "!?" and v[-2] != v[-1]):
            v = v[:-1]
            e -= 1
        if kind == "pw" and v.endswith("."):
            v, e = v[:-1], e - 1
        if not v:
            continue
        g = _GROUPS.get().match(text, s)
        if g is not None and kind in ("key", "id") and g.end() <= end + 200:
            joined = g.group().replace(" ", "")
            if len(joined) >= 16 and _check(kind, joined, False) and sum(c.isdigit() for c in joined) >= 4:
                return s, g.end()
        if kind == "pin":
            p = _DIGIT_GROUPS.get().match(text, s)
            if p is not None and p.end() >= e - 1 and _pin_value(p.group()):
                return s, p.end()
        quoted = _QUOTE_BEFORE.get().search(text, max(0, s - 1), s) is not None
        if _check(kind, v, quoted):
            return s, e
        if "=" in v.rstrip("=") or not _WORDISH.get().fullmatch(v.rstrip("=:")):
            return None
        if not (s > 0 and not text[s - 1].isascii() and text[s - 1].isalpha() or e < len(text) and not text[e].isascii() and text[e].isalpha()):
            words += 1  # a piece of a word in another script is not counted
        if words > 4:
            return None
    return None


_GATE = Lazy(r"pass|pwd|pw|key|token|secret|sk\b|_sk|credential|seed|salt|licen|pin|puk|combination|combo|code|ssn|nir|aadhaar|personnummer|tckn|kimlik|dni|nie|nif|cpf|curp|pesel|bsn|passport|rrn|teudat|zehut|id", I)


def name_spans(text: str) -> Iterator[Span]:
    """Values that follow a credential name (any syntax, any language between them)."""
    if _GATE.get().search(text) is None:
        return
    for m in _IDENT.get().finditer(text):
        kind = _kind(m.group())
        if kind is None:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line = text[line_start : len(text) if line_end < 0 else line_end]
        if kind != "pw" and _HASH_CONTEXT.get().search(line):
            continue
        found = _value_after(text, m.end(), kind)
        if found is not None:
            yield found[0], found[1], _MARK[kind]


_MARK = {"pw": "password", "key": "secret", "pin": "pin", "id": "national_id"}

# --- a question in chat that names a secret, answered in the next lines ----------------------------------------------
_QUESTION_LABEL = Lazy(
    r"(?:passwor[dt]|passcode|pin(?:[\s-]?(?:code|код))?|puk|пароль|пин[\s-]?код|senha|contrase(?:ñ|n)a|mot de passe|kennwort|"
    r"(?:alarm|door|gate|garage|safe|lock|keypad|backup|recovery|entry)[\s_-]+(?:code|combination)|combination|"
    r"cd[\s_-]?key|licen[cs]e[\s_-]?key|serial|personnummer|ssn|aadhaar|מספר\s+זהות|תעודת\s+זהות|iban|"
    r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*_(?:KEY|TOKEN|SECRET|PASSWORD|PIN))(?![\w])",
    I,
)
_SPEAKER = Lazy(r"^(?:\[[^\]\n]{1,30}\]\s*)?(?:[^\n]{0,40}?\s-\s)?[^\n:]{1,30}:[ \t]*")


def qa_spans(text: str) -> Iterator[Span]:
    """A one-token reply to a chat question naming a secret ("can you send me the alarm code?" … "432920")."""
    if "?" not in text or "\n" not in text:
        return
    pos = 0
    lines: list[tuple[int, str]] = []
    for line in text.split("\n"):
        lines.append((pos, line))
        pos += len(line) + 1
    for i, (_, line) in enumerate(lines):
        if "?" not in line:
            continue
        q = _QUESTION_LABEL.get().search(line)
        if q is None or q.start() > line.rfind("?"):
            continue
        label = q.group().lower()
        kind = "key"
        if re.search(r"pin|puk|code|combination|код", label):
            kind = "pin"
        elif re.search(r"pass|парол|senha|contrase|mot de|kennwort", label):
            kind = "pw"
        elif re.search(r"personnummer|ssn|aadhaar|זהות|iban", label):
            kind = "id"
        for off, nxt in lines[i + 1 : i + 4]:
            sp = _SPEAKER.get().match(nxt)
            body_at = sp.end() if sp is not None else 0
            body = nxt[body_at:].strip()
            if not body:
                continue
            if " " in body and not (kind in ("pin", "id") and _DIGIT_GROUPS.get().fullmatch(body)):
                continue
            start = off + body_at + nxt[body_at:].index(body)
            ok = _check(kind, body, False) or kind in ("pin", "id") and _check("id" if kind == "pin" else "pin", body, False)
            if ok or kind == "key" and _pw_value(body) and len(body) >= 16:
                yield start, start + len(body), _MARK[kind]
                break


# --- a comment naming the literal on its line ------------------------------------------------------------------------
_COMMENT_LINE = Lazy(r"(?m)^(?P<code>[^\n]*?[\"'][^\n]*?)(?://|#|--)[ \t]*(?P<c>[^\n]*)$")
_COMMENT_NAMES = Lazy(r"key|token|secret|passw|pwd|seed|credential|totp|otp|appkey", I)
_LITERAL = Lazy(r"\"(?P<d>[^\"\n]{8,200})\"|'(?P<s>[^'\n]{8,200})'")


def comment_spans(text: str) -> Iterator[Span]:
    """``let key = "…"; // TOTP_SECRET``: a comment that names a secret binds the random literal before it."""
    if "//" not in text and "#" not in text:
        return
    for m in _COMMENT_LINE.get().finditer(text):
        if _COMMENT_NAMES.get().search(m.group("c")) is None or _HASH_CONTEXT.get().search(m.group()):
            continue
        for lit in _LITERAL.get().finditer(m.group("code")):
            g = "d" if lit.group("d") is not None else "s"
            v = lit.group(g)
            if " " not in v and _check("key", v, True):
                s = m.start("code") + lit.start(g)
                yield s, s + len(v), "secret"
