"""Secret redaction for text on its way into the memory store.

``redact(text)`` replaces credentials with a marker such as
``[REDACTED:openai_key]`` and leaves everything around them untouched; for
``key=value`` style pairs only the value is replaced
(``password=[REDACTED:password]``).  ``contains_secret(text)`` answers the
same question without building the new string.

Guarantees
----------
* stdlib only (``re`` and ``dataclasses``): this sits in the store's write
  path and in CLI cold start.
* Never raises on any ``str`` (empty, NUL, emoji, lone surrogates, megabytes).
  A non-``str`` argument is a programming error and raises ``TypeError``.
* Linear time: patterns use possessive or bounded quantifiers, token
  patterns cannot start inside a token, and a rejected candidate resumes the
  search right after its key, so no text is rescanned more than a constant
  number of times (1 MB adversarial inputs take well under a second).
* Idempotent: ``redact(redact(t).text).text == redact(t).text``.  Markers are
  never matched by any rule.
* Biased towards precision on prose: "the password policy requires 12
  characters", "Bearer of bad news", "sk-learn", "task-list", git SHAs,
  UUIDs and "token budget is 400" are left alone.

Kinds (the ``kinds`` field of the result, sorted, de-duplicated):

======================  =====================================================
``private_key``         PEM ``-----BEGIN ... PRIVATE KEY-----`` blocks (RSA,
                        EC, OPENSSH, ENCRYPTED, PGP, ...), also truncated ones
``jwt``                 ``eyJ...`` three-segment JSON Web Tokens
``anthropic_key``       ``sk-ant-...``
``openai_key``          ``sk-...``, ``sk-proj-...``, ``sk-svcacct-...``
``stripe_key``          ``sk_live_``, ``rk_live_``, ``sk_test_``, ``rk_test_``
``github_token``        ``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``,
                        ``github_pat_``
``gitlab_token``        ``glpat-...``
``slack_token``         ``xoxb-``, ``xoxp-``, ``xoxa-``, ``xoxr-``, ``xoxs-``,
                        ``xoxe-``, ``xapp-``
``slack_webhook``       path of ``https://hooks.slack.com/services/...``
``google_api_key``      ``AIza...``
``aws_access_key_id``   ``AKIA``/``ASIA`` + 16 upper-case alphanumerics
``aws_secret_key``      value of ``aws_secret_access_key = ...`` and friends
``huggingface_token``   ``hf_...``
``npm_token``           ``npm_...``
``pypi_token``          ``pypi-AgEIcHlwaS5vcmc...``
``url_password``        password in ``scheme://user:password@host``
``bearer_token``        ``Authorization: Bearer ...`` and free ``Bearer <token>``
``basic_auth``          ``Authorization: Basic ...``
``password``            value of ``password=``, ``passwd:``, ``pwd=``,
                        ``passphrase``, ``--password x`` ...
``secret``              value of ``secret=``, ``client_secret:``,
                        ``SECRET_KEY=`` ...
``api_key``             value of ``api_key=``, ``apiKey:``, ``X-API-Key:``,
                        ``private_key=`` ...
``token``               value of ``token=``, ``access_token:``,
                        ``GITHUB_TOKEN=`` ...
======================  =====================================================

``SECRET_SAMPLES`` holds realistic *fake* secrets, at least one per kind, for
other test suites.  Prefixes are split across adjacent string literals so
that secret scanners do not flag this file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "KINDS",
    "MARKER_RE",
    "SECRET_SAMPLES",
    "SECRET_SAMPLES_BY_KIND",
    "RedactionResult",
    "contains_secret",
    "marker",
    "redact",
]


@dataclass(frozen=True, slots=True)
class RedactionResult:
    """Outcome of :func:`redact`.

    ``text``  — the redacted text (identical to the input when nothing matched)
    ``count`` — how many secrets were replaced
    ``kinds`` — sorted, de-duplicated kinds that were replaced
    """

    text: str
    count: int
    kinds: tuple[str, ...]


MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def marker(kind: str) -> str:
    """The replacement string for a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


class _Lazy:
    """A regex compiled on first use: importing this module stays cheap (CLI
    cold start); the ~20 patterns are compiled by the first redact() call."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)
        return compiled

    def __getattr__(self, name: str) -> object:
        return getattr(self.get(), name)


# --------------------------------------------------------------------------
# Validators (run on the candidate secret, in Python, after a regex match)
# --------------------------------------------------------------------------

_ALNUM_RUN = _Lazy(r"[A-Za-z0-9]+")


def _has_digit(s: str) -> bool:
    return any("0" <= c <= "9" for c in s)


def _token_like(s: str) -> bool:
    """Random-looking: a digit, or lower case mixed with a non-initial capital.

    Rejects words ("Internationalization", "well-known-phrase").
    """
    if _has_digit(s):
        return True
    return any("a" <= c <= "z" for c in s) and any("A" <= c <= "Z" for c in s[1:])


def _longest_alnum_run(s: str) -> int:
    return max((len(run) for run in _ALNUM_RUN.findall(s)), default=0)


def _openai_body_ok(s: str) -> bool:
    # "sk-learn-is-a-great-library" has only short runs and no digits;
    # real keys have long random runs.
    return _token_like(s) and _longest_alnum_run(s) >= 16


def _bearer_ok(s: str) -> bool:
    return len(s) >= 16 and _token_like(s)


def _auth_header_ok(s: str) -> bool:
    # After an explicit "Authorization:" header almost anything is a
    # credential, but "Set the Authorization: Bearer header" is prose.
    return _token_like(s) or len(s) >= 20 or any(c in "-._~+/=" for c in s)


# Words that, as the value of "password: ...", mean the text is prose, code or
# a placeholder rather than a credential.
_NOT_A_VALUE = frozenset(
    """
    a an the is are was were be been it its this that these those you your
    we our i my me he she they them to of in on at by for with from and or
    not no yes see use set enter click type must should will can may please
    here below above same unknown none null nil true false undefined empty
    required optional str string int integer bool boolean bytes any object
    secretstr redacted hidden masked omitted removed changed reset n/a na
    tbd todo getpass input prompt
    """.split()
)

# Value prefixes that mark a reference or placeholder, not a credential.  Also
# embedded as a look-ahead in the key=value patterns, so a rejected candidate
# costs O(1) instead of a scan of its value.
_PLACEHOLDER_PREFIX = r"""
      \[REDACTED:                     # our own marker
    | \$\{?[A-Za-z_]                  # $VAR / ${VAR}
    | \$\(                            # $(command)
    | \{\{                            # {{ template }}
    | <[^<>\r\n]{0,60}>               # <your-password>
    | %(?:s|\()                       # %s / %(name)s
    | (?:self|cls|os|sys|env|config|conf|settings|cfg|args|opts|options
        |params|request|req|process|environ|secrets|vault|kwargs
        |credentials|creds)\.       # attribute access: settings.DB_PASSWORD
    | [A-Za-z_][A-Za-z0-9_.]*\(       # a call: getpass() / get_secret("x")
    | --[A-Za-z]                      # the next command-line flag
"""
_PLACEHOLDER_RE = _Lazy(
    _PLACEHOLDER_PREFIX
    + r"""
    | \*+$ | x{3,}$ | \.{3,}$ | •+$   # masked: ***** / xxxx / ...
    """,
    re.VERBOSE | re.IGNORECASE | re.ASCII,
)

_CORE_WORD_RE = _Lazy(
    r"pass(?:word|wd|phrase)|pwd|secret|token|key", re.IGNORECASE | re.ASCII
)
_IDENT_RE = _Lazy(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def _value_ok(value: str, key: str, kind: str) -> bool:
    """Is ``value`` (of ``key``) plausibly a real credential?"""
    if not value or not any(c.isalnum() for c in value):
        return False
    if _PLACEHOLDER_RE.match(value):
        return False
    low = value.lower()
    if low in _NOT_A_VALUE:
        return False
    if _IDENT_RE.fullmatch(value):
        # password=password, api_key=OPENAI_API_KEY, token=auth_token:
        # variable names, not values.
        core = _CORE_WORD_RE.search(key)
        if core is not None and low == core.group(0).lower():
            return False
        if "_" in value and _CORE_WORD_RE.search(value):
            return False
    if kind == "token" and value.isdigit():
        return False  # "max_token: 4096", "token: 400"
    return True


def _kv_kind(key: str) -> str:
    k = key.lower()
    if "access" in k and "secret" in k:
        return "aws_secret_key"
    if "pass" in k or "pwd" in k:
        return "password"
    if "secret" in k:
        return "secret"
    if "token" in k:
        return "token"
    return "api_key"


# --------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------

_I = re.IGNORECASE
_A = re.ASCII  # with IGNORECASE: "K" (Kelvin sign) must not match "k"
_X = re.VERBOSE
# Whitespace, including the Unicode spaces that chat text carries (re.ASCII
# narrows \s to ASCII).
_WS = r"\s\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"

# (a) PEM private keys --------------------------------------------------------

_PEM_LABEL = r"[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?"
_PEM_FULL = _Lazy(
    r"(?P<secret>-----BEGIN" + _PEM_LABEL + r"-----"
    r"(?:[^-]|-(?!----))*+"  # body: anything up to the next "-----"
    r"-----END" + _PEM_LABEL + r"-----)",
    _A,
)
# A pasted key that lost its END line: the header plus the base64 / header
# lines after it (newlines may be real or JSON-escaped "\n").
_PEM_NL = r"[ \t]*+(?:\r?\n|\\r\\n|\\n)"
_PEM_TRUNCATED = _Lazy(
    r"(?P<secret>-----BEGIN" + _PEM_LABEL + r"-----"
    r"(?:" + _PEM_NL + r"(?:" + _PEM_NL + r")?[ \t]*+"
    r"(?:[A-Za-z0-9+/=]{16,}+|(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset):[^\r\n\\]*+)"
    r")*+)",
    _A,
)

# (b) Provider tokens with recognisable prefixes -----------------------------

_B = r"(?<![A-Za-z0-9_-])"  # not in the middle of a token-ish run

_JWT = _Lazy(
    _B + r"(?P<secret>eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+)", _A
)
_ANTHROPIC = _Lazy(_B + r"(?P<secret>sk-ant-[A-Za-z0-9_-]{20,}+)", _A)
_OPENAI = _Lazy(_B + r"(?P<secret>sk-(?P<body>[A-Za-z0-9_-]{20,}+))", _A)
_STRIPE = _Lazy(_B + r"(?P<secret>[rs]k_(?:live|test)_[A-Za-z0-9]{16,}+)", _A)
_GITHUB = _Lazy(
    _B + r"(?P<secret>gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{30,}+)", _A
)
_GITLAB = _Lazy(_B + r"(?P<secret>glpat-[A-Za-z0-9_-]{20,}+)", _A)
_SLACK = _Lazy(
    _B + r"(?P<secret>xox[abprse]-[0-9]++-[A-Za-z0-9-]{8,}+|xapp-[0-9]-[A-Za-z0-9-]{16,}+)",
    _A,
)
_SLACK_WEBHOOK = _Lazy(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/+-]{8,}+)",
    _A | _I,
)
_GOOGLE = _Lazy(_B + r"(?P<secret>AIza[0-9A-Za-z_-]{35}+)(?![0-9A-Za-z_-])", _A)
_AWS_ID = _Lazy(
    r"(?<![A-Za-z0-9])(?P<secret>(?:AKIA|ASIA)[A-Z0-9]{16})(?![A-Za-z0-9])", _A
)
_HUGGINGFACE = _Lazy(_B + r"(?P<secret>hf_[A-Za-z]{30,}+)(?![A-Za-z0-9_])", _A)
_NPM = _Lazy(_B + r"(?P<secret>npm_[A-Za-z0-9]{36}+)(?![A-Za-z0-9_])", _A)
_PYPI = _Lazy(_B + r"(?P<secret>pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{32,}+)", _A)

# (c) Credentials in URLs: scheme://user:PASSWORD@host -----------------------

_URL = _Lazy(
    r"[A-Za-z][A-Za-z0-9+.-]{0,31}://"
    r"[^" + _WS + r":/?#@\[\]\"'<>]{0,256}+:"
    r"(?!\[REDACTED:)(?P<secret>[^" + _WS + r"/?#\"'<>]{1,256})@",
    _A,
)

# (d) HTTP authorization ------------------------------------------------------

# token68 (RFC 7235); "=" only as trailing padding, so "api_key=abc" is not
# one.  "[" is excluded after it too: once "abc" became a marker the answer
# must not change (idempotence).
_TOKEN68 = r"[A-Za-z0-9\-._~+/]++=*+(?![A-Za-z0-9\-._~+/\[])"
_AUTH_HEADER = _Lazy(
    r"authorization(?:\\?[\"'])?[ \t]*+[:=][ \t]*+(?:\\?[\"'])?[ \t]*+"
    r"(?P<scheme>bearer|basic|token|bot)[ \t]++(?P<secret>" + _TOKEN68 + r")",
    _A | _I,
)
_BEARER = _Lazy(_B + r"bearer[ \t]++(?P<secret>" + _TOKEN68 + r")", _A | _I)

# (e) key = value pairs ---------------------------------------------------------

# Key words; the key is kept, only the value is redacted.  Order matters
# ("secret_access_key" before "secret").
_KEY_CORES = r"""
        (?<![A-Za-z0-9])pwd
      | pass(?:word|wd|phrase)
      | (?:aws_?)?secret_?access_?key
      | secret(?:[_-]?key)?
      | (?:api|private|master|encryption|signing|auth)[_-]?key
      | token
"""
_KV_KEY = r"(?<!/)(?P<key>" + _KEY_CORES + r")"  # (?<!/): not "/etc/passwd:"
_NP = r"(?!" + _PLACEHOLDER_PREFIX + r")"  # not a placeholder
_KV_VALUE = (
    r"(?:"
    + r'\\"' + _NP + r'(?P<edq>(?:[^"\\\r\n]|\\(?!")[^\r\n])*+)'  # \"escaped json\"
    + r'|"' + _NP + r'(?P<dq>(?:[^"\\\r\n]|\\[^\r\n])*+)'  # "double"
    + r"|'" + _NP + r"(?P<sq>(?:[^'\\\r\n]|\\[^\r\n])*+)"  # 'single'
    + r"|`" + _NP + r"(?P<bq>[^`\r\n]*+)"  # `backtick`
    + r"|" + _NP + r"(?P<bare>[^" + _WS + r""""'`,;&<>{}\[\]()\\][^""" + _WS + r""""'`,;&<]*+)"""  # unquoted
    + r")"
)
_KV = _Lazy(
    _KV_KEY
    + r"""
    (?:\\?["'])?[ \t]*+                    # closing quote of a quoted key
    (?>:=|=>|==|[:=])[ \t]*+               # separator (atomic: ":=" is never ":" + "=...")
    """
    + _KV_VALUE,
    _A | _I | _X,
)
# --password hunter2 / --api-key abc (the "=" form is covered by _KV)
_CLI = _Lazy(
    r"(?<![A-Za-z0-9_-])--(?P<key>[A-Za-z0-9-]*?"
    r"(?:password|passwd|passphrase|secret|token|api-?key|auth-?key))"
    r"[\ \t]++"
    r"(?:\"" + _NP + r"(?P<dq>[^\"\r\n]*+)"
    r"|'" + _NP + r"(?P<sq>[^'\r\n]*+)"
    r"|" + _NP + r"(?P<bare>[^" + _WS + r"\"'`;&|<>:=-][^" + _WS + r"\"'`;&|<>]*+))",
    _A | _I | _X,
)

_VALUE_GROUPS = ("edq", "dq", "sq", "bq", "bare")
_CLOSERS = {")": "(", "]": "[", "}": "{"}


# An identifier that ends in a key word: "client_secret", "DB_PASSWORD".
_KEY_NAME_RE = _Lazy(r"[A-Za-z0-9_.-]*?(?:" + _KEY_CORES + r")", re.I | re.A | re.X)
_SEP_AHEAD_RE = _Lazy(r"[ \t]*+[:=]")
_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _kv_value_span(m: re.Match[str]) -> tuple[int, int, int]:
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
        if j < end or _SEP_AHEAD_RE.match(text, end):
            i = j
            while i > start and text[i - 1] in _IDENT_CHARS:
                i -= 1
            if i < j and _KEY_NAME_RE.fullmatch(text, i, j):
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


# A rule finds candidates; ``decide`` returns (kind, start, end, resume): the
# span to replace and where to continue searching, or None to leave the match
# alone (the search then continues after its key, or after the match).
_Decision = tuple[str, int, int, int]
_Decide = Callable[[re.Match[str]], "_Decision | None"]


def _fixed(
    kind: str,
    check: Callable[[str], bool] | None = None,
    group: str = "secret",
    rstrip: str = "",
) -> _Decide:
    def decide(m: re.Match[str]) -> _Decision | None:
        value = m.group("secret")
        if rstrip:
            value = value.rstrip(rstrip)  # "... Bearer abc123." ends a sentence
        if not value:
            return None
        if check is not None and not check(value if group == "secret" else m.group(group)):
            return None
        start = m.start("secret")
        return kind, start, start + len(value), m.end()

    return decide


def _decide_url(m: re.Match[str]) -> _Decision | None:
    value = m.group("secret")
    if not any(c.isalnum() for c in value) or _PLACEHOLDER_RE.match(value):
        return None
    return "url_password", m.start("secret"), m.end("secret"), m.end()


def _decide_auth(m: re.Match[str]) -> _Decision | None:
    value = m.group("secret").rstrip(".")  # "... Bearer abc123." ends a sentence
    if not value or not _auth_header_ok(value):
        return None
    kind = "basic_auth" if m.group("scheme").lower() == "basic" else "bearer_token"
    start = m.start("secret")
    return kind, start, start + len(value), m.end()


def _decide_kv(m: re.Match[str]) -> _Decision | None:
    start, end, resume = _kv_value_span(m)
    if start < 0:
        return None
    key = m.group("key")
    kind = _kv_kind(key)
    if not _value_ok(m.string[start:end], key, kind):
        return None
    return kind, start, end, resume


_KV_TRIGGERS = ("pwd", "pass", "secret", "token", "key")
_GITHUB_TRIGGERS = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")

# (pattern, decide, triggers): in order.  A rule can only match text whose
# lower-cased form contains one of its triggers; the rules never match a
# marker, so gating on the *original* text stays sound after replacements.
_Rule = tuple[_Lazy, _Decide, tuple[str, ...]]
_RULES: tuple[_Rule, ...] = (
    (_PEM_FULL, _fixed("private_key"), ("-----begin",)),
    (_PEM_TRUNCATED, _fixed("private_key"), ("-----begin",)),
    (_JWT, _fixed("jwt"), ("eyj",)),
    (_ANTHROPIC, _fixed("anthropic_key", _token_like), ("sk-ant-",)),
    (_OPENAI, _fixed("openai_key", _openai_body_ok, group="body"), ("sk-",)),
    (_STRIPE, _fixed("stripe_key"), ("sk_", "rk_")),
    (_GITHUB, _fixed("github_token", _token_like), _GITHUB_TRIGGERS),
    (_GITLAB, _fixed("gitlab_token", _token_like), ("glpat-",)),
    (_SLACK, _fixed("slack_token"), ("xox", "xapp-")),
    (_SLACK_WEBHOOK, _fixed("slack_webhook", _has_digit), ("hooks.slack.com",)),
    (_GOOGLE, _fixed("google_api_key"), ("aiza",)),
    (_AWS_ID, _fixed("aws_access_key_id"), ("akia", "asia")),
    (_HUGGINGFACE, _fixed("huggingface_token", _token_like), ("hf_",)),
    (_NPM, _fixed("npm_token", _token_like), ("npm_",)),
    (_PYPI, _fixed("pypi_token"), ("pypi-",)),
    (_URL, _decide_url, ("://",)),
    (_AUTH_HEADER, _decide_auth, ("authorization",)),
    (_BEARER, _fixed("bearer_token", _bearer_ok, rstrip="."), ("bearer",)),
    (_KV, _decide_kv, _KV_TRIGGERS),
    (_CLI, _decide_kv, _KV_TRIGGERS),
)

KINDS: tuple[str, ...] = (
    "private_key",
    "jwt",
    "anthropic_key",
    "openai_key",
    "stripe_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "slack_webhook",
    "google_api_key",
    "aws_access_key_id",
    "aws_secret_key",
    "huggingface_token",
    "npm_token",
    "pypi_token",
    "url_password",
    "bearer_token",
    "basic_auth",
    "password",
    "secret",
    "api_key",
    "token",
)

# Text whose lower-cased form contains none of these is returned untouched
# without running any regex (the common case for prose).
_TRIGGERS: tuple[str, ...] = tuple(dict.fromkeys(t for rule in _RULES for t in rule[2]))


def _active_rules(low: str | None) -> list[_Rule]:
    if low is None:
        return list(_RULES)
    return [rule for rule in _RULES if any(t in low for t in rule[2])]


def _accepted(lazy: _Lazy, decide: _Decide, text: str) -> Iterator[_Decision]:
    """Yield the accepted decisions of ``pattern`` over ``text``, in order.

    Like ``finditer`` except that a rejected candidate does not swallow its
    text: the search resumes right after its key ("token: aws_secret_key = x"
    is rejected as ``token`` but then found as ``aws_secret_key``).
    """
    pattern = lazy.get()
    search = pattern.search
    after_key = "key" in pattern.groupindex
    pos = 0
    n = len(text)
    while pos <= n:
        m = search(text, pos)
        if m is None:
            return
        decision = decide(m)
        if decision is None:
            pos = m.end("key") if after_key else m.end()
        else:
            yield decision
            pos = decision[3]
        if pos <= m.start():
            pos = m.start() + 1


def _apply_rules(text: str, found: list[str], low: str | None = None) -> str:
    """Run the rules in order; append each replaced kind to ``found``.

    ``low`` is ``text.lower()`` and gates rules on their triggers; ``None``
    runs every rule (tests use that to check the gating is sound).
    """
    for pattern, decide, _ in _active_rules(low):
        pieces: list[str] = []
        last = 0
        for kind, start, end, _ in _accepted(pattern, decide, text):
            pieces.append(text[last:start])
            pieces.append(marker(kind))
            found.append(kind)
            last = end
        if pieces:
            pieces.append(text[last:])
            text = "".join(pieces)
    return text


def redact(text: str) -> RedactionResult:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``."""
    if not isinstance(text, str):
        raise TypeError(f"redact() expects str, not {type(text).__name__}")
    low = text.lower()
    if not any(t in low for t in _TRIGGERS):
        return RedactionResult(text, 0, ())
    found: list[str] = []
    out = _apply_rules(text, found, low)
    if not found:
        return RedactionResult(text, 0, ())
    return RedactionResult(out, len(found), tuple(sorted(set(found))))


def contains_secret(text: str) -> bool:
    """True if :func:`redact` would change ``text``."""
    if not isinstance(text, str):
        raise TypeError(f"contains_secret() expects str, not {type(text).__name__}")
    for pattern, decide, _ in _active_rules(text.lower()):
        for _ in _accepted(pattern, decide, text):
            return True
    return False


# --------------------------------------------------------------------------
# Fake secrets for tests (not real credentials).  Each entry is a string that
# redact() must fully neutralise when embedded in ordinary text.
# --------------------------------------------------------------------------

_PEM_BODY = (
    "eh093Fj9fOptqCWCsuZrJZaVLaPeAU5moHH5F/grANC/aBcnwDDOOAZvw6d3eK3p\n"
    "xFkhJA5uFyeUhwksU8dSaNrFWv5SRclfFhhqCmzhp59yZk4d6/GlThw+ZqyC85Nn\n"
    "7Jf30xIOdZh+NRwhUTv3L+Smo927U2aT1yVPMm5nYtffRcvy0Dxo5pCJFz2B30M8\n"
    "KVM+w8MDaD3vSS1Mmn7qOiqh1yudML66YbgqaD7XBPgUbqr2RbwXOq43IedbtWe2\n"
)

SECRET_SAMPLES_BY_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "private_key": (
            "-----BEGIN RSA " "PRIVATE KEY-----\n" + _PEM_BODY + "-----END RSA PRIVATE KEY-----",
            "-----BEGIN OPENSSH " "PRIVATE KEY-----\n" + _PEM_BODY + "-----END OPENSSH PRIVATE KEY-----",
        ),
        "jwt": (
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
            ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUgRG9lIiwiaWF0IjoxNzE2MjM5MDIyfQ"
            ".Gx3Q9bJ4vQz8m1T0fR2kLwY7aE5sPcN6uHdVjXoB-_I",
        ),
        "anthropic_key": (
            "sk-" "ant-api03-4dXd3eOa1Zcc_a4CgOFfqRgz7IhYePP2lny2pg17-dUM2jNKogorTAuRVpQ09oiVeZ"
            "WJ9QyucS19AvMp2gUAeSsUfFgUlAA",
        ),
        "openai_key": (
            "sk-" "M0XvqZjxTW3xvboSRt5MT3BlbkFJh3dAwVtRMflhbmuaptt0",
            "sk-" "proj-1ZA7V0FhHVJWDBt2hWdQZUm14QhoxhLPAbQcEFUV2fsjGHb6HrlEOS47WgjKCu_0xxKhg5Q"
            "jWV1mKaUyvBPs0jSO2Jkf08MMF1ulMMCw3XVy27dFanUrOSE62chn4xdeJg1Kza5KxxGWfvmaQtKnP_VSGVBr",
            "sk-" "svcacct-YSuIb9OZiFZ3HLKv797TPNbpjava1bMZwIMlvdp5gjTrD8Osj_LnZ5R-j_8U_m7aSz7NR"
            "SOtv7T3BlbkFJ5y4SXvE9rwLbAtf6e9cpCGybY9lMR4pAwBp3GVy1PixOqoRGrB5Vpg5C6QsyHZytfqY6K1Qjah",
        ),
        "stripe_key": (
            "sk_" "live_51HjczU9YGP6SxWw4iUiE6LapkRgRsaITgqLpaKoJceXBH42IkQFU960mNhJuAPXOEGvgUsWlY8"
            "A1myEVIR6LFYhOTduCDuaOHZgO3",
            "rk_" "live_51HIwAwufmcTZv6Alsau4ywWylEHwUwlCyxtq7g5HwjWcbSDS5mZGF2Hlr7PNBC159twsB09lmZ"
            "YcZt7dC9HVfrRz3eKFIfNhqrWO9",
        ),
        "github_token": (
            "ghp_" "0fG2xPVD8AfOTovYGkYSrIiBSed1S3wlj46F",
            "ghs_" "uq3sXRo5QhgYrZJd6F58LKideRuauiFtEvGj",
            "github_" "pat_11AfLg1gJk7bwKGfGhgs870Xh_RQXdNWOAvlhFka84v7bMwNDlfBKP4b2loPDbwAMbj8KVuxgaaJl7LRiiQbL",
        ),
        "gitlab_token": ("glpat-" "oZ6axl7KBGgMVGOYn7B3",),
        "slack_token": (
            "xoxb-" "7281934650123-4829103746512-JmWZTsUryrgsVJN8OLJtqCdp",
            "xoxp-" "7281934650123-7382910465-8391027465183-6f1d0c8e2b9a4f7d3c5e1b0a9d8c7b6e",
        ),
        "slack_webhook": (
            "https://hooks.slack.com/" "services/TA8KXXO68UO/BV65G0F2E6I/flxutnrYecpJbsNaUXkFVi3C",
        ),
        "google_api_key": ("AIza" "SyZvQmLL8ZrF8w50SR2Qugs4lIFVRdxtDyK",),
        "aws_access_key_id": ("AKIA" "487HUS5QRT22U5PO", "ASIA" "328BTVIJSM2A30OU"),
        "aws_secret_key": ("aws_secret_access_key = " "8W7RQHy2Yp+ptzsJqLOJqu3g9DYpQaxEN+cNljiR",),
        "huggingface_token": ("hf_" "SQNJFCVJwnhSzLYyVcpFRSAGYbIjBkadIi",),
        "npm_token": ("npm_" "tK27Vtkpk8mC3mMcSBnTTwXtKWcJzKRBHuj4",),
        "pypi_token": (
            "pypi-" "AgEIcHlwaS5vcmcCJGQ4ZjQ1NzE2LTk2MjEtNGE5Ni1iZmM1LTg3ZTMzNDM2YTJkMQACKlsz"
            "LCJkNjU3NjM0Ni1hZjUyLTQ4NjctOTU4MS1jMWY5ZmI4NzI2ZDgiXQAABiB3",
        ),
        "url_password": ("postgres://app_user:" "Zq8v3LmT9xWp2rKd@db.internal.example:5432/app",),
        "bearer_token": ("Authorization: Bearer " "3Yhc1OxT_8QY4_3BMDogiSTRIiP9LJm7R04ZhbGSdGW",),
        "basic_auth": ("Authorization: Basic " "YWRtaW46UzNjcjN0UGFzc3cwcmQh",),
        "password": ("password=" "7WH77hBlyqz#9PNlds", "DB_PASSWORD=" "Tr0ub4dor^3x"),
        "secret": ("client_secret: " "GOCSPX-3kq9TzR1mVb7WnXc2LpYd8Hs",),
        "api_key": ("api_key=" "a1b2c3d4e5f60718293a4b5c6d7e8f90",),
        "token": ("access_token=" "ya29.a0AfH6SMBx7Qk2Lr9Tn3Vp",),
    }
)

SECRET_SAMPLES: tuple[str, ...] = tuple(
    sample for samples in SECRET_SAMPLES_BY_KIND.values() for sample in samples
)
