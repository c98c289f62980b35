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

from agent_memory.redaction.base import A, I, Lazy
from agent_memory.redaction.generic import (
    _FILE_EXT,
    _HASH_CONTEXT,
    _id_value,
    _key_value,
    _placeholder,
    _pw_value,
    _random_enough,
    _strong_value,
)

Span = tuple[int, int, str]

_IDENT = Lazy(
    r"(?<![\w.\-/$%{@])(?:[A-Za-z][A-Za-z0-9]*(?:[_.\-][A-Za-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+|[A-Z]{2,}[a-z]+(?:[A-Z][a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)"
    r"(?![A-Za-z0-9_\-]|\.[A-Za-z0-9_]|\[REDACTED)"
)
_DIFF_MINUS = Lazy(r"(?m)^-(?=[A-Za-z])")
_PARTS = Lazy(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PW = frozenset("password passwd pass pwd pw passphrase passcode kennwort senha contrasena parola sifre haslo".split())
_KEY = frozenset("key apikey token secret sk secretkey accesskey privatekey credential credentials seed salt license licence".split())
_PIN = frozenset("pin puk combination combo".split())
_PIN_CODE_QUALIFIER = frozenset("alarm door gate garage keypad safe lock backup recovery entry unlock access security pin puk sim".split())
_ID = frozenset("ssn nir nino aadhaar personnummer tckn kimlik dni nie nif cpf curp pesel bsn passport rrn teudat zehut".split())
_ID_PAIRS = frozenset(
    {("id", "number"), ("id", "no"), ("id", "nr"), ("kimlik", "no"), ("tax", "id"), ("national", "id"), ("ni", "number"), ("ni", "no")}
)
# parts that make a name about a secret rather than the secret ("SECRET_NAME", "key_id", "PASSWORD_POLICY")
_NOT = frozenset(
    "public pub publishable site name type path file url uri endpoint length len size min max hint policy expiry expires ttl "
    "rotated version header field env var ref kid fingerprint hash digest format prefix count id ids arn label description "
    "ust vat lei duns ein eori company business store manager rotation enabled required placeholder example template".split()
)


_PART_WORDS = frozenset("part half chunk piece seg segment fragment split".split())


def _kind(name: str) -> str | None:
    """The kind of value a name binds (``pw``, ``key``, ``pin``, ``id``) or None."""
    parts = [p.lower() for p in _PARTS.get().findall(name)]
    # a secret stored in parts names each part: "AWS_SECRET_PART_A", "DB_PASSWORD_HALF2", "TOKEN_CHUNK_1"
    if len(parts) >= 3 and parts[-2] in _PART_WORDS and re.fullmatch(r"[a-z]|\d{1,2}", parts[-1]):
        parts = parts[:-2]
    elif len(parts) >= 3 and parts[-1] in _PART_WORDS:
        parts = parts[:-1]
    if len(parts) < 2:
        return None
    last = parts[-1]
    if any(p in _NOT for p in parts) or re.sub(r"[\W_]", "", name.lower()).startswith(("ust", "vat", "tva", "iva", "lei", "mwst")):
        return None  # about a secret, or a company's public tax number (USt-IdNr, VAT id)
    if (parts[-2], last) in _ID_PAIRS:
        return "id"
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


_PUBLIC_VALUE = Lazy(
    r"(?:~|\.{1,2})?/[\w.-]+/|arn:|\$|%|\{|process\.env|os\.environ|getenv|env\(|secrets\.|vars\.|var\.|ENV\[|true$|false$|null$|none$", I
)


def _random_case(v: str) -> bool:
    """Letters alone in random case (a piece of a base64 key with no digit in it: "WAsMmTptMSsSJQdDXrYN"), not words."""
    if not (16 <= len(v) <= 128 and v.isascii() and v.isalpha()):
        return False
    switches = sum(a.isupper() != b.isupper() for a, b in zip(v, v[1:], strict=False))
    runs = re.findall(r"[a-z]+", v)
    return switches * 3 >= len(v) and max((len(r) for r in runs), default=0) <= 4 and sum(c.isupper() for c in v) >= 4


def _check(kind: str, v: str, quoted: bool) -> bool:
    if not v or _placeholder(v) or _PUBLIC_VALUE.get().match(v) or "://" in v or "[REDACTED" in v or _FILE_EXT.get().fullmatch(v):
        return False
    if kind == "pw":
        return (
            _pw_value(v) or _strong_value(v) or quoted and len(v) >= 10 and v.isalpha() and v.islower() and not re.search(r"[aeiou]{3}", v)
        )
    if kind == "pin":
        return _pin_value(v) or _strong_value(v)
    if kind == "id":
        return _id_value(v) and sum(c.isdigit() for c in v) >= 5
    if _key_value(v) or _random_enough(v) or _strong_value(v) or _random_case(v):
        return True
    core = v.replace("-", "").replace(" ", "")
    if v.isdigit():
        return 8 <= len(v) <= 64 and len(set(v)) >= 4  # a numeric key under a key's name ("SMS_API_KEY=82807692")
    return core.isdigit() and len(core) >= 16 and v.count("-") >= 2  # recovery keys in digit groups


# a value candidate: a run without spaces, quotes or brackets (ASCII-only punctuation ends it; other scripts end it too)
_CAND = Lazy(r"[A-Za-z0-9+/=_\-.~!@#$%^&*?:;,]+")
# a value dictated in groups: "c1d0 9b64 9aa6 …", "/IgB MbY/ CDig …"
_GROUPS = Lazy(r"[!-~]{2,6}(?: [!-~]{2,6}){3,}(?!\S)")
_WORDISH = Lazy(r"[A-Za-z]{1,14}|\(?(?:part|teil|parte)\)?|\d\)?:?|[A-Z]\d{1,3}", I)
_QUOTE_BEFORE = Lazy(r"[\"'`「『]$")


_NEXT_PARAM = Lazy(r"(?:&amp;|[&;])[A-Za-z_][\w.-]*=")
_ANOTHER_KEY = Lazy(r"[A-Za-z_][\w.-]*=|[A-Za-z][A-Za-z0-9]*[_.-][\w.-]*:")


_KEY_WORDS = frozenset("secret token password passwd pass pwd pin key apikey user username login auth code".split())


def _another_key(raw: str) -> bool:
    """``secret=``, ``x_api_key=``, ``db.user:`` after a name: the next key begins (``value=`` or an attribute does not)."""
    if _ANOTHER_KEY.get().fullmatch(raw) is None:
        return False
    word = raw[:-1]
    return word.lower() in _KEY_WORDS or _kind(word) is not None or ("_" in word and raw.endswith("="))


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
        lead = len(raw) - len(raw.lstrip(":=>-,;/"))
        s += lead
        nxt = _NEXT_PARAM.get().search(text, s, e)
        if nxt is not None:
            e = nxt.start()  # "token=X&state=xyz": the next parameter is not part of the value
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
        if kind in ("pin", "id"):
            p = _DIGIT_GROUPS.get().match(text, s)
            if (
                p is not None
                and p.end() >= e - 1
                and (_pin_value(p.group()) if kind == "pin" else _check("id", p.group().replace(" ", ""), False))
            ):
                return s, p.end()
        quoted = _QUOTE_BEFORE.get().search(text, max(0, s - 1), s) is not None
        if _check(kind, v, quoted):
            return s, e
        if "=" in v.rstrip("=") or not _WORDISH.get().fullmatch(v.rstrip("=:")) or _another_key(raw):
            return None  # another key begins ("secret=<redacted> token=…"): this name's value is not there
        if not (
            s > 0 and not text[s - 1].isascii() and text[s - 1].isalpha() or e < len(text) and not text[e].isascii() and text[e].isalpha()
        ):
            words += 1  # a piece of a word in another script is not counted
        if words > 4:
            return None
    return None


_GATE = Lazy(
    r"pass|pwd|pw|key|token|secret|sk\b|_sk|credential|seed|salt|licen|pin|puk|combination|combo|code|ssn|nir|aadhaar|personnummer|tckn|kimlik|dni|nie|nif|cpf|curp|pesel|bsn|passport|rrn|teudat|zehut|id|nino|ni_n",
    I,
)


def name_spans(text: str) -> Iterator[Span]:
    """Values that follow a credential name (any syntax, any language between them)."""
    if _GATE.get().search(text) is None:
        return
    # a line a diff removes ("-API_KEY=…") names its key as the added "+API_KEY=…" does: the names are read in a view
    # of the same length with that "-" blanked
    names = _DIFF_MINUS.get().sub(" ", text) if text.startswith("-") or "\n-" in text else text
    for m in _IDENT.get().finditer(names):
        if (
            text.endswith(("REDACTED:", "="), 0, m.start())
            or text.endswith(("<", "{"), 0, m.start())
            and text.startswith((">", "}"), m.end())
        ):
            continue  # a marker's kind; a value ("reason=bad_password"); a placeholder ("<api-key>"), not a name
        kind = _kind(m.group())
        if kind is None:
            continue
        line_start = text.rfind("\n", max(0, m.start() - 200), m.start()) + 1 or max(0, m.start() - 200)
        line_end = text.find("\n", m.end(), m.end() + 200)
        line = text[line_start : min(len(text), m.end() + 200) if line_end < 0 else line_end]
        if kind != "pw" and _HASH_CONTEXT.get().search(line):
            continue
        found = _value_after(text, m.end(), kind)
        if found is not None:
            yield found[0], found[1], _MARK[kind]


_MARK = {"pw": "password", "key": "secret", "pin": "pin", "id": "national_id"}

# --- a question in chat that names a secret, answered in the next lines ----------------------------------------------
_QUESTION_LABEL = Lazy(
    r"(?:passwor[dt]|passcode|pw|pwd|wi-?fi(?:[\s-]?(?:key|code))?|pin(?:[\s-]?(?:code|код))?|puk|пароль|пин[\s-]?код|senha|contrase(?:ñ|n)a|mot de passe|kennwort|"
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
        elif re.search(r"pass|pw|wi-?fi|парол|senha|contrase|mot de|kennwort", label):
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
_COMMENT_START = Lazy(r"//|(?<=\s)#|(?<=\s)--")
_COMMENT_NAMES = Lazy(r"key|token|secret|passw|pwd|seed|credential|totp|otp|appkey", I)
_LITERAL = Lazy(r"\"(?P<d>[^\"\n]{8,200})\"|'(?P<s>[^'\n]{8,200})'")


def comment_spans(text: str) -> Iterator[Span]:
    """``let key = "…"; // TOTP_SECRET``: a comment that names a secret binds the random literal before it."""
    if "//" not in text and "#" not in text:
        return
    pos = 0
    n = len(text)
    while pos < n:
        end = text.find("\n", pos)
        end = n if end < 0 else end
        c = _COMMENT_START.get().search(text, pos, end)
        if c is not None and _COMMENT_NAMES.get().search(text, c.end(), end) is not None:
            code = text[pos : c.start()]
            if ("'" in code or '"' in code) and _HASH_CONTEXT.get().search(text, pos, min(end, pos + 400)) is None:
                for lit in _LITERAL.get().finditer(code):
                    g = "d" if lit.group("d") is not None else "s"
                    v = lit.group(g)
                    if " " not in v and _check("key", v, True):
                        yield pos + lit.start(g), pos + lit.end(g), "secret"
        pos = end + 1


# --- protocol transcripts, user:password pairs, webhook URLs, code lists, cookies, Kubernetes Secrets, card codes -------
_SMTP_PASSWORD = Lazy(r"334 UGFzc3dvcmQ6[ \t]*\r?\n[ \t]*(?:>>>|C:|->|>)?[ \t]*(?P<v>[^\s]{4,400})")
_IMAP_LOGIN = Lazy(
    r"(?m)^[ \t]*(?:C:[ \t]*|>>>[ \t]*)?[A-Za-z0-9.*]{1,12}[ \t]+LOGIN[ \t]+(?:\"[^\"\r\n]{1,100}\"|[^\s\"]{1,100})[ \t]+"
    r"(?:\"(?P<q>[^\"\r\n]{4,200})\"|(?P<b>[^\s\"]{4,200}))[ \t]*\r?$",
    A,
)
_PASS_CMD = Lazy(r"(?m)^[ \t]*(?:>>>|C:|->)?[ \t]*PASS[ \t]+(?P<v>[^\s]{4,200})[ \t]*$")
_USER_PW_FLAG = Lazy(
    r"(?<!\S)(?:-a|--auth|--basic-auth|--http-user-password)[ \t]+[^\s:'\"]{1,64}:(?:'(?P<sq>[^'\r\n]{4,200})'|\"(?P<dq>[^\"\r\n]{4,200})\"|(?P<bare>[^\s'\"]{4,200}))"
)
_DSN_PAIR = Lazy(r"(?<![\w/])[A-Za-z_][\w.-]{0,40}:(?P<v>[^\s:@/'\"]{4,200})@(?:tcp|unix|udp)\(")
_CHPASSWD = Lazy(r"chpasswd[^\n]{0,40}\n(?:[ \t]*[\w-]+:[ \t]*\|?[ \t]*\n)?(?P<body>(?:[ \t]+[\w.-]{1,32}:[^\s:]{4,200}[ \t]*\n?)+)")
_HOOK_SEG = Lazy(
    r"https?://[^\s/\"'<>]{1,100}(?:/[^\s\"'<>]{0,200}?)?/(?:hooks?|webhooks?\w*|incomingwebhook|catch|key|keys|token|tokens)/(?P<rest>[^\s\"'<>?#]{6,400})",
    I,
)
_CODE_HEAD_ANY = Lazy(
    r"(?im)^[^\n]{0,40}(?:recovery|backup|one[- ]time|scratch|emergency)[ \t]+codes?|(?:백업|복구)[ \t]*코드|رموز[ \t]+(?:الاسترداد|النسخ)|"
    r"קודי[ \t]+(?:גיבוי|שחזור)|codes?[ \t]+de[ \t]+(?:récupération|secours|recuperación|respaldo|recuperação|backup)|"
    r"wiederherstellungs(?:codes?|schlüssel)|backup-?codes|коды[ \t]+(?:восстановления|резервн\w*)|バックアップコード|リカバリーコード|备用码|恢复码"
)
_CODE_ITEM = Lazy(r"(?<![\w-])(?:[A-Za-z0-9]{4,12}(?:-[A-Za-z0-9]{3,12})?|\d{4}[ -]\d{4})(?![\w-])")
_BARE_CODES = Lazy(r"\A(?:[ \t]*[a-z0-9]{4,6}-[a-z0-9]{4,6}[ \t]*(?:\n|\Z)){4,}")
_COOKIE_ARRAY = Lazy(r"\"cookies\"[ \t]*:[ \t]*\[")
_COOKIE_VALUE = Lazy(r"\"value\"[ \t]*:[ \t]*\"(?P<v>[^\"\s]{16,4000})\"")
_K8S_SECRET = Lazy(r"(?m)^kind:[ \t]*Secret[ \t]*$")
_K8S_DATA = Lazy(r"(?m)^(?:data|stringData):[ \t]*\n(?P<body>(?:[ \t]+[^\n]*\n?)+)")
_K8S_ITEM = Lazy(r"(?m)^[ \t]+[\w.-]+:[ \t]*[\"']?(?P<v>[A-Za-z0-9+/=_.\-!#$%&*@^~]{4,})[\"']?[ \t]*$")
_CARD_CODE = Lazy(
    r"\b(?:cvv2?|cvc2?|cid|csc|cav2|prüfnummer|kartenprüfnummer|sicherheitscode|security[ \t]+code|código[ \t]+de[ \t]+seguridad|"
    r"cryptogramme(?:[ \t]+visuel)?|codice[ \t]+di[ \t]+sicurezza)\b[ \t]*[:：#=]?[ \t]*(?P<v>\d{3,4})\b",
    I,
)
_CARDISH = Lazy(r"card|karte|carte|tarjeta|amex|visa|mastercard|REDACTED:card|\d{4}[ -]?\d{4,6}[ -]?\d{4,5}", I)


def _quoted_or(m: re.Match[str], *groups: str) -> tuple[int, int] | None:
    for g in groups:
        if m.group(g):
            return m.start(g), m.end(g)
    return None


def protocol_spans(text: str) -> Iterator[Span]:
    """Passwords in protocol transcripts and command lines that pair a user with a password, webhook URL tokens,
    code lists under a heading in any language, cookie arrays, Kubernetes Secret data and card security codes."""
    if "334 UGFzc3dvcmQ6" in text:
        for m in _SMTP_PASSWORD.get().finditer(text):
            yield m.start("v"), m.end("v"), "password"
        # a password that continues on the next line (a licence key pasted as the password)
        for m in _SMTP_PASSWORD.get().finditer(text):
            nxt = text[m.end() : m.end() + 200].split("\n")
            if len(nxt) > 1 and re.fullmatch(r"[0-9A-Fa-f]{8}(?: [0-9A-Fa-f]{8})+", nxt[1].strip()):
                s = m.end() + 1 + nxt[1].index(nxt[1].strip())
                yield s, s + len(nxt[1].strip()), "password"
    if "LOGIN" in text:
        for m in _IMAP_LOGIN.get().finditer(text):
            span = _quoted_or(m, "q", "b")
            if span is not None and not _placeholder(text[span[0] : span[1]]):
                yield span[0], span[1], "password"
    if "PASS" in text:
        for m in _PASS_CMD.get().finditer(text):
            yield m.start("v"), m.end("v"), "password"
    if "-a" in text or "--auth" in text or "--basic-auth" in text:
        for m in _USER_PW_FLAG.get().finditer(text):
            span = _quoted_or(m, "sq", "dq", "bare")
            if span is not None and not _placeholder(text[span[0] : span[1]]) and not text[span[0]] == "$":
                yield span[0], span[1], "password"
    if "@tcp(" in text or "@unix(" in text or "@udp(" in text:
        for m in _DSN_PAIR.get().finditer(text):
            if not _placeholder(m.group("v")):
                yield m.start("v"), m.end("v"), "password"
    if "chpasswd" in text:
        for m in _CHPASSWD.get().finditer(text):
            for line in re.finditer(r"[\w.-]{1,32}:(?P<v>[^\s:]{4,200})", m.group("body")):
                v = line.group("v")
                if not _placeholder(v) and v not in ("RANDOM", "R"):
                    yield m.start("body") + line.start("v"), m.start("body") + line.end("v"), "password"
    if "://" in text:
        for m in _HOOK_SEG.get().finditer(text):
            rest = m.group("rest")
            for seg in re.finditer(r"[A-Za-z0-9_\-@]{6,}", rest):
                v = seg.group()
                if (
                    any(c.isdigit() for c in v)
                    and (len(v) >= 16 or sum(c.isalpha() for c in v) >= 2)
                    and not re.fullmatch(r"v\d+|\d{1,4}", v)
                ):
                    yield m.start("rest") + seg.start(), m.start("rest") + seg.end(), "secret"
    if "\n" in text:
        for h in _CODE_HEAD_ANY.get().finditer(text):
            eol = text.find("\n", h.end())
            pos = eol + 1 if eol >= 0 else len(text)
            while pos < len(text):
                end = text.find("\n", pos)
                end = len(text) if end < 0 else end
                row = text[pos:end]
                items = list(_CODE_ITEM.get().finditer(row))
                rest = _CODE_ITEM.get().sub("", row)
                if not items or re.search(r"[^\s,.;:)(\d*•-]", rest):
                    break
                for it in items:
                    if any(c.isdigit() for c in it.group()):
                        yield pos + it.start(), pos + it.end(), "secret"
                pos = end + 1
        b = _BARE_CODES.get().match(text)
        if b is not None:
            for it in re.finditer(r"[a-z0-9]{4,6}-[a-z0-9]{4,6}", b.group()):
                if any(c.isdigit() for c in it.group()):
                    yield it.start(), it.end(), "secret"
    if "cookies" in text and _COOKIE_ARRAY.get().search(text):
        for m in _COOKIE_VALUE.get().finditer(text):
            v = m.group("v")
            if _check("key", v, True) or re.fullmatch(r"[0-9a-fA-F]{16,}", v):
                yield m.start("v"), m.end("v"), "token"
    if "kind:" in text and _K8S_SECRET.get().search(text):
        for d in _K8S_DATA.get().finditer(text):
            for it in _K8S_ITEM.get().finditer(d.group("body")):
                if not _placeholder(it.group("v")):
                    yield d.start("body") + it.start("v"), d.start("body") + it.end("v"), "secret"
    if _CARDISH.get().search(text):
        for m in _CARD_CODE.get().finditer(text):
            if _CARDISH.get().search(text, max(0, m.start() - 120), m.start()):
                yield m.start("v"), m.end("v"), "pin"


# --- two-cell rows: a label cell, then its value (Markdown/TSV key/value tables, spreadsheet cells) --------------------
_SHEET_ROW = Lazy(r"(?m)^[A-Z]{1,2}\d{1,5}=\"(?P<k>[^\"\n]{1,60})\"[ \t]+[A-Z]{1,2}\d{1,5}=\"(?P<v>[^\"\n]{1,200})\"[ \t]*$")
_PIPE_ROW = Lazy(r"(?m)^[ \t]*\|?[ \t]*(?P<k>[^|\t\n]{1,60}?)[ \t]*(?:\||\t)[ \t]*`?(?P<v>[^|\t\n`]{1,200}?)`?[ \t]*\|?[ \t]*$")


def _row_kind(label: str) -> str | None:
    from agent_memory.redaction.generic import _LABEL

    label = label.strip(" *`_")
    kind = _kind(label) if " " not in label else None
    if kind is not None:
        return kind
    m = _LABEL.get().search(label)
    if m is None or m.start() > 20:
        return None
    return m.lastgroup


def _cell_value(kind: str, v: str) -> bool:
    if _placeholder(v) or " " in v.strip() and not _DIGIT_GROUPS.get().fullmatch(v.strip()):
        return False
    v = v.strip()
    if kind == "pw":
        return (
            _check("pw", v, False)
            or _pin_value(v)
            or len(v) >= 6
            and sum(not c.isalnum() for c in v) >= 1
            and any(c.isdigit() for c in v)
            and any(c.isalpha() for c in v)
        )
    return _check(kind, v, False) or kind == "key" and _pin_value(v) and len(v) >= 4


def row_spans(text: str) -> Iterator[Span]:
    """``| safe combination | `56-73-45` |``, ``A2="bike lock combination" B2="29157"``: a label cell names the next cell."""
    if '="' in text:
        for m in _SHEET_ROW.get().finditer(text):
            kind = _row_kind(m.group("k"))
            if kind is not None and _cell_value(kind, m.group("v")):
                yield m.start("v"), m.end("v"), _MARK[kind]
    if "|" in text or "\t" in text:
        for m in _PIPE_ROW.get().finditer(text):
            k, v = m.group("k"), m.group("v")
            if set(v) <= set("-:| "):
                continue
            kind = _row_kind(k)
            if kind is not None and _cell_value(kind, v):
                yield m.start("v"), m.end("v"), _MARK[kind]
