"""``key = value`` credentials: the key names a secret, only the value is replaced.

Covers ``password=``, ``DB_PASS:``, ``pw:``, ``"clientSecret": "…"``, ``AccountKey=…``, ``PIN: 4821``,
``--password x`` and the command lines that take one (``mysql -pX``, ``sshpass -p X``,
``curl -u user:X``, ``.netrc``).  A value that is a reference, placeholder, type, path or prose
(``token: Optional[str] = None``, ``access_token = response["access_token"]``,
``private_key=~/.ssh/id_ed25519``, "Secret: Santa …") is left alone.
"""

from __future__ import annotations

import re

from agent_memory.redaction.base import WS, A, Decide, Decision, I, Lazy, X, token_like

# Words that, as the value of "password: ...", mean the text is prose, code or a placeholder.
NOT_A_VALUE = frozenset(
    """
    a an the is are was were be been it its this that these those you your
    we our i my me he she they them to of in on at by for with from and or
    not no yes see use set enter click type must should will can may please
    here below above same unknown none null nil true false undefined empty
    required optional str string int integer bool boolean bytes any object
    secretstr redacted hidden masked omitted removed changed reset n/a na
    tbd todo getpass input prompt ask
    """.split()
)

# Value prefixes that mark a reference, placeholder or path, not a credential.  Also embedded as a
# look-ahead in the patterns, so a rejected candidate costs O(1) instead of a scan of its value.
PLACEHOLDER_PREFIX = r"""
      \[REDACTED:                     # our own marker
    | \$\{?[A-Za-z_]                  # $VAR / ${VAR}
    | \$\(                            # $(command)
    | \{\{                            # {{ template }}
    | <[^<>\r\n]{0,60}>               # <your-password>
    | %(?:s|\()                       # %s / %(name)s
    | (?:self|cls|os|sys|env|config|conf|settings|cfg|args|opts|options
        |params|request|req|process|environ|secrets|vault|kwargs
        |credentials|creds|var|local|data|module|each|inputs?|vars|values
        |props|this|ctx|context|steps|needs|matrix|github)\.[A-Za-z_]  # a reference: settings.DB_PASSWORD, var.db_password
    | [A-Za-z_][A-Za-z0-9_.]*[(\[]    # a call or subscript: getpass() / response["token"] / Optional[str]
    | --[A-Za-z]                      # the next command-line flag
    | (?:Get|Read|New|ConvertTo|ConvertFrom|Import|Invoke)-[A-Za-z]+\b  # a PowerShell cmdlet: $pw = Read-Host ...
    | ~/ | \.\.?/ | /[A-Za-z_.-]+/    # a path: ~/.ssh/id_ed25519, ./key.pem, /etc/ssl/key.pem
    | [A-Za-z]:\\                     # C:\\keys\\id_rsa
    | ![A-Za-z][\w.-]*(?=[\ \t])        # a YAML tag: !vault |, !secret db_password, !Ref Name
    | [A-Za-z][A-Za-z0-9+.-]{1,15}://(?![^\s@"']*@)  # a URI without credentials: op://vault/item/field, vault://
    | @Microsoft\.[A-Za-z]+\(          # round 9: an App Service reference: @Microsoft.KeyVault(SecretUri=…)
    | arn:aws[\w-]*:(?:secretsmanager|ssm|kms):  # round 9: a secret store's ARN names where the secret lives
"""
PLACEHOLDER_RE = Lazy(
    PLACEHOLDER_PREFIX
    + r"""
    | \*+$ | x{3,}$ | \.{3,}$ | •+$   # masked: ***** / xxxx / ...
    """,
    X | I | A,
)

_CORE_WORD_RE = Lazy(r"pass(?:word|wd|phrase|code)?|pwd|pw|secret|token|key|pin|credentials?", I | A)
_REF_WORD_RE = Lazy(
    r"(?:(?<![A-Za-z0-9])(?i:pass(?:word|wd|phrase|code)?|pwd|pw|secret|token|key|pin|credentials?)"
    r"|(?<=[a-z0-9])(?:Pass(?:word|wd|phrase|code)?|Pwd|Pw|Secret|Token|Key|Pin|Credentials?))",
    A,
)
_IDENT_RE = Lazy(r"[A-Za-z_][A-Za-z0-9_]*", A)
_TYPE_RE = Lazy(r"(?:Optional|Union|List|Dict|Tuple|Sequence|Mapping|Annotated|Literal|Any|SecretStr|SecretBytes)\b")
_PIN_RE = Lazy(r"\d{4,12}")
_PROSE_AFTER_RE = Lazy(r"[ \t]+[A-Za-z]")


_PLACEHOLDER_WORDS = Lazy(
    # round 8: after a provider's prefix too ("xoxb-your-bot-token", "sk-your-key-here", "ghp_your_token")
    r"(?:(?:[a-z0-9]{2,8}[-_])?(?:your|my|insert|enter|put|paste|replace|add|the|some|example|sample|dummy|fake|test|placeholder)[-_ .]"
    r"[a-z_ .-]*|[a-z_ .-]*[-_ .](?:here|goes[-_ .]here|placeholder|example)|change[-_.]?me|changeit|placeholder|"
    r"example|dummy|redacted|notset|not[-_]set|secret|password|passw0rd|token|apikey)",
    I | A,
)
_REF_PATH = Lazy(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+", A)


def public_value(value: str) -> bool:
    """A publishable key (Mapbox ``pk.``, Stripe ``pk_live_``, PostHog ``phc_``): public by design."""
    return value.startswith(("pk.", "pk_live_", "pk_test_", "phc_"))


# round 8: a placeholder in capitals that names what goes there ("BASE32SECRET", "YOUR_TOKEN", "MYAPIKEY"): a random
# value of this alphabet spells none of these words
_CAPS_PLACEHOLDER = Lazy(r"[A-Z0-9_]{0,20}(?:SECRET|TOKEN|PASSWORD|PASSWD|APIKEY|API_KEY|PLACEHOLDER|CHANGEME|EXAMPLE)[A-Z0-9_]{0,20}", A)


def placeholder_value(value: str) -> bool:
    """A placeholder or a reference, not a credential: ``your-api-key-here``, ``changeme``, ``var.db_password``."""
    if _PLACEHOLDER_WORDS.get().fullmatch(value) or _CAPS_PLACEHOLDER.get().fullmatch(value):
        return True
    # a dotted reference whose path names a secret: var.db_password, settings.api_token
    # (the word starts a part of the path: "E7SPW" in the password "yelp.E7SPW.woez" names nothing)
    return _REF_PATH.get().fullmatch(value) is not None and _REF_WORD_RE.get().search(value) is not None


def value_ok(value: str, key: str, kind: str) -> bool:
    """Is ``value`` (of ``key``) plausibly a real credential?"""
    if not value or not any(c.isalnum() for c in value):
        return False
    if kind == "pin":
        return _PIN_RE.get().fullmatch(value) is not None
    if PLACEHOLDER_RE.get().match(value) or _TYPE_RE.get().match(value):
        return False
    low = value.lower()
    if low in NOT_A_VALUE or placeholder_value(value):
        return False
    if public_value(value):
        return False
    if _IDENT_RE.get().fullmatch(value):
        # password=password, api_key=OPENAI_API_KEY, token=auth_token: variable names, not values.
        core = _CORE_WORD_RE.get().search(key)
        if core is not None and low == core.group(0).lower():
            return False
        if "_" in value and _CORE_WORD_RE.get().search(value):
            return False
    if kind == "token" and value.isdigit():
        return False  # "max_token: 4096", "token: 400"
    if key.lower().startswith("credential") and not (len(value) >= 8 and token_like(value)):
        return False
    return True


def kv_kind(key: str) -> str:
    k = key.lower()
    if "access" in k and "secret" in k:
        return "aws_secret_key"
    if "pass" in k or k.startswith("pw") or "psk" in k or "preshared" in k:
        return "password"
    if k.startswith("pin"):
        return "pin"
    if "secret" in k or "credential" in k:
        return "secret"
    if "token" in k:
        return "token"
    return "api_key"


# Key words; the key is kept, only the value is redacted.  Order matters ("secret_access_key"
# before "secret").
KEY_CORES = r"""
        (?<![A-Za-z0-9])pwd
      | (?<![A-Za-z])pw(?![A-Za-z])
      | pass[_-]?(?:word|wd|phrase|code)
      | (?:(?<![A-Za-z])|(?<=[a-z])(?-i:(?=P)))pass(?![A-Za-z])
      | macaroon
      | (?<![A-Za-z])psk(?![A-Za-z])
      | pre_?shared_?key
      | (?:aws_?)?secret_?access_?key
      | secret(?:[_-]?key)?
      | (?:api|private|master|encryption|signing|auth|account|shared_?access|access)[_-]?key
      | token
      | (?<![A-Za-z])pin(?:[_-]?(?:code|number))?(?![A-Za-z])
      | (?<![A-Za-z])credentials?(?![A-Za-z])
"""
# (?<!/): not "/etc/passwd:"; a suffix names an encoding or a numbered key (pw_hex=, password_b64:, password2=)
_KV_KEY = r"(?<!/)(?P<key>" + KEY_CORES + r")(?:[_-]?(?:hex|b64|base64|enc|encoded|plain|plaintext|\d{1,2}))?"
NP = r"(?!" + PLACEHOLDER_PREFIX + r")"  # not a placeholder
_KV_VALUE = (
    r"(?:"
    + r'\\"'
    + NP
    + r'(?P<edq>(?:[^"\\\r\n]|\\(?!")[^\r\n])*+)'  # \"escaped json\"
    + r'|"'
    + NP
    + r'(?P<dq>(?:[^"\\\r\n]|\\[^\r\n])*+)'  # "double"
    + r"|'"
    + NP
    + r"(?P<sq>(?:[^'\\\r\n]|\\[^\r\n])*+)"  # 'single'
    + r"|`"
    + NP
    + r"(?P<bq>[^`\r\n]*+)"  # `backtick`
    + r"|"
    + NP
    + r"(?P<bare>[^"
    + WS
    + r""""'`,;&<>{}\[\]()\\](?:[^"""
    + WS
    + r""""'`,;&<]"""
    + r"|&(?![\w.\-\[\]]*+=|&|["
    + WS
    + r"]|$))*+)"  # unquoted; "&" inside it, not "&next=" or "&&"
    + r")"
)
KV = Lazy(
    _KV_KEY
    + r"""
    (?:\\?["'])?[ \t]*+                    # closing quote of a quoted key
    (?>:=|=>|==|[:=])[ \t]*+               # separator (atomic: ":=" is never ":" + "=...")
    """
    + _KV_VALUE,
    A | I | X,
)
# --password hunter2 / --api-key abc (the "=" form is covered by KV)
CLI = Lazy(
    r"(?<![A-Za-z0-9_-])--(?P<key>[A-Za-z0-9-]*?"
    r"(?:password|passwd|passphrase|(?<![A-Za-z])pass(?![A-Za-z-])|secret|token|api-?key|auth-?key"
    # round 8: the key flags of cloud CLIs ("az storage … --account-key X", "--sas-key", "--primary-key")
    r"|(?:account|storage|master|primary|secondary|shared-?access|sas)-?key))"
    r"[\ \t]++"
    r"(?:\"" + NP + r"(?P<dq>[^\"\r\n]*+)"
    r"|'" + NP + r"(?P<sq>[^'\r\n]*+)"
    r"|" + NP + r"(?P<bare>[^" + WS + r"\"'`;&|<>:=-][^" + WS + r"\"'`;&|<>]*+))",
    A | I | X,
)
_CMD_VALUE = r"""(?:'(?P<sq>[^'\r\n]++)'|"(?P<dq>[^"\r\n]++)"|(?P<bare>[^\s'"|;&<>][^\s'"|;&<>]*+))"""
# mysql -pSECRET (attached: a bare -p prompts), sshpass -p SECRET, curl -u user:SECRET, .netrc lines
COMMAND = Lazy(
    r"(?:\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b[^\r\n|;&]*?[ \t](?-i:-p)(?=[^\s-])"
    r"|\bsshpass[ \t]+-p[ \t]*+"
    r"|\b(?:curl|wget|http)\b[^\r\n|;&]*?[ \t](?:-(?-i:[a-zA-Z]*u)|--user)[ \t=]?['\"]?[^\s:'\"@]{1,64}:(?=[^\s@'\"])"
    # the password flag of database and cache clients: redis-cli -a X, mongosh -p X, sqlcmd -P X, cqlsh -p X
    r"|\b(?:redis-cli|keydb-cli|valkey-cli)\b[^\r\n|;&]*?[ \t](?-i:-a)[ \t]+"
    r"|\b(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|cqlsh)\b[^\r\n|;&]*?[ \t](?-i:-p)[ \t]+"
    r"|\b(?:sqlcmd|bcp|isql|osql)\b[^\r\n|;&]*?[ \t](?-i:-P)[ \t]*+"
    # .netrc, on one line or several (login / account / port in any order before the password)
    r"|\b(?:machine[ \t]+\S+|default)(?:\s+(?:login|account|port)[ \t]+\S+){0,3}\s+password[ \t]+)" + _CMD_VALUE,
    A | I,
)
# A password handed to a credential constructor in code: ConvertTo-SecureString "X", NetworkCredential("u", "X"),
# HTTPBasicAuth("u", "X"), requests' auth=("u", "X"), DriverManager.getConnection(url, "u", "X").
_Q = r"""(?:'(?P<sq>[^'\r\n]{1,200})'|"(?P<dq>[^"\r\n]{1,200})")"""
_ARG = r"""[ \t]*(?:"[^"\r\n]{0,200}"|'[^'\r\n]{0,200}'|[A-Za-z_][\w.]{0,60})[ \t]*,[ \t]*"""
CONSTRUCTOR = Lazy(
    r"(?:\bConvertTo-SecureString[ \t]+(?:-(?!String\b)[A-Za-z]+[ \t]+)*(?:-String[ \t]+)?"
    r"|\b(?:NetworkCredential|PSCredential|PasswordAuthentication|UsernamePasswordCredentials|BasicAuth"
    r"|HTTPBasicAuth|HTTPDigestAuth|HttpBasicAuth|PlainCredentials)[ \t]*\("
    + _ARG
    + r"|\bgetConnection[ \t]*\("
    + _ARG
    + _ARG
    + r"|\bauth[ \t]*=[ \t]*\("
    + _ARG
    + r")"
    + _Q,
    A | I,
)
# Azure shared access signature: ...&sig=<url-encoded base64>
SAS = Lazy(r"(?<![A-Za-z0-9])sig=(?P<secret>[A-Za-z0-9%+/=]{20,}+)", A)

_VALUE_GROUPS = ("edq", "dq", "sq", "bq", "bare")
_CLOSERS = {")": "(", "]": "[", "}": "{"}

# An identifier that ends in a key word: "client_secret", "DB_PASSWORD".
_KEY_NAME_RE = Lazy(r"[A-Za-z0-9_.-]*?(?:" + KEY_CORES + r")", I | A | X)
_SEP_AHEAD_RE = Lazy(r"[ \t]*+[:=]")
_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def kv_value_span(m: re.Match[str]) -> tuple[int, int, int]:
    """(start, end, resume) of the value of a key=value match; start -1: none."""
    for name in _VALUE_GROUPS:
        start = m.start(name) if name in m.re.groupindex else -1
        if start == -1:
            continue
        end = m.end(name)
        resume = m.end()
        if name != "bare":
            return start, end, resume
        text = m.string
        # "secret: x client_secret: y" / "token:client_secret = y": the value
        # ends in the next pair's key.  Stop before it and resume there.
        j = end
        while j > start and text[j - 1] in ":=":
            j -= 1
        if j < end or _SEP_AHEAD_RE.get().match(text, end):
            i = j
            while i > start and text[i - 1] in _IDENT_CHARS:
                i -= 1
            if i < j and _KEY_NAME_RE.get().fullmatch(text, i, j):
                if i == start:
                    return -1, -1, -1
                # (after "/" the key could not match on its own: see _KV_KEY)
                if text[i - 1] != "/":
                    end = resume = i
        # Don't swallow the caller's ")" / "}" or a sentence's "." (a
        # trailing "!" stays: passwords end in "!" far more often).
        seg = text[start:end]
        unbalanced = {c: seg.count(c) - seg.count(o) for c, o in _CLOSERS.items()}
        while end - 1 > start:
            ch = text[end - 1]
            if ch in unbalanced:
                if unbalanced[ch] <= 0:
                    break
                unbalanced[ch] -= 1
            elif ch not in ".?:":
                break
            end -= 1
        return start, end, resume
    return -1, -1, -1


# round 9: a key that names WHERE a secret is kept, not the secret: Helm's "existingSecret: keycloak-db",
# "external_secret: db-creds", "sealedSecret: …" (a Kubernetes object's name)
_REFERENCE_KEY = Lazy(r"(?:existing|external|sealed)[_-]?$", I | A)
_IDENT_BEFORE = Lazy(r"[A-Za-z0-9_.-]{0,40}$", A)
# a comparison with a variable ("if token == expected:", "password == confirm_password"): no value is written
_COMPARED_NAME = Lazy(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_]\w*)*", A)


def _names_a_reference(m: re.Match[str], start: int, end: int) -> bool:
    """Round 9's look-alikes of a key=value pair, by cause: the key names a reference to a secret, the value is a
    variable compared with, or the quote read as the value's opening one closes the prompt the key sits in
    (``read -s -p 'Password: ' PASS``, ``input("Token: " + …)``)."""
    text = m.string
    key_start = m.start("key")
    before = _IDENT_BEFORE.get().search(text, max(0, key_start - 40), key_start)
    if before is not None and _REFERENCE_KEY.get().search(before.group()):
        return True
    sep = text[m.end("key") : start]
    if "==" in sep and m.start("bare") >= 0 and _COMPARED_NAME.get().fullmatch(text, start, end):
        return True
    for name, quote in (("sq", "'"), ("dq", '"'), ("bq", "`")):
        if name in m.re.groupindex and m.start(name) >= 0:
            reach = max(0, key_start - 120)  # bounded: linear on "password=" * 100_000
            line_start = max(reach, text.rfind("\n", reach, key_start) + 1)
            if quote not in sep[:-1] and text.count(quote, line_start, key_start) % 2 == 1:
                return True  # the key is inside a quoted string that this quote closes
    return False


def decide_kv(m: re.Match[str]) -> Decision | None:
    start, end, resume = kv_value_span(m)
    if start < 0:
        return None
    key = m.group("key")
    kind = kv_kind(key)
    value = m.string[start:end]
    if not value_ok(value, key, kind):
        return None
    if m.start("bare") >= 0 and value.isalpha() and _PROSE_AFTER_RE.get().match(m.string, end):
        return None  # "Secret: Santa gift exchange", "Token: Ring was ..." : prose, not a value
    if _names_a_reference(m, start, end):
        return None
    return kind, start, end, resume


def decide_command(m: re.Match[str]) -> Decision | None:
    for name in ("sq", "dq", "bare"):
        if m.start(name) >= 0:
            value = m.group(name)
            if PLACEHOLDER_RE.get().match(value) or value.lower() in NOT_A_VALUE:
                return None
            return "password", m.start(name), m.end(name), m.end()
    return None


def decide_sas(m: re.Match[str]) -> Decision | None:
    value = m.group("secret")
    if not token_like(value):
        return None
    return "azure_sas", m.start("secret"), m.end("secret"), m.end()


KV_TRIGGERS = ("pw", "pass", "secret", "token", "key", "pin", "credential", "macaroon", "psk")
KEY_REACH = 18  # "shared_access_key": the core starts 14 characters before its trigger "key"
RULES: tuple[tuple[Lazy, Decide, tuple[str, ...]], ...] = (
    (SAS, decide_sas, ("sig=",)),
    (
        COMMAND,
        decide_command,
        ("mysql", "mariadb", "sshpass", "-u", "--user", "machine", "default", "-cli", "mongo", "cqlsh", "sqlcmd", "bcp", "isql", "osql"),
    ),
    (CONSTRUCTOR, decide_command, ("securestring", "credential", "auth", "getconnection")),
    (KV, decide_kv, KV_TRIGGERS),
    (CLI, decide_kv, KV_TRIGGERS),
)
