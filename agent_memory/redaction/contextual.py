"""Secrets named by what surrounds them, in shapes the other rule sets do not parse.

* argument vectors (``["redis-cli", "-a", "X"]``, ``subprocess.run([...])``): read as the command line they are;
* a quoted secret name paired with a quoted value (``define('DB_PASSWORD', 'X')``, ``os.environ["API_TOKEN"] = "X"``,
  ``System.setProperty("…keyStorePassword", "X")``) and XML name/value pairs (``<key>ClientSecret</key><string>X``,
  Hadoop ``<name>…secret.key</name><value>X``);
* random-looking string arguments of an SDK client or credential constructor (``cohere.Client('X')``,
  ``Credential("id", "X")``, ``bot.run('X')``);
* a token as the user part of a URL (``https://<key>@o1.ingest.sentry.io/…``) or a path segment after ``/key/``,
  ``/token/``, ``/v3/`` …;
* router and switch configs (``enable secret 0 X``, ``password 7 X``, ``tacacs-server key X``, ``snmp-server community X``);
* tables whose column (or row label) names a secret (markdown pipes, CSV/TSV with a header);
* key material as bytes next to a name that says key (``aes_key[16] = { 0x54, … }``, ``b"\\x54\\x02…"``);
* the output of ``cat`` on a secret file (``cat config/master.key``), values piped to ``chpasswd`` /
  ``passwd --stdin``, a login written as ``user / password``, a password spelled out one character at a time;
* a private JSON Web Key's private members (``"d"``, ``"p"``, ``"q"``, ``"k"`` …);
* a token too short for its provider's format but carrying a prefix nothing else carries (half of a split
  ``ghp_…``), and the random run that continues it on the next lines.

:func:`public_spans` names what must never be redacted whatever a rule says: encrypted-at-rest envelopes made to be
committed (SOPS ``ENC[…]``, Ansible Vault bodies, SealedSecret ``encryptedData``) and the public members of a JWK.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from agent_memory.redaction.base import A, I, Lazy, token_like
from agent_memory.redaction.general import _at, pw_like
from agent_memory.redaction.keyvalue import NOT_A_VALUE, PLACEHOLDER_RE, placeholder_value, public_value
from agent_memory.redaction.providers import entropy

Span = tuple[int, int, str]
SpansOf = Callable[[str, str], Iterator[Span]]

_SECRET_NAME = (
    r"(?:pass(?:word|wd|phrase|code)?|pwd|secret|token|api[_.-]?key|apikey|auth[_.-]?key|private[_.-]?key|access[_.-]?key|salt|credential)"
)


def looks_placeholder(v: str) -> bool:
    """A reference, template, mask or placeholder rather than a value."""
    return bool(
        PLACEHOLDER_RE.get().match(v)
        or placeholder_value(v)
        or v.lower() in NOT_A_VALUE
        or re.fullmatch(
            r"(?i)(?:your|my|the|some|enter|insert)[-_ ].*|.*[-_](?:here|placeholder)|x{4,}|\*{3,}|<.*>|\.{3,}|replace[-_]?me", v
        )
    )


def value_ok(v: str) -> bool:
    """A plausible literal credential: not empty, not only letters or a number, not a placeholder."""
    return len(v) >= 4 and any(c.isalnum() for c in v) and not v.isalpha() and not v.isdigit() and not looks_placeholder(v)


def random_token(v: str, min_len: int = 16) -> bool:
    """Machine-made: long, no spaces, a digit and both cases (or 32+ hex) and enough entropy."""
    if len(v) < min_len or any(c.isspace() for c in v) or "//" in v or looks_placeholder(v):
        return False
    if re.fullmatch(r"[0-9a-fA-F]{32,}", v):
        return True
    digits = sum(c.isdigit() for c in v)
    upper = sum(c.isupper() for c in v)
    lower = sum(c.islower() for c in v)
    return digits >= 2 and upper >= 2 and lower >= 2 and entropy(v) >= 3.5


# --- argument vectors ----------------------------------------------------------------------------------------------
_ARGV = Lazy(r"""\[[ \t]*(?:"[^"\r\n]*"|'[^'\r\n]*')(?:[ \t]*,[ \t]*(?:"[^"\r\n]*"|'[^'\r\n]*')){2,60}[ \t]*,?[ \t]*\]""")
_ELEM = Lazy(r""""([^"\r\n]*)"|'([^'\r\n]*)'""")


def argv_spans(text: str, cli: SpansOf) -> Iterator[Span]:
    """A command written as a list of strings, read by the command-line rules ``cli``."""
    for m in _ARGV.get().finditer(text):
        parts: list[str] = []
        starts: list[tuple[int, int, int]] = []  # (offset in joined, offset in text, length)
        pos = 0
        for el in _ELEM.get().finditer(text, m.start(), m.end()):
            g = 1 if el.start(1) >= 0 else 2
            value = el.group(g)
            starts.append((pos, el.start(g), len(value)))
            parts.append(value)
            pos += len(value) + 1
        joined = " ".join(parts)
        for s, e, kind in cli(joined, joined.lower()):
            for j, t, n in starts:
                if j <= s and e <= j + n:
                    yield t + s - j, t + e - j, kind
                    break


# --- quoted name paired with a quoted value; XML pairs -----------------------------------------------------------
_QPAIR = Lazy(
    r"(?P<q>[\"'])(?P<key>[\w.-]{0,60}?(?:" + _SECRET_NAME + r"|key)[\w.-]{0,20}?)(?P=q)[ \t]*"
    r"(?:\][ \t]*=|,|=>|\)[ \t]*=)[ \t]*(?:\r?\n[ \t]*)?(?P<q2>[\"'])(?P<v>(?:(?!(?P=q2))[^\r\n\\]|\\.){4,300})(?P=q2)",
    I | A,
)
_NAMES_SECRET = Lazy(_SECRET_NAME, I | A)
_NOT_SECRET_NAME = Lazy(
    r"(?:^|[_.-]|(?<=[a-z])(?=[A-Z]))(?:public|pub|id|hash|cache|file|path|name|type|prefix|sort|partition|idempotency"
    r"|primary|foreign|lookup|dedupe?|row|index|shard|url|uri|host|user|username|field|header|column|length|size|min|max)"
    r"(?:$|[_.-]|(?=[A-Z]))",
    I,
)
_XML_PAIR = Lazy(
    r"<(?P<t1>key|name)>[ \t]*(?P<key>[^<\r\n]{0,80}?(?:" + _SECRET_NAME + r"|key)[^<\r\n]{0,40}?)[ \t]*</(?P=t1)>\s*"
    # round 9: the value element may carry attributes (KeePass's <Value ProtectInMemory="True">)
    r"(?:<description>[^<]{0,300}</description>\s*)?<(?P<t2>string|value|data)(?:[ \t][^<>\r\n]{0,120})?>[ \t]*"
    r"(?P<v>[^<\r\n]{4,400}?)[ \t]*</(?P=t2)>",
    I,
)


_WORDS_OF = Lazy(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])")
_NOT_SECRET_LAST = frozenset(
    "hash digest id ids name names type file path url uri length len size min max policy field header column prefix ttl"
    " expiry expires expiration timeout version format host user username fingerprint count".split()
)
_PUBLIC_WORDS = frozenset("public pub publishable site sitekey".split())


def name_is_secret(key: str) -> bool:
    """Does an identifier name a secret?  ``hash_salt``, ``DB_PASSWORD``, ``appKey`` yes; ``password_hash``,
    ``public_key``, ``cache_key``, ``token_ttl`` no.  A bare ``…key`` needs a random value (see callers)."""
    words = [w.lower() for w in _WORDS_OF.get().findall(key)]
    if not words or words[-1] in _NOT_SECRET_LAST or not _PUBLIC_WORDS.isdisjoint(words):
        return False
    return not _NOT_SECRET_NAME.get().search(key) or bool(_NAMES_SECRET.get().search(key))


def _named_value_ok(key: str, v: str) -> bool:
    if not name_is_secret(key) or " " in v:
        return False
    if _NAMES_SECRET.get().search(key):
        return value_ok(v)
    return random_token(v) or (len(v) >= 24 and entropy(v) >= 4.0 and not looks_placeholder(v) and " " not in v)


# --- SDK clients and credential constructors ------------------------------------------------------------------------
_CALL = Lazy(r"(?P<fn>[A-Za-z_][\w.]{0,80})[ \t]*\((?P<args>[^()\r\n]{8,400})\)", A)
_CLIENT_FN = Lazy(
    r"(?:\w*(?:client|credentials?|auth\w*|session|sdk|connection|Bot|Api|API)|run|create|login|log_in|connect|init|initialize"
    r"|configure|authenticate|authorize|set_?api_?key|set_?token|with_?token|from_?token|use_?token)$",
    I,
)
_CREDENTIAL_FN = Lazy(r"client|credential|auth", I)
_HEX = Lazy(r"[0-9a-fA-F]+")
_TYPED_ID = Lazy(r"[A-Z]{2}[0-9a-f]{32,}")
_STR_ARG = Lazy(r"""(?:^|,)[ \t]*(?:["'])(?P<v>[^"'\s]{16,200})["']""")


# --- URLs ----------------------------------------------------------------------------------------------------------
_URL_USER = Lazy(r"://(?P<v>[A-Za-z0-9_\-.~%]{16,200})@(?=[A-Za-z0-9])", A)
_URL_PATH = Lazy(
    r"https?://[^\s/\"'<>]{3,100}/(?:[^\s/\"'<>?#]{1,60}/){0,6}?(?:key|keys|token|tokens|secret|apikey|api_key|api-key|auth"
    r"|v[1-3])/(?P<v>[A-Za-z0-9_\-]{20,200})(?![A-Za-z0-9_\-])",
    I | A,
)

# --- cookies: every random value in a Cookie / Set-Cookie header (iron "Fe26.2**…", signed "s%3A…", JWT-ish) ----------
# round 8: also a header in a verbose client's log ("< set-cookie: …", "> Cookie: …"), one passed to curl ("-H 'cookie:
# …'", "-b 'name=value; …'", "--cookie …"), and a DevTools/EditThisCookie table row ("PHPSESSID<TAB>value<TAB>domain")
_COOKIE_HEADER = Lazy(
    r"(?im)(?:^[ \t]*+[<>]?[ \t]*+|(?:-H|--header)[ \t]++['\"]?)(?:set-)?cookie[ \t]*:(?P<b>[^\r\n'\"]*)"
    r"|(?:^|[ \t])(?:-b|--cookie)[ \t]++['\"]?(?P<c>[^\r\n'\"\s=]{1,64}=[^\r\n'\"]*)"
)
_COOKIE_PAIR = Lazy(r"(?:^|;)[ \t]*(?P<k>[^=;\s]{1,64})=(?P<v>[^;\s\"']{16,4000})")
# a cookie table row: a session cookie's name, a tab, its value, a tab (the columns DevTools copies: Name Value Domain …)
_COOKIE_ROW = Lazy(r"(?m)^(?P<k>[^\t\n]{1,64})\t(?P<v>[^\t\n]{16,4000})\t")
_SESSION_NAME = Lazy(r"sess|sid\b|\.aspnet|aspxauth|auth|token|logged_in|remember|csrf|xsrf|jwt", I)
_COOKIE_ATTR = frozenset("path domain expires max-age samesite secure httponly priority partitioned".split())


def _cookie_spans(text: str) -> Iterator[Span]:
    if "\t" in text and _COOKIE_ROW.get().search(text) is not None:
        for m in _COOKIE_ROW.get().finditer(text):
            v = m.group("v")
            if _SESSION_NAME.get().search(m.group("k")) and not looks_placeholder(v):
                if random_token(v, 16) or (len(v) >= 24 and entropy(v) >= 4.0):
                    yield m.start("v"), m.end("v"), "token"
    for h in _COOKIE_HEADER.get().finditer(text):
        base = h.start("b") if h.group("b") is not None else h.start("c")
        end = h.end("b") if h.group("b") is not None else h.end("c")
        for m in _COOKIE_PAIR.get().finditer(text[base:end]):
            v = m.group("v")
            if m.group("k").lower() in _COOKIE_ATTR or looks_placeholder(v):
                continue
            if random_token(v, 16) or (len(v) >= 24 and entropy(v) >= 4.0):
                yield base + m.start("v"), base + m.end("v"), "token"


# --- network device configs ----------------------------------------------------------------------------------------
_DEVICE_GATE = Lazy(r"[ \t][07][ \t]|snmp-server|tacacs|radius|wpa-psk")
_DEVICE = Lazy(
    r"(?m)(?:\b(?:secret|password|key-string|key|pre-shared-key|psk|authentication-key)[ \t]+[07][ \t]+"
    r"|\b(?:tacacs-server|radius-server)[ \t]+(?:host[ \t]+\S+[ \t]+)?key[ \t]+(?:[07][ \t]+)?"
    r"|\bsnmp-server[ \t]+community[ \t]+"
    r"|\bwpa-psk[ \t]+(?:ascii|hex)[ \t]+[07]?[ \t]*)(?P<v>\S{4,128})",
    A,
)

# --- tables ----------------------------------------------------------------------------------------------------------
_COLUMN = Lazy(r"[ \t`*_]*(?:[\w .-]{0,30}?" + _SECRET_NAME + r"[\w.-]{0,10}|pin|key)[ \t`*_]*", I | A)
_PASSWORD_NAME = Lazy(r"pass|pwd|pw\b|kennwort|contrase|senha|has(?:ł|l)o|mot de passe", I)
_HEADER_LINE = Lazy(
    r"(?m)^[^\n]*(?:pass|pwd|secret|token|key|salt|credential|pin|PASS|PWD|SECRET|TOKEN|KEY|Pass|Secret|Token|Key|Pin|PIN)[^\n]*$"
)
_MD_SEP = Lazy(r"[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*")


def _cells(line: str, sep: str) -> list[tuple[int, int]]:
    """(start, end) of each cell's content in ``line`` (stripped of spaces and backticks)."""
    out: list[tuple[int, int]] = []
    pos = 0
    for part in line.split(sep):
        s, e = pos, pos + len(part)
        while s < e and line[s] in " \t`*":
            s += 1
        while e > s and line[e - 1] in " \t`*\r":
            e -= 1
        out.append((s, e))
        pos += len(part) + 1
    return out


def _cell_secret(v: str, name: str) -> bool:
    """A table cell under (or next to) ``name`` that holds a password or key rather than a type, a default, a shortcut."""
    if not value_ok(v) or " " in v:
        return False
    return random_token(v) or (pw_like(v) and _PASSWORD_NAME.get().search(name) is not None)


def _separator(line: str, below: str) -> str:
    """The cell separator of a header ``line`` whose next line ``below`` has as many cells, or ""."""
    for sep, least in (("|", 2), ("\t", 1), (",", 2), (";", 2)):
        n = line.count(sep)
        if n >= least and below.count(sep) == n:
            return sep
    return ""


def _table_spans(text: str) -> Iterator[Span]:
    """Cells under a header cell that names a secret, in the rows below it (pipes, tabs, commas or semicolons)."""
    for h in _HEADER_LINE.get().finditer(text):
        line = h.group()
        nl = h.end()
        if nl >= len(text):
            return
        below_end = text.find("\n", nl + 1)
        below = text[nl + 1 : below_end if below_end >= 0 else len(text)]
        sep = _separator(line, below)
        if not sep:
            continue
        header = [line[s:e] for s, e in _cells(line, sep)]
        cols = [k for k, c in enumerate(header) if _COLUMN.get().fullmatch(c) and name_is_secret(c.strip(" `*_"))]
        if not cols or (sep in ",;" and not all(re.fullmatch(r"[\w .\-#/]{1,40}", c.strip()) for c in header if c.strip())):
            continue
        pos = nl + 1
        if sep == "|" and _MD_SEP.get().fullmatch(below):
            pos = below_end + 1 if below_end >= 0 else len(text)
        while pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            row = text[pos:end]
            if row.count(sep) != line.count(sep) or not row.strip():
                break
            cells = _cells(row, sep)
            for k in cols:
                if k < len(cells):
                    s, e = cells[k]
                    if _cell_secret(row[s:e], header[k]):
                        yield pos + s, pos + e, "password"
            pos = end + 1


# a row of a two-column table whose first cell names a secret: "| DB_PASSWORD | s3cr3t! |"
_ROW = Lazy(
    r"(?m)^[ \t]*\|[ \t]*`?(?P<key>[\w.-]{0,40}?" + _SECRET_NAME + r"[\w.-]{0,20})`?[ \t]*\|[ \t]*`?(?P<v>[^|`\s]{4,200})`?[ \t]*\|", I | A
)

# --- key bytes -------------------------------------------------------------------------------------------------------
_HEX_BYTES = Lazy(r"0[xX][0-9a-fA-F]{1,2}(?:[ \t]*,[ \t]*(?:\r?\n[ \t]*)?0[xX][0-9a-fA-F]{1,2}){7,}|(?:\\x[0-9a-fA-F]{2}){8,}")
_KEY_BEFORE = Lazy(
    r"(?P<key>[A-Za-z_]\w*)[ \t]*(?:\[[^\]\r\n]{0,12}\])?[ \t]*(?::[^=\r\n]{0,30})?(?::=|=)[^=\r\n]{0,40}$",
    A,
)
_KEYISH_NAME = Lazy(r"key|secret|psk|token|passw|pwd|seed|skey|nwkskey|appskey", I)

# --- cat of a secret file; values piped into a password prompt; user / password ---------------------------------------
_CAT = Lazy(
    r"\bcat[ \t]+(?P<f>[^\s|;&]*(?:key|secret|token|passw|credential|\.pem|id_rsa|id_ed25519|id_ecdsa|\.env|htpasswd|shadow|\.p8|\.jks)"
    r"[^\s|;&]*)[ \t]*\r?\n(?P<v>[^\s]{12,400})[ \t]*(?:\r?\n|$)",
    I,
)
_PUBLIC_FILE = Lazy(r"\.pub\b|\.sha\d*|\.md5|\.sig\b|\.asc\b|\.crt\b|\.cert\b|\.csr\b|checksum|public|known_hosts|authorized_keys", I)
_PIPED = Lazy(
    r"\b(?:echo|printf)[ \t]+(?:-[nes]+[ \t]+)?(?:'%s\\n'[ \t]+)?(?P<q>[\"']?)(?:[\w.\\@-]{1,64}:)?(?P<v>[^\s'\":|]{4,128})(?P=q)[ \t]*"
    r"\|[ \t]*(?:sudo[ \t]+(?:-\w+[ \t]+)*)?(?:chpasswd|passwd[ \t]+--stdin|smbpasswd[ \t]+-s|pdbedit|kinit|cryptsetup)",
    A,
)
_HERESTRING = Lazy(r"(?:pass\w*|secret|token|key|stdin)[^\r\n]*?<<<[ \t]*(?P<q>[\"']?)(?P<v>[^\s'\"]{4,128})(?P=q)", I)
_SECRET_SET = Lazy(
    r"\b(?:gh|glab)[ \t]+(?:secret|variable)[ \t]+set\b[^\r\n|;]{0,200}?[ \t](?:--body|-b)(?:[ \t]+|=)"
    + r"""(?:'(?P<sq>[^'\r\n]{1,200})'|"(?P<dq>[^"\r\n]{1,200})"|(?P<bare>[^\s'"|;&]+))"""
)
_WIFI = Lazy(
    r"\b(?:wifi|wi-fi|wlan|wpa2?|wireless|network|router|ssid)\b[^\r\n]{0,40}?\b(?:key|psk|passphrase)\b[ \t]*(?:[:=][ \t]*|is[ \t]+)?(?P<v>[^\s,;]{8,63})",
    I,
)
_TEZOS = Lazy(r"(?<![A-Za-z0-9])(?:edsk|spsk|p2sk)[1-9A-HJ-NP-Za-km-z]{50,95}(?![A-Za-z0-9])")
# an AWS secret key next to its key id ("AKIA… / wJalr…"), an app-specific password ("abcd efgh ijkl mnop"), a Wi-Fi QR
_AWS_PAIR = Lazy(
    r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])[^\r\n]{0,80}?(?<![A-Za-z0-9/+])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", A
)
_APP_PASSWORD = Lazy(
    r"(?:app(?:lication)?[ \t-]?(?:specific[ \t-]?)?pass(?:word|wort)|anwendungspasswort|mot[ \t]+de[ \t]+passe[ \t]+d'application)"
    r"[^\r\n]{0,40}?(?<![a-z])(?P<v>[a-z]{4}([ -]?)[a-z]{4}\2[a-z]{4}\2[a-z]{4})(?![a-z])",
    I,
)
_WIFI_QR = Lazy(r"WIFI:[^\r\n]{0,200}?(?<=[:;])P:(?P<v>(?:[^;\\\r\n]|\\.){4,63});")
_TOR_KEY = Lazy(r"(?:ED25519-V3|RSA1024):(?P<v>[A-Za-z0-9+/]{80,}={0,2})")
_SERVICE_TOKEN = Lazy(
    r"(?<![A-Za-z0-9_])(?:oauth:[a-z0-9]{30}|access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32})(?![A-Za-z0-9_])",
    A,
)
# XML elements named for a secret, with attributes (<Pass encoding="base64">…</Pass>), and key/value entries
# (<entry key="db.password">X</entry>)
_XML_ATTR = Lazy(
    r"<(?P<tag>[\w:-]*?(?:[Pp]ass(?:word|wd)?|PASS(?:WORD|WD)?|[Pp]wd|[Ss]ecret|SECRET|[Tt]oken|TOKEN|[Aa]pi[-_]?[Kk]ey|[Cc]redential))"
    r"(?:[ \t][^<>]{0,200})?>(?P<v>[^<\s]{4,400})</(?P=tag)>"
)
_XML_ENTRY = Lazy(
    r"<(?:entry|property|setting|param|parameter|add|item|string)\b[^<>]{0,100}?\b(?:key|name)=[\"'](?P<key>[^\"']{0,80}?"
    + _SECRET_NAME
    + r"[^\"']{0,40}?)[\"'][^<>]{0,100}?>"
    r"(?P<v>[^<\s]{4,400})</",
    I,
)
_LOGIN_PAIR = Lazy(
    r"(?<!\w)(?:login|log-in|logon|sign-in|credentials?|creds|account|user(?:name)?[ \t]*/[ \t]*pass(?:word)?|zugang(?:sdaten)?"
    r"|anmeldung|identifiants|accesso|acceso|credenciais|credenciales|inloggning)\b[^\r\n:=]{0,60}[:=][ \t]*"
    r"(?P<u>[^\s/:,|]{1,64})[ \t]*(?:/|:|,|\|)[ \t]*(?P<v>[^\s]{6,80})",
    I,
)
_SPACED_RUN = Lazy(r"\S(?: \S){5}(?!\S)")
_LOGIN_TRIGGERS = (
    "login",
    "log-in",
    "logon",
    "sign-in",
    "cred",
    "account",
    "user",
    "zugang",
    "anmeldung",
    "identifiants",
    "acces",
    "inloggning",
)
_SPACED_PW = Lazy(
    r"(?:pass(?:word|code|phrase)?|pw|pin|passwort|kennwort|contrase(?:ñ|n)a|mot[ \t]+de[ \t]+passe|senha|wachtwoord|has(?:ł|l)o)"
    r"\b[^\r\n]{0,30}?(?:[ \t](?:is|ist|es|est|é|was|lautet)|:|=)[ \t]+(?P<v>\S(?:[ ]\S){5,40})(?![ ]?\S)",
    I,
)

# --- JSON Web Keys ---------------------------------------------------------------------------------------------------
_JWK_PRIVATE = Lazy(r"\"(?:d|p|q|dp|dq|qi|k)\"[ \t]*:[ \t]*\"(?P<v>[A-Za-z0-9_\-]{16,})\"", A)
_JWK_PUBLIC = Lazy(r"\"(?:n|e|x|y|kid|x5c|x5t|x5t#S256|x5u|alg|use|crv|kty)\"[ \t]*:[ \t]*(?:\"[^\"]*\"|\[[^\]]*\])", A)

# --- chat-bot tokens of three dot-separated parts (Discord's shape, whatever the first characters) -----------------------
_THREE_GATE = Lazy(r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27}")
_THREE_PART = Lazy(
    r"(?<![A-Za-z0-9_\-.])(?P<a>[A-Za-z0-9_\-]{23,28})\.[A-Za-z0-9_\-]{6}\.(?P<c>[A-Za-z0-9_\-]{27,40})(?![A-Za-z0-9_\-.])", A
)

# --- tokens of any service: a short prefix, a separator, a long random body ("tvly-…", "re_…", "FLWSECK-…") ----------
_PREFIXED = Lazy(
    r"(?<![A-Za-z0-9_\-.])(?P<p>[a-z][a-z0-9]{1,9}|[A-Z][A-Z0-9]{1,9})[_-](?:(?:live|test|prod|sk|api|key|secret|token|pat|v\d)[_-])?"
    r"(?P<b>[A-Za-z0-9_\-]{28,200})(?![A-Za-z0-9_\-])",
    A,
)
_NOT_TOKEN_PREFIX = frozenset(
    # digests, references and ids with a type prefix (API objects, chat completions, requests, builds), public keys
    """pk phc sha sha1 sha256 sha384 sha512 md5 git commit blob tree uuid guid id ref refs ver v data img image build release
    chatcmpl cmpl msg req request resp run thread asst file batch ft evt cus pi ch sub in ii txn acct price prod po seti si
    pm src card tr re trace span order user org team proj project ws cs job task node device item obj doc case""".split()
)
_SECRET_SEGMENTS = ("live", "test", "prod", "sk", "api", "key", "secret", "token", "pat")
_LONG_TOKEN_RUN = Lazy(r"[A-Za-z0-9_\-]{30,}")


def _prefixed_ok(prefix: str, body: str, says_secret: bool, underscore: bool = False) -> bool:
    if prefix.lower() in _NOT_TOKEN_PREFIX:
        return False
    chunks = [c for c in re.split(r"[_-]", body) if c]
    if all(re.fullmatch(r"[0-9a-fA-F]+", c) for c in chunks):
        # hex alone ("build-<sha>") is a digest unless the prefix says secret (FLWSECK-<hex>, sk_live_<hex>) or is glued
        # by "_" as token prefixes are (squ_<hex>, sk_<hex>)
        return (says_secret or underscore) and any(len(c) >= 32 for c in chunks)
    return random_token(body, 28) or any(random_token(c, 24) for c in chunks)


# --- partial tokens with a prefix nothing else carries ------------------------------------------------------------------
_STRONG_PREFIX = Lazy(
    r"(?<![A-Za-z0-9])(?:gh[pousr]_|github_pat_|glpat-|glrt-|gldt-|sk-proj-|sk-ant-|xox[abpe]-|AKIA|hf_|npm_|pypi-AgE|AIza"
    r"|[rs]k_live_|whsec_|dckr_pat_|shpat_|shpss_|SG\.|lin_api_|figd_|pcsk_|tvly-|sntrys_|glsa_)(?P<b>[A-Za-z0-9_\-]{6,})",
    A,
)
_SPLIT_WORDS = Lazy(r"\b(?:half|halves|the\s+rest|part\s*\d|second\s+part|remaining|continued|split)\b", I)
_CONTINUATION = Lazy(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{8,}(?![A-Za-z0-9_\-])", A)


def partial_spans(text: str, found: Callable[[int, int], bool]) -> Iterator[Span]:
    """A prefixed token cut short (``found`` says whether a span is already redacted), and its continuation below."""
    split = None
    for m in _STRONG_PREFIX.get().finditer(text):
        if not token_like(m.group("b")):
            continue
        if found(m.start(), m.end()):
            # round 8: found whole by a label, it may still be a first half whose rest follows ("first half of the
            # token: ghp_…" … "send the rest" … "irkKV…")
            split = _SPLIT_WORDS.get().search(text) is not None if split is None else split
            if not split:
                continue
        else:
            yield m.start(), m.end(), "token"
        for c in _CONTINUATION.get().finditer(text, m.end(), min(len(text), m.end() + 240)):
            v = c.group()
            upper, lower = sum(ch.isupper() for ch in v), sum(ch.islower() for ch in v)
            # round 8: a half with no digit ("irkKVmxYUCBbcuzLwzHJ") is one too when it mixes cases throughout
            mixed = sum(ch.isdigit() for ch in v) >= 2 or len(v) >= 12 and upper >= 3 and lower >= 3
            if token_like(v) and mixed and upper and lower:
                yield c.start(), c.end(), "token"
                break


def context_spans(text: str, low: str, cli: SpansOf) -> Iterator[Span]:
    """Spans of ``text`` (``low`` its lower-cased form) that hold a secret of one of these families."""
    if "[" in text and ('"' in text or "'" in text):
        yield from argv_spans(text, cli)
    if "'" in text or '"' in text:
        for m in _QPAIR.get().finditer(text):
            v = m.group("v")
            if _named_value_ok(m.group("key"), v):
                yield m.start("v"), m.end("v"), "password"
        if "(" in text:
            for m in _CALL.get().finditer(text):
                # a hex string is a key only when the callee says credential ("SearchClient.create(id, hex)"); an analytics
                # "init(hex)" takes a public project token
                hex_ok = _CREDENTIAL_FN.get().search(m.group("fn")) is not None
                fn = m.group("fn").rpartition(".")[2]
                if not _CLIENT_FN.get().search(fn) or _NOT_SECRET_NAME.get().search(fn):
                    continue
                base = m.start("args")
                for a in _STR_ARG.get().finditer(m.group("args")):
                    v = a.group("v")
                    # (an id with a type prefix, "AC" + 32 hex, names an account: the rule for its token is the provider's)
                    if (
                        random_token(v, 20)
                        and "/" not in v
                        and "." not in v.strip(".")
                        and not _TYPED_ID.get().fullmatch(v)
                        and (hex_ok or not _HEX.get().fullmatch(v))
                        and not public_value(v)
                    ):
                        yield base + a.start("v"), base + a.end("v"), "api_key"
    if "</" in text:
        for m in _XML_PAIR.get().finditer(text):
            if _named_value_ok(m.group("key"), m.group("v")) and " " not in m.group("v"):
                yield m.start("v"), m.end("v"), "password"
    if "://" in text:
        for m in _URL_USER.get().finditer(text):
            if random_token(m.group("v")):
                yield m.start("v"), m.end("v"), "url_password"
        for m in _URL_PATH.get().finditer(text):
            if random_token(m.group("v"), 20):
                yield m.start("v"), m.end("v"), "token"
    if any(t in low for t in ("secret", "password", "key", "snmp-server", "psk")) and _DEVICE_GATE.get().search(low):
        for m in _DEVICE.get().finditer(text):
            v = m.group("v")
            community = m.group().lstrip().lower().startswith("snmp-server")
            # a community string is the SNMP password, letters alone or not; "public"/"private" are the known defaults
            if value_ok(v) or community and len(v) >= 6 and v.lower() not in ("public", "private") and token_like(v):
                yield m.start("v"), m.end("v"), "password"
    if "\n" in text and any(t in low for t in ("pass", "pwd", "secret", "token", "key", "salt", "credential", "pin")):
        yield from _table_spans(text)
    if "|" in text:
        for m in _ROW.get().finditer(text):
            if _cell_secret(m.group("v"), m.group("key")) and name_is_secret(m.group("key")):
                yield m.start("v"), m.end("v"), "password"
    if "0x" in low or "\\x" in low:
        for m in _HEX_BYTES.get().finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            k = _KEY_BEFORE.get().search(text, max(line_start, m.start() - 120), m.start())
            if k is None and line_start:  # the bytes may start on the line below their name
                prev = text.rfind("\n", 0, line_start - 1) + 1
                k = _KEY_BEFORE.get().search(text, prev, line_start - 1)
            if k is not None and _KEYISH_NAME.get().search(k.group("key")) and not _NOT_SECRET_NAME.get().search(k.group("key")):
                yield m.start(), m.end(), "private_key"
    if "cat" in low:
        for m in _CAT.get().finditer(text):
            v = m.group("v")
            public = _PUBLIC_FILE.get().search(m.group("f"))
            if not public and not looks_placeholder(v) and (random_token(v, 12) or re.fullmatch(r"[0-9a-fA-F]{16,}", v)):
                yield m.start("v"), m.end("v"), "secret"
    if "AKIA" in text or "ASIA" in text:
        for m in _AWS_PAIR.get().finditer(text):
            if random_token(m.group("v"), 40) or entropy(m.group("v")) >= 4.3:
                yield m.start("v"), m.end("v"), "aws_secret_key"
    if "pass" in low:
        for m in _APP_PASSWORD.get().finditer(text):
            if m.group("v").lower() not in ("xxxx xxxx xxxx xxxx", "abcd efgh ijkl mnop"):
                yield m.start("v"), m.end("v"), "password"
    if "WIFI:" in text:
        for m in _WIFI_QR.get().finditer(text):
            if value_ok(m.group("v")) or len(m.group("v")) >= 8:
                yield m.start("v"), m.end("v"), "password"
    if "25519-V3:" in text or "RSA1024:" in text:
        for m in _TOR_KEY.get().finditer(text):
            yield m.start("v"), m.end("v"), "private_key"
    if "oauth:" in low or "access-" in low or "access_token$" in low:
        for m in _SERVICE_TOKEN.get().finditer(text):
            yield m.start(), m.end(), "token"
    if "</" in text:
        for m in _XML_ATTR.get().finditer(text):
            if value_ok(m.group("v")) or random_token(m.group("v")):
                yield m.start("v"), m.end("v"), "password"
        for m in _XML_ENTRY.get().finditer(text):
            if name_is_secret(m.group("key")) and value_ok(m.group("v")):
                yield m.start("v"), m.end("v"), "password"
    if "<<<" in text:
        for m in _HERESTRING.get().finditer(text):
            if value_ok(m.group("v")):
                yield m.start("v"), m.end("v"), "password"
    if "secret" in low or "variable" in low:
        for m in _SECRET_SET.get().finditer(text):
            for g in ("sq", "dq", "bare"):
                if m.start(g) >= 0 and value_ok(m.group(g)):
                    yield m.start(g), m.end(g), "secret"
    if any(t in low for t in ("wifi", "wi-fi", "wlan", "wpa", "wireless", "network", "router", "ssid")):
        for m in _WIFI.get().finditer(text):
            v = m.group("v").rstrip(".")
            if _strong_password(v) or random_token(v):
                yield m.start("v"), m.start("v") + len(v), "password"
    if "sk" in text:
        for m in _TEZOS.get().finditer(text):
            yield m.start(), m.end(), "private_key"
    if "|" in text and ("echo" in low or "printf" in low):
        for m in _PIPED.get().finditer(text):
            if value_ok(m.group("v")):
                yield m.start("v"), m.end("v"), "password"
    if ("/" in text or ":" in text) and any(t in low for t in _LOGIN_TRIGGERS):
        for m in _at(_LOGIN_PAIR, text, low, _LOGIN_TRIGGERS, len(low) == len(text)):
            v = m.group("v").rstrip(".,;)")
            if _strong_password(v):
                yield m.start("v"), m.start("v") + len(v), "password"
    if _SPACED_RUN.get().search(text) and any(t in low for t in ("pass", "pw", "pin", "kennwort", "contrase", "mot de", "senha", "has")):
        for m in _SPACED_PW.get().finditer(text):
            joined = m.group("v").replace(" ", "")
            if _strong_password(joined) or (joined.isdigit() and "pin" in low):
                yield m.start("v"), m.end("v"), "password"
    if _LONG_TOKEN_RUN.get().search(text):
        for m in _PREFIXED.get().finditer(text):
            p = m.group("p")
            says_secret = p.isupper() or m.group(0)[len(p) + 1 :].startswith(_SECRET_SEGMENTS) or _NAMES_SECRET.get().search(p) is not None
            if _prefixed_ok(p, m.group("b"), says_secret, m.group(0)[len(p)] == "_"):
                yield m.start(), m.end(), "token"
    if "ookie" in low or "\t" in text or " -b " in text:
        yield from _cookie_spans(text)
    if "." in text and _THREE_GATE.get().search(text):
        for m in _THREE_PART.get().finditer(text):
            if random_token(m.group("a"), 20) and random_token(m.group("c"), 20):
                yield m.start(), m.end(), "discord_token"
    if '"kty"' in text:
        for m in _JWK_PRIVATE.get().finditer(text):
            yield m.start("v"), m.end("v"), "private_key"


def _strong_password(v: str) -> bool:
    """A chosen password: 6+ characters, letters and digits, and a capital or a symbol (``us-east-1`` is not one)."""
    if len(v) < 6 or "/" in v or "://" in v or looks_placeholder(v):
        return False
    has_letter = any(c.isalpha() for c in v)
    has_digit = any(c.isdigit() for c in v)
    has_upper = any(c.isupper() for c in v)
    has_symbol = any(c in "!@#$%^&*?+=~" for c in v)
    return has_letter and has_digit and (has_upper or has_symbol)


# --- public material: never redacted ------------------------------------------------------------------------------------
_SOPS = Lazy(r"ENC\[[A-Z0-9_]+,data:[^\]\r\n]*\]", A)
_VAULT = Lazy(r"\$ANSIBLE_VAULT;[^\r\n]*(?:\r?\n[ \t]*[0-9a-fA-F]+)+", A)
_SEALED = Lazy(r"(?m)^(?P<ind>[ \t]*)encryptedData:[ \t]*\r?\n(?:(?P=ind)[ \t]+[^\r\n]*(?:\r?\n|$))+", A)


def public_spans(text: str) -> list[tuple[int, int]]:
    """Regions that are encrypted at rest or public by design (sorted)."""
    out: list[tuple[int, int]] = []
    if "ENC[" in text:
        out.extend(m.span() for m in _SOPS.get().finditer(text))
    if "$ANSIBLE_VAULT" in text:
        out.extend(m.span() for m in _VAULT.get().finditer(text))
    if "encryptedData" in text and "SealedSecret" in text:
        out.extend(m.span() for m in _SEALED.get().finditer(text))
    if '"kty"' in text:
        out.extend(m.span() for m in _JWK_PUBLIC.get().finditer(text))
    return sorted(out)
