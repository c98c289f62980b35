"""Round 4 of the general mechanisms: causes found in holdout6's misses, each written for the whole family.

* **a value before its label** — "brave-kite-… — that's the admin password", "X, c'est le mot de passe", "use X to log
  in", "Use this `X` as the signing secret": a strong value followed, within a few words on its line, by a label;
* **credentials as positional arguments** — ``login(user, pw)``, ``simple_bind_s(dn, pw)``, ``new PDO(dsn, u, pw)``,
  ``NetworkCredential(u, pw)``; a value piped into a command that reads a password from stdin (``sudo -S``,
  ``--password-stdin``, ``chpasswd``); ``net use \\\\srv\\share PASSWORD /user:…``; redis ``requirepass`` / ``AUTH``;
* **structural positions** — an SQL ``INSERT`` whose column list names a secret binds the value in that position; a
  signed URL's ``Signature`` parameter; a fenced value on the line after a label; a call named for a credential
  (``.token("…")``); the output lines of a command named for a credential (``heroku auth:token``,
  ``gcloud auth print-access-token``); the lines of a file named for credentials (``cat …/auth.txt``);
  adjacent string literals in parentheses after a secret's name (Python implicit concatenation);
* **checksums and format families** — card numbers in irregular groups (4-4-4-2) with an issuer prefix and Luhn, TOTP
  seeds written as base32 in groups of four, code lists on one line after a code-list label, BIP-39 words split
  over chat lines (tokens spelt out one character at a time after a short prefix: the engine's ``_SPACED_CHARS``);
* **a credential pair after a credentials word** — "creds are ana / X", "login: ana / X".

Every rule returns spans; the engine filters them through :func:`generic.spared` like all others.  All patterns are
bounded (no nested unbounded repetition), and every rule is gated on a cheap substring test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agent_memory.redaction.anchored import _kind
from agent_memory.redaction.base import I, Lazy
from agent_memory.redaction.bip39 import WORDS
from agent_memory.redaction.generic import _TEST_CARDS, _key_value, _pw_value, _random_enough, _strong_value, passphrase
from agent_memory.redaction.heuristics import _IIN, luhn_ok

Span = tuple[int, int, str]

# Lower-cased substrings a prefilter must treat as cues for this module's word-gated rules (with AFTER_LABEL_STEMS
# below); the rules without a word are gated on shapes instead: digits in groups (cards, code lists), base32 groups of
# four (TOTP seeds), lines of BIP-39 words, and (in the engine) 16 single characters separated by spaces.
TRIGGERS: tuple[str, ...] = (
    "pass",  # password, passwd, requirepass, .pgpass, htpasswd, --password-stdin
    "pw",
    "secret",
    "key",
    "token",
    "auth",  # masterauth, auth.txt, auth:token, Authorization
    "cred",  # creds, credentials, NetworkCredential
    "login",
    "log in",
    "logon",
    "sig",  # sign in, signature, sig=
    "bind",
    "connect",
    "pdo",
    "mysqli",
    "echo",
    "printf",
    "chpasswd",
    "net use",
    "insert",
    "kv get",
    "read -field",
    "--reveal",
    "userlist",
    "netrc",
    "my.cnf",
    "identifiants",
    "zugangsdaten",
    "clave",
    "clé",
    "mot de passe",
    "şifre",
    "senha",
    "parol",
    "sandi",
    "/bot",
    "code",  # backup / recovery code lists
    "códig",
    "codig",
    "codic",
    "kode",
    "otp",  # TOTP / OTP columns and seeds
    "seed",  # round 9: "seed: <base32>" (a TOTP seed under its key)
    "sqlplus",  # round 9: Oracle clients' user/password@db
    "sqlldr",
    "rman",
    "expdp",
    "impdp",
    "dgmgrl",
)


# --- a value before its label ------------------------------------------------------------------------------------
# labels that may follow the value they name (a subset of generic's lexicon, plus "to log in")
_AFTER_LABEL = Lazy(
    r"passwor[dt]|passcode|passphrase|\bpw\b|\bpwd\b|kennwort|mot\s+de\s+passe|contrase(?:ñ|n)a|senha|has(?:ł|l)o|heslo|"
    r"wachtwoord|l(?:ö|o)senord|passord|salasana|parol[aăe]?\b|(?:ş|s)ifre\w*|lozinka|пароль|парол\w+|"
    r"\bclave\b|\bclé\b|\bchave\b|\bchiave\b|secret\b|\btoken\b|api[\s_-]?key|access\s+key|"
    r"\bpin\b|(?:log|sign)[\s-]?in\b|anmelden|einloggen|connecter|connexion|iniciar\s+sesi(?:ó|o)n|entrar\b",
    I,
)
# Lower-cased stems where a label of _AFTER_LABEL can start (a prefilter must treat them as cues too).
AFTER_LABEL_STEMS: tuple[str, ...] = (
    "pass",
    "pw",
    "kennwort",
    "mot de passe",
    "contrase",
    "senha",
    "hasło",
    "haslo",
    "heslo",
    "wachtwoord",
    "lösenord",
    "losenord",
    "salasana",
    "parol",
    "şifre",
    "sifre",
    "lozinka",
    "парол",
    "clave",
    "clé",
    "chave",
    "chiave",
    "secret",
    "token",
    "api",
    "access",
    "pin",
    "log",
    "sign",
    "anmelden",
    "einloggen",
    "conne",
    "iniciar",
    "entrar",
)


def _find_all(low: str, stem: str) -> Iterator[int]:
    i = low.find(stem)
    while i >= 0:
        yield i
        i = low.find(stem, i + 1)


# the value: a run without spaces, quotes or brackets, 8-64 characters, ending the gap before the label
_BEFORE_VALUE = Lazy(r"[`\"'«]?(?P<v>[^\s`\"'«»()\[\]<>{}]{8,64})[`\"'»]?[,.:;]?$")
_DIGIT = Lazy(r"\d")
_VERSIONED = Lazy(r"@v\d+(?:\.\d+)*$|@\d+(?:\.\d+)+$|^v?\d+(?:\.\d+)+")
_EMAIL = Lazy(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def after_value_spans(text: str) -> Iterator[Span]:
    """A value followed by the label that names it, at most five words later on its line."""

    low = text.lower()
    found: Iterator[re.Match[str]]
    if len(low) == len(text):
        starts = sorted({i for stem in AFTER_LABEL_STEMS for i in _find_all(low, stem)})
        found = (m for i in starts if (m := _AFTER_LABEL.get().match(text, i)) is not None)
    else:  # lower-casing changed the length ("İ"): search the whole text
        found = _AFTER_LABEL.get().finditer(text)
    after = 0
    for m in found:
        if m.start() < after:
            continue
        after = m.end()
        line_start = text.rfind("\n", max(0, m.start() - 120), m.start()) + 1 or max(0, m.start() - 120)
        before = text[line_start : m.start()]
        if not before[-1:].isspace():
            continue  # the label is part of a longer run ("….auth.password", "/oauth2/token")
        words = before.split()
        # the value is one of the last six runs before the label; the runs after it are short words
        for back in range(1, min(len(words), 7) + 1):
            cand = words[-back]
            if len(cand) < 8 or _DIGIT.get().search(cand) is None:
                continue
            v = _BEFORE_VALUE.get().search(cand)
            between = words[len(words) - back + 1 :]
            if v is None or any(len(w) > 12 for w in between):
                continue
            value = v.group("v").rstrip(",.:;")
            if "[REDACTED" in value or "/" in value or not value.isascii() or not any(c.isdigit() for c in value):
                continue  # a path, a URL or an action ref ("actions/checkout@v4") is not a password
            if _VERSIONED.get().search(value) or _EMAIL.get().fullmatch(value):
                continue
            label_kind = "key" if re.match(r"(?i)secret|token|api|access|clave|clé|chave|chiave", m.group()) else "pw"
            if not (typed_secret(value) or passphrase(value) or label_kind == "key" and random_key(value)):
                continue
            if any(_strong_value(w.strip("`\"',.:;")) for w in between):
                break
            ahead = text[m.end() : m.end() + 80].split("\n", 1)[0].split()[:3]
            if any(_strong_value(w.strip("`\"',.:;()")) for w in ahead):
                break  # "… with token ghp_…": the label binds the value after it
            # where the candidate run ends in the text: search back from the label
            pos = before.rfind(cand)
            if pos < 0:
                break
            s = line_start + pos + cand.index(value)
            yield s, s + len(value), "password"
            break


_SPECIAL = Lazy(r"[!@#$%^&*?+=~|<>{}\[\]()]")


def typed_secret(v: str) -> bool:
    """A password with no label to vouch for it: 8+ characters of three classes (``_strong_value``), and either a
    symbol other than ``-_./:`` or upper and lower case with digits over 12+ characters.  Issue keys (``JIRA-20431``),
    releases (``release-2024.11``), identifiers (``analytics_2024``) and model names (``iPhone15Pro``) are not."""

    if not _strong_value(v) or _EMAIL.get().fullmatch(v) or "://" in v:
        return False
    if _SPECIAL.get().search(v.strip("()[]{}<>")):
        return True
    upper = any(c.isupper() for c in v)
    lower = any(c.islower() for c in v)
    return upper and lower and len(v) >= 12 and sum(c.isdigit() for c in v) >= 2


def random_key(v: str) -> bool:
    """A machine-made key of 16+ characters (hex, base62, base64) where a key label names it."""

    return len(v) >= 16 and (_key_value(v) or _random_enough(v)) and not _VERSIONED.get().search(v)


# --- credentials as positional arguments ----------------------------------------------------------------------------
_AUTH_CALL = Lazy(
    r"(?:\b\w*(?:login|log_in|logon|signin|sign_in|authenticate|auth_plain|bind\w*|connect)|\bnew\s+PDO|\bPDO|\bmysqli(?:_connect)?|"
    r"\bNetworkCredential|\bPasswordAuthentication|\bUsernamePasswordCredentials?|\bHTTPBasicAuth|\bBasicAuth|\bHTTPDigestAuth|"
    r"\bUsernamePasswordAuthenticationToken|\bConnect-\w+)[ \t]*\((?P<args>[^()\n]{3,400})\)",
    I,
)
_STR_LIT = Lazy(r"\"(?P<d>[^\"\n]{1,200})\"|'(?P<s>[^'\n]{1,200})'")
_STDIN_PIPE = Lazy(
    r"\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)?(?:'(?P<s>[^'\n]{4,200})'|\"(?P<d>[^\"\n]{4,200})\"|(?P<b>[^\s|'\"]{4,200}))"
    r"(?:\\n)?[ \t]*\|[ \t]*(?:sudo[ \t]+-S\b|[^\n|]{0,80}?(?:--password-stdin|--passwd-stdin|\bpasswd\b|\bchpasswd\b|-p[ \t]*-(?:\s|$)|\bsudo\b[^\n|]{0,20}-S\b))"
)
_NET_USE = Lazy(r"\bnet[ \t]+use\b[^\n]{0,120}?[ \t](?P<v>[^\s/\\\"']{4,80})[ \t]+/u(?:ser)?:", I)
_NET_USE_AFTER = Lazy(r"\bnet[ \t]+use\b[^\n]{0,120}?/u(?:ser)?:[^\s]+[ \t]+(?P<v>[^\s/\\\"']{4,80})(?=[ \t]|$)", I | re.M)
_REDIS = Lazy(
    r"\b(?:requirepass|masterauth|CONFIG[ \t]+SET[ \t]+(?:requirepass|masterauth)|AUTH(?:[ \t]+default)?)[ \t]+"
    r"(?:\"(?P<d>[^\"\n]{4,200})\"|'(?P<s>[^'\n]{4,200})'|(?P<b>[^\s\"']{4,200}))",
    I,
)


def _lit(m: re.Match[str]) -> tuple[int, int]:
    g = "d" if m.group("d") is not None else "s"
    return m.start(g), m.end(g)


def credential_call_spans(text: str) -> Iterator[Span]:

    low = text.lower()
    if "(" in text and any(t in low for t in ("login", "logon", "sign", "auth", "bind", "connect", "pdo", "mysqli", "credential")):
        for m in _AUTH_CALL.get().finditer(text):
            lits = list(_STR_LIT.get().finditer(text, m.start("args"), m.end("args")))
            if len(lits) < 2:
                continue
            s, e = _lit(lits[-1])
            v = text[s:e]
            if "@" in v and "." in v.split("@")[-1] and not _strong_value(v.split("@")[0]):
                continue  # an e-mail address
            if typed_secret(v) or passphrase(v):
                yield s, e, "password"
    if "|" in text and ("echo" in low or "printf" in low):
        for m in _STDIN_PIPE.get().finditer(text):
            g = next(k for k in ("s", "d", "b") if m.group(k) is not None)
            if typed_secret(m.group(g)) or passphrase(m.group(g)):
                yield m.start(g), m.end(g), "password"
    if "net" in low and "/u" in low:
        for pattern in (_NET_USE, _NET_USE_AFTER):
            for m in pattern.get().finditer(text):
                v = m.group("v")
                # round 9: the one word between the share and "/user:" is the password by syntax ("…coQO" with two
                # digits, a dot and mixed case reads as no password on its own)
                if v != "*" and not v.endswith(":") and (typed_secret(v) or passphrase(v) or _net_use_password(v)):
                    yield m.start("v"), m.end("v"), "password"
    if "requirepass" in low or "masterauth" in low or "auth" in low:
        for m in _REDIS.get().finditer(text):
            g = next(k for k in ("d", "s", "b") if m.group(k) is not None)
            v = m.group(g)
            if typed_secret(v) or passphrase(v) or (_pw_value(v) and "requirepass" in m.group().lower()):
                yield m.start(g), m.end(g), "password"


# --- structural positions --------------------------------------------------------------------------------------------
_INSERT = Lazy(
    r"\binsert[ \t]+into[ \t]+[`\"\[]?[\w.]{1,64}[`\"\]]?[ \t]*\((?P<cols>[^()\n]{1,600})\)[ \t\n]*values[ \t\n]*(?P<rows>(?:\([^()\n]{1,2000}\)[ \t\n]*,?[ \t\n]*){1,50})",
    I,
)
_SQL_VALUE = Lazy(r"'(?P<s>(?:[^'\n]|''){0,400})'|(?P<b>[^,()'\s][^,()\n]{0,100})")
_SECRET_COLUMN = Lazy(r"pass(?:word|wd|phrase)?|pwd|secret|token|api_?key|private_?key|pin|otp_?secret|totp|seed|credential", I)
_NOT_SECRET_COLUMN = Lazy(r"hash|digest|salt|_at$|expires|hint|length|policy|_id$|type|changed|reset|enabled|updated|created", I)


def sql_spans(text: str) -> Iterator[Span]:
    """``INSERT INTO t (…, password, …) VALUES (…, 'x', …)``: the value in a secret column's position."""

    if "insert" not in text.lower():
        return
    for m in _INSERT.get().finditer(text):
        cols = [c.strip().strip('`"[]') for c in m.group("cols").split(",")]
        wanted = [i for i, c in enumerate(cols) if _SECRET_COLUMN.get().search(c) and not _NOT_SECRET_COLUMN.get().search(c)]
        if not wanted:
            continue
        for row in re.finditer(r"\(([^()\n]{1,2000})\)", m.group("rows")):
            base = m.start("rows") + row.start(1)
            values = list(_SQL_VALUE.get().finditer(row.group(1)))
            for i in wanted:
                if i < len(values):
                    vm = values[i]
                    g = "s" if vm.group("s") is not None else "b"
                    v = vm.group(g).strip()
                    if v.upper() in ("NULL", "DEFAULT", "") or not (_pw_value(v) or _key_value(v)):
                        continue
                    s = base + vm.start(g)
                    yield s, s + len(vm.group(g).rstrip()), "password"


_SIGNATURE_PARAM = Lazy(r"[?&](?:x-[a-z]+-)?(?:signature|sig)=(?P<v>[A-Za-z0-9%+/_\-=.]{16,4096})", I)


def signed_url_spans(text: str) -> Iterator[Span]:
    """A signed URL's signature grants the access: ``X-Goog-Signature=…``, ``X-Amz-Signature=…``, ``sig=…``."""
    low = text.lower()
    if "sig" not in low or "?" not in text:
        return
    for m in _SIGNATURE_PARAM.get().finditer(text):
        yield m.start("v"), m.end("v"), "token"


_FENCED_AFTER_LABEL = Lazy(
    r"(?:api[\s_-]?key|auth[\s_-]?token|access[\s_-]?token|token|secret|password|passwort|mot de passe|contraseña|senha)[ \t]*[:：][ \t]*"
    r"(?:\\n|\r?\n)[ \t]*(?:```|`)[ \t]*(?P<v>[A-Za-z0-9+/_\-=.~!@#$%^&*]{8,200})[ \t]*(?:```|`)",
    I,
)
_CREDENTIAL_CALL = Lazy(
    r"(?:[.:]|\b)(?:token|api_?key|apiKey|secret|password|passwd|auth_?token|authToken|access_?token|accessToken|bearer_?auth|"
    r"bearerAuth|client_?secret|clientSecret|with_?token|withToken|set_?token|setToken|set_?password|setPassword|"
    r"set_?api_?key|setApiKey|basic_?auth|basicAuth|credentials?)[ \t]*\([ \t]*(?:\"(?P<d>[^\"\n]{8,200})\"|'(?P<s>[^'\n]{8,200})')[ \t]*\)"
)


def bound_spans(text: str) -> Iterator[Span]:
    """A fenced value on the line after a label; a string literal passed to a call named for a credential."""

    low = text.lower()
    if "`" in text:
        for m in _FENCED_AFTER_LABEL.get().finditer(text):
            v = m.group("v")
            if _key_value(v) or _strong_value(v) or _UUID.get().fullmatch(v):
                yield m.start("v"), m.end("v"), "secret"
    if "(" in text and any(t in low for t in ("token", "key", "secret", "passw", "auth", "credential")):
        for m in _CREDENTIAL_CALL.get().finditer(text):
            s, e = _lit(m)
            v = text[s:e]
            if _key_value(v) or _strong_value(v) or _UUID.get().fullmatch(v):
                yield s, e, "secret"


_UUID = Lazy(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# a shell command whose name says it prints a credential
_PRINTS_SECRET = Lazy(
    r"(?m)^[ \t]*(?:[$#>%][ \t]*|PS [^>\n]{0,80}>[ \t]*)(?P<cmd>[^\n]{0,200}?(?:auth:token|print-access-token|print-identity-token|"
    r"get-access-token|get-login-password|get-authorization-token|auth[ \t]+token|token[ \t]+create|create-token|"
    r"api-key[ \t]+create|keys[ \t]+create|secret[ \t]+show|secrets?[ \t]+get|password[ \t]+(?:show|get)|"
    r"get-secret-value|kv[ \t]+get|read[ \t]+-field|show-password|--show-password|--reveal|"
    # round 6: a secret decoded or read back by its store's own command
    r"get[ \t]+secrets?\b[^\n|]{0,200}\|[ \t]*base64[ \t]+(?:-d|--decode|-D)|connections[ \t]+(?:get|list|export)|"
    r"secrets[ \t]+versions[ \t]+access|\bop[ \t]+read|\bpass[ \t]+show|find-generic-password[^\n]{0,100}-w|"
    r"config:get|secrets[ \t]+get[^\n]{0,80}--plain)[^\n]{0,200})$",
    I,
)
_OUTPUT_LINE = Lazy(r"[ \t]*(?P<v>[A-Za-z0-9+/_\-=.~:]{16,4096})[ \t]*")


def output_spans(text: str) -> Iterator[Span]:
    """A one-token line printed by a command named for a credential (within the next four lines)."""

    if "\n" not in text or not any(c in text for c in "$#>%"):
        return
    for m in _PRINTS_SECRET.get().finditer(text):
        pos = m.end() + 1
        for _ in range(4):
            if pos >= len(text):
                break
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = text[pos:end]
            if re.match(r"[ \t]*[$#>%][ \t]", line):
                break  # the next prompt
            prompt = re.search(r"[$#%>][ \t]*$", line)
            if prompt is not None and prompt.start() > 0:
                line = line[: prompt.start()]  # output with no newline runs into the next prompt ("…9BRe-$ ")
            o = _OUTPUT_LINE.get().fullmatch(line)
            if o is not None:
                v = o.group("v")
                if _UUID.get().fullmatch(v) or _key_value(v):
                    yield pos + o.start("v"), pos + o.end("v"), "token"
                    break
            # a password among the output's words (a decoded secret, a connection's fields in columns)
            hit = False
            for w in re.finditer(r"[^\s\"']{8,200}", line):
                if typed_secret(w.group()) and not _EMAIL.get().fullmatch(w.group()) and "://" not in w.group():
                    yield pos + w.start(), pos + w.end(), "password"
                    hit = True
            if hit:
                break
            pos = end + 1


# the contents of a file named for credentials, shown by cat/type/Get-Content
_CRED_FILE = Lazy(
    r"(?m)^[ \t]*[$#>%]?[ \t]*(?:sudo[ \t]+)?(?:cat|type|more|less|head|Get-Content|gc)[ \t]+[^\n]{0,200}?"
    r"(?:auth[\w.-]*\.(?:txt|conf|cfg)|pass(?:word)?s?(?:\.txt|\.conf)?|passwd|\.pgpass|\.netrc|_netrc|credentials?(?:\.\w+)?|"
    r"secrets?(?:\.\w+)?|userlist\.txt|\.htpasswd|\.my\.cnf|auth-user-pass\w*)[ \t]*$",
    I,
)


def cred_file_spans(text: str) -> Iterator[Span]:
    """``cat /etc/openvpn/auth.txt`` followed by ``user`` / ``password`` lines: the lines that look like passwords."""

    if "\n" not in text:
        return
    for m in _CRED_FILE.get().finditer(text):
        pos = m.end() + 1
        for _ in range(12):
            if pos >= len(text):
                break
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = text[pos:end]
            if re.match(r"[ \t]*[$#>%][ \t]", line):
                break
            for w in re.finditer(r"[^\s:\"']{8,200}", line):
                if typed_secret(w.group()) and not re.fullmatch(r"[\w.+-]+@[\w-]+\.[\w.]+", w.group()):
                    yield pos + w.start(), pos + w.end(), "password"
            pos = end + 1


_CONCAT = Lazy(
    r"(?P<name>[A-Za-z_][\w.]{0,60})[\"']?[ \t]*(?::=|=|:)[ \t]*\([ \t]*\r?\n?(?P<body>(?:[ \t]*(?:\"[^\"\n]{2,200}\"|'[^'\n]{2,200}')[ \t]*\+?[ \t]*\r?\n?){2,12})[ \t]*\)"
)


_CONCAT_GATE = Lazy(r"[=:][ \t]*\([ \t]*\r?\n?[ \t]*[\"']")


def concat_spans(text: str) -> Iterator[Span]:
    """``SECRET = ("abc…" "def…")``: adjacent string literals after a secret's name are one value."""

    if "(" not in text or _CONCAT_GATE.get().search(text) is None:
        return
    for m in _CONCAT.get().finditer(text):
        name = m.group("name").split(".")[-1]
        kind = _kind(name) or (
            "key" if re.fullmatch(r"(?i)secret|token|password|passwd|api_?key|key|private_?key|credentials?", name) else None
        )
        if kind is None or kind == "id":
            continue
        lits = list(_STR_LIT.get().finditer(text, m.start("body"), m.end("body")))
        joined = "".join(text[slice(*_lit(x))] for x in lits)
        if _strong_value(joined) or len(joined) >= 16:
            for x in lits:
                s, e = _lit(x)
                yield s, e, "secret"


# --- checksums and format families -------------------------------------------------------------------------------------
_FOUR_FOUR = Lazy(r"\d{4}[ -]\d{4}[ -]\d")
_CARD_IRREGULAR = Lazy(r"(?<![\w.+/-])\d{4}(?P<s>[ -])\d{4}(?P=s)\d{4}(?P=s)\d{1,3}(?![\w-]|[.,]\d|[ -]\d)", re.A)
_CARD_AMEX = Lazy(r"(?<![\w.+/-])3[47]\d\d(?P<s>[ -])\d{4}(?P=s)\d{4}(?P=s)\d{3}(?![\w-]|[.,]\d|[ -]\d)", re.A)
_BASE32_GROUPS = Lazy(r"(?<![\w-])(?:[a-z2-7]{4}(?: [a-z2-7]{4}){3,15}|[A-Z2-7]{4}(?: [A-Z2-7]{4}){3,15})(?: [a-zA-Z2-7]{1,4})?(?![\w-])")
_CODE_LIST_LABEL = Lazy(
    r"(?:backup|recovery|rescue|one[\s-]time|scratch|emergency|wiederherstellungs|sicherungs|secours|r(?:é|e)cup(?:é|e)ration|"
    r"respaldo|recupera(?:ç|c)(?:ã|a)o|recupero|herstel)[\s-]?(?:codes?|c(?:ó|o)digos?|codici|kodes?)\b[^\n]{0,60}?[:：]",
    I,
)
_LIST_ITEM = Lazy(r"[ \t]*(?P<v>[A-Za-z0-9]{3,10}(?:[ -][A-Za-z0-9]{3,10})?)[ \t]*(?:[,;]|$)")


def format_spans(text: str) -> Iterator[Span]:

    if _DIGIT.get().search(text) is not None:
        for pattern in (_CARD_IRREGULAR, _CARD_AMEX) if _FOUR_FOUR.get().search(text) else ():
            for m in pattern.get().finditer(text):
                digits = re.sub(r"\D", "", m.group())
                if 13 <= len(digits) <= 19 and len(set(digits)) > 2 and _IIN.get().match(digits) and luhn_ok(digits):
                    yield m.start(), m.end(), "card_number"
        if " " in text:
            for m in _BASE32_GROUPS.get().finditer(text):
                groups = m.group().split()
                core = "".join(groups)
                with_digit = sum(any(c.isdigit() for c in g) for g in groups)
                # round 8: groups of digits alone are a number's ("test card 4242 4242 4242 4242 with any"): a base32
                # seed has a group of four digits once in a thousand groups
                if sum(g.isdigit() for g in groups) >= 2:
                    continue
                if 16 <= len(core) <= 64 and with_digit >= 2 and with_digit * 4 >= len(groups):
                    yield m.start(), m.end(), "token"
        low = text.lower()
        codes = any(w in low for w in ("code", "códig", "codig", "codic", "kode"))
        for m in _CODE_LIST_LABEL.get().finditer(text) if codes else ():
            line_end = text.find("\n", m.end())
            line_end = len(text) if line_end < 0 else line_end
            items = []
            pos = m.end()
            while pos < line_end:
                it = _LIST_ITEM.get().match(text, pos, line_end)
                if it is None or it.end() == pos:
                    break
                items.append((it.start("v"), it.end("v")))
                pos = it.end()
            values = [text[s:e] for s, e in items]
            if len(items) >= 3 and all(sum(c.isdigit() for c in v) >= 3 for v in values):
                for s, e in items:
                    yield s, e, "token"


def seed_split_spans(text: str) -> Iterator[Span]:
    """BIP-39 words split over chat lines ("[10:01] ana: math thing pelican first" …): 12+ words in a row of lines."""

    if text.count("\n") < 2 or len(WORDS.intersection(text.lower().split())) < 6:
        return
    run: list[tuple[int, int]] = []
    count = 0
    pos = 0
    for line in text.split("\n") + [""]:
        toks = line.split()
        lead = 0
        while lead < min(3, len(toks)) and (toks[lead].endswith((":", "]")) or toks[lead].startswith("[")):
            lead += 1  # "[10:01] ana:" — a chat line's time and speaker
        words = toks[lead:]
        if 2 <= len(words) <= 24 and WORDS.issuperset(words):
            first = line.find(words[0], sum(len(t) for t in toks[:lead]))
            last = line.rfind(words[-1])
            run.append((pos + first, pos + last + len(words[-1])))
            count += len(words)
        else:
            if count >= 12 and len(run) >= 2:
                for s, e in run:
                    yield s, e, "seed_phrase"
            run, count = [], 0
        pos += len(line) + 1


# --- a credential pair after a credentials word ----------------------------------------------------------------------
_CRED_PAIR = Lazy(
    r"\b(?:creds|credentials|credenciales|credenciais|identifiants|zugangsdaten|login(?:\s+(?:is|are|:))?|logins?)\b[^\n]{0,24}?"
    r"(?:[:=]|\bare\b|\bis\b|\bsont\b|\bsind\b|\bson\b)[ \t]*(?P<u>[^\s/:]{1,64})[ \t]*(?:/|:|\|)[ \t]*(?P<v>[^\s]{4,128})",
    I,
)


def pair_spans(text: str) -> Iterator[Span]:

    low = text.lower()
    if not any(t in low for t in ("cred", "identifiants", "zugangsdaten", "login")):
        return
    for m in _CRED_PAIR.get().finditer(text):
        v = m.group("v").rstrip(".,;")
        if typed_secret(v) or passphrase(v):
            yield m.start("v"), m.start("v") + len(v), "password"


# an expression that reads a secret (an env lookup or a name), then the value it evaluates to in a REPL or notebook
_EVAL_SECRET = Lazy(
    r"(?:os\.environ(?:\.get)?[ \t]*[\[(][ \t]*\\?[\"'](?P<a>[\w.-]{2,80})\\?[\"'][ \t]*[\])]|os\.getenv\([ \t]*\\?[\"'](?P<b>[\w.-]{2,80})\\?[\"'][ \t]*\)|"
    r"process\.env\.(?P<c>\w{2,80})|ENV\[[ \t]*\\?[\"'](?P<d>[\w.-]{2,80})\\?[\"'][ \t]*\]|(?:>>>|In[ \t]*\[\d+\]:)[ \t]*(?P<e>[A-Za-z_][\w.]{1,80})[ \t]*$)",
    re.M,
)
# what marks the output that follows: a new line, "Out[3]:", a notebook's "text/plain", "=>"
_EVAL_OUT = Lazy(r"(?:Out[ \t]*\[\d+\]:|\"text/plain\"|=>|\n)[^'\n]{0,80}?(?<![\w\\])\\?'(?P<v>[^'\s\\]{8,200})\\?'")


def eval_spans(text: str) -> Iterator[Span]:
    """``os.environ['OCI_AUTH_TOKEN']`` evaluated in a REPL or a notebook prints the token: the quoted value after it."""
    if "'" not in text or not any(t in text for t in ("environ", "getenv", "process.env", "ENV[", ">>>", "In [", "In[")):
        return
    for m in _EVAL_SECRET.get().finditer(text):
        name = next(g for g in (m.group(k) for k in "abcde") if g is not None)
        last = re.split(r"[._-]", name)[-1]
        if _kind(name) in (None, "id") and not re.fullmatch(r"(?i)token|secret|password|passwd|pwd|key|apikey", last):
            continue
        o = _EVAL_OUT.get().search(text, m.end(), min(len(text), m.end() + 400))
        if o is not None and "\n" not in text[m.end() : o.start()].replace("\\n", "") or o is not None and "text/plain" in o.group():
            v = o.group("v")
            if typed_secret(v) or _key_value(v) or passphrase(v):
                yield o.start("v"), o.end("v"), "secret"
        elif o is not None:
            v = o.group("v")
            if typed_secret(v) or _key_value(v) or passphrase(v):
                yield o.start("v"), o.end("v"), "secret"


# --- round 9: holdout11's misses, by cause ------------------------------------------------------------------------------
def _net_use_password(v: str) -> bool:
    """The word in ``net use``'s password position: 6+ characters of three classes."""
    classes = any(c.islower() for c in v) + any(c.isupper() for c in v) + any(c.isdigit() for c in v)
    classes += any(not c.isalnum() for c in v)
    return len(v) >= 6 and classes >= 3


# MySQL's password hash (mysql.user authentication_string, mysql_native_password): "*" and 40 upper-case hex digits
_MYSQL_HASH = Lazy(r"(?<![\w*])\*[0-9A-F]{40}(?![\w])")
# a TOTP/OTP seed under its key: "seed: JBSW…", "totp_seed=…", "\"otpSeed\": \"…\"" (base32, one case, 16+ characters)
_SEED_VALUE = Lazy(
    r"(?<![A-Za-z0-9])(?:(?:totp|otp|mfa|2fa|auth)[_-]?)?(?:seed|Seed|SEED)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?P<v>[A-Z2-7]{16,128}|[a-z2-7]{16,128})=*(?![A-Za-z0-9])"
)
# a code list under its heading, one code a line ("BACKUP VERIFICATION CODES\n1. 9076 0432\n2. …"): the heading names
# backup/recovery codes, perhaps with a word between ("backup verification codes", "recovery one-time codes")
_CODE_HEADING = Lazy(
    r"(?:backup|recovery|rescue|scratch|emergency|wiederherstellungs|sicherungs|secours|respaldo|recupero|herstel)"
    r"(?:[\s-]+[A-Za-z-]{2,20})?[\s-]?(?:codes?|c(?:ó|o)digos?|codici|kodes?)\b[^\n]{0,40}$",
    I | re.M,
)
_CODE_LINE = Lazy(r"[ \t]*(?:\d{1,2}[.)][ \t]*|[-*•][ \t]*)?(?P<v>[A-Za-z0-9]{3,10}(?:[ -][A-Za-z0-9]{3,10})?)[ \t]*$")
# Oracle's clients take "user/password@connect": sqlplus system/Dr@g0n629?@//host:1521/SVC (the password may hold "@")
_ORACLE_LOGIN = Lazy(
    r"\b(?:sqlplus|sqlldr|rman|expdp|impdp|dgmgrl)(?:\.exe)?[ \t]+(?:-[A-Za-z]+[ \t]+){0,3}"
    r"(?:(?:user(?:id)?|target)=)?[\"']?[A-Za-z_][\w$#]{0,30}/(?P<v>[^\s/\"'][^\s\"']{0,120})",
    I,
)


# a card's security code written without its label right after the card's expiry ("4299-5627-…\n06/29 / 548",
# "… 12/26 4684"): the card, the expiry and the code in that order, within a few characters of one another
_EXPIRY_CODE = Lazy(r"(?<![\d/])(?:0[1-9]|1[0-2])[/-](?:\d{2}|20\d{2})[ \t]*(?:[/|,;·•][ \t]*)?(?P<v>\d{3,4})(?![\d/.,:-])")
_CARD_BEFORE = Lazy(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")


def round9_spans(text: str) -> Iterator[Span]:
    """MySQL password hashes, TOTP seeds under a ``seed`` key, code lists one a line under their heading, Oracle
    ``user/password@db`` logins, a card's code after its expiry."""
    if "/" in text or "-" in text:
        for m in _EXPIRY_CODE.get().finditer(text):
            cards = list(_CARD_BEFORE.get().finditer(text, max(0, m.start() - 60), m.start()))
            if cards and m.start() - cards[-1].end() <= 24:
                digits = re.sub(r"\D", "", cards[-1].group())
                if 13 <= len(digits) <= 19 and _IIN.get().match(digits) and luhn_ok(digits) and digits not in _TEST_CARDS:
                    yield m.start("v"), m.end("v"), "card_number"
    if "*" in text:
        for m in _MYSQL_HASH.get().finditer(text):
            yield m.start(), m.end(), "password"
    low = text.lower()
    if "seed" in low:
        for m in _SEED_VALUE.get().finditer(text):
            v = m.group("v")
            if sum(c in "234567" for c in v) >= 2 and len(set(v)) >= 8:
                yield m.start("v"), m.end("v"), "token"
    if "\n" in text and any(w in low for w in ("code", "códig", "codig", "codic", "kode")):
        for m in _CODE_HEADING.get().finditer(text):
            items: list[tuple[int, int]] = []
            pos = m.end() + 1
            while pos < len(text) and len(items) < 40:
                end = text.find("\n", pos)
                end = len(text) if end < 0 else end
                it = _CODE_LINE.get().match(text, pos, end)
                if it is None or sum(c.isdigit() for c in it.group("v")) < 3:
                    break
                items.append((it.start("v"), it.end("v")))
                pos = end + 1
            if len(items) >= 3:
                for s, e in items:
                    yield s, e, "token"
    if any(w in low for w in ("sqlplus", "sqlldr", "rman", "expdp", "impdp", "dgmgrl")):
        for m in _ORACLE_LOGIN.get().finditer(text):
            s, v = m.start("v"), m.group("v")
            at = v.rfind("@")
            v = v[:at] if at > 0 else v
            if v and not v.startswith(("$", "<", "{")) and v.lower() not in ("password", "pass", "pwd"):
                yield s, s + len(v), "password"


def spans(text: str) -> Iterator[Span]:
    """Every span of this module's rules (the engine adds them after the general mechanisms)."""
    yield from round9_spans(text)
    yield from eval_spans(text)
    yield from after_value_spans(text)
    yield from credential_call_spans(text)
    yield from sql_spans(text)
    yield from signed_url_spans(text)
    yield from bound_spans(text)
    yield from output_spans(text)
    yield from cred_file_spans(text)
    yield from concat_spans(text)
    yield from format_spans(text)
    yield from seed_split_spans(text)
    yield from pair_spans(text)


# --- spans that absorb a shorter part found by an earlier rule ---------------------------------------------------------
_AUTH_VALUE = Lazy(r"authorization[ \t]*:[ \t]*(?:bearer|token)[ \t]+(?P<v>[^\s\"'`,;]{8,400})", I)
_BOT_URL = Lazy(r"/bot(?P<v>\d{6,12}:[A-Za-z0-9_\-]{30,60})(?![A-Za-z0-9_\-])")


def merge_spans(text: str) -> Iterator[Span]:
    """Whole values whose head or tail an earlier rule took alone: a bearer value with ``:``/``/`` in it (Asana
    ``2/…/…:…``), a bot token in a URL path (``/bot<id>:<secret>``)."""
    low = text.lower()
    if "authorization" in low:
        for m in _AUTH_VALUE.get().finditer(text):
            if ":" in m.group("v") or m.group("v").count("/") >= 2:
                yield m.start("v"), m.end("v"), "bearer_token"
    if "/bot" in text:
        for m in _BOT_URL.get().finditer(text):
            yield m.start("v"), m.end("v"), "telegram_token"
