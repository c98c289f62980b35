"""Credentials recognisable by their shape: PEM private keys, JWTs, provider tokens, URL
passwords, HTTP authorization headers and webhook URLs."""

from __future__ import annotations

import re
from collections.abc import Callable

from agent_memory.redaction.base import WS, A, Decide, Decision, I, Lazy, Rule, fixed, longest_alnum_run, token_like
from agent_memory.redaction.keyvalue import PLACEHOLDER_RE
from agent_memory.redaction.providers import PROVIDERS, SELF_EVIDENT, random_enough

# PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP, ...) ------------------------------------------
_PEM_LABEL = r"(?:[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?|[ A-Za-z0-9]{0,40}(?:Static key V\d|SECRET KEY))"
PEM_FULL = Lazy(
    r"(?P<secret>-----BEGIN" + _PEM_LABEL + r"-----"
    r"(?:[^-]|-(?!----))*+"  # body: anything up to the next "-----"
    r"-----END" + _PEM_LABEL + r"-----)",
    A,
)
# A pasted key that lost its END line: the header plus the base64 / header lines after it
# (newlines may be real or JSON-escaped "\n").
_PEM_NL = r"[ \t]*+(?:\r?\n|\\r\\n|\\n)"
PEM_TRUNCATED = Lazy(
    r"(?P<secret>-----BEGIN" + _PEM_LABEL + r"-----"
    r"(?:" + _PEM_NL + r"(?:" + _PEM_NL + r")?[ \t]*+"
    r"(?:[A-Za-z0-9+/=]{16,}+|(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset):[^\r\n\\]*+)"
    r")*+)",
    A,
)

_B = r"(?<![A-Za-z0-9_-])"  # not in the middle of a token-ish run
JWT = Lazy(_B + r"(?P<secret>eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+)", A)
# round 8: the whole URL is the credential (a scorer or a reader should not be left "https://hooks.slack.com/services/")
SLACK_WEBHOOK = Lazy(r"(?P<secret>(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{8,}+)", A | I)

# scheme://user:PASSWORD@host
URL = Lazy(
    r"[A-Za-z][A-Za-z0-9+.-]{0,31}://"
    r"[^" + WS + r":/?#\[\]\"'<>]{0,256}+:"  # the user may be an e-mail address (smtp://me@x.org:pw@host)
    r"(?!\[REDACTED:)(?P<secret>[^" + WS + r"/?#\"'<>]{1,256}(?:[?#][^" + WS + r"/?#\"'<>=&]{1,128})?)@",
    A,
)

# token68 (RFC 7235); "=" only as trailing padding, so "api_key=abc" is not one.  "[" is excluded
# after it too: once "abc" became a marker the answer must not change (idempotence).
_TOKEN68 = r"[A-Za-z0-9\-._~+/]++=*+(?![A-Za-z0-9\-._~+/\[])"
AUTH_HEADER = Lazy(
    r"authorization(?:\\?[\"'])?[ \t]*+[:=][ \t]*+(?:\\?[\"'])?[ \t]*+"
    r"(?P<scheme>bearer|basic|token|bot|ssws|digest)[ \t]++(?P<secret>" + _TOKEN68 + r")",
    A | I,
)
BEARER = Lazy(_B + r"bearer[ \t]++(?P<secret>" + _TOKEN68 + r")", A | I)


def _openai_body_ok(s: str) -> bool:
    # "sk-learn-is-a-great-library" has only short runs and no digits; real keys have long random runs.
    return token_like(s) and longest_alnum_run(s) >= 16


def _bearer_ok(s: str) -> bool:
    return len(s) >= 16 and token_like(s)


def _auth_header_ok(s: str) -> bool:
    # After an explicit "Authorization:" header almost anything is a credential, but
    # "Set the Authorization: Bearer header" is prose.
    return token_like(s) or len(s) >= 20 or any(c in "-._~+/=" for c in s)


def _decide_url(m: re.Match[str]) -> Decision | None:
    value = m.group("secret")
    if not any(c.isalnum() for c in value) or PLACEHOLDER_RE.get().match(value):
        return None
    head, sep, _ = value.partition("?") if "?" in value else value.partition("#")
    if sep and head.isdigit():
        return None  # host:8080?q=a@b: a port and a query, not a password
    return "url_password", m.start("secret"), m.end("secret"), m.end()


def _decide_auth(m: re.Match[str]) -> Decision | None:
    value = m.group("secret").rstrip(".")  # "... Bearer abc123." ends a sentence
    if not value or not _auth_header_ok(value):
        return None
    kind = "basic_auth" if m.group("scheme").lower() == "basic" else "bearer_token"
    start = m.start("secret")
    return kind, start, start + len(value), m.end()


def _diverse_tail(s: str) -> bool:
    """Not a placeholder such as ``sk_live_xxxxxxxxxxxxxxxx``: the tail has several distinct characters."""
    return len(set(s[-16:])) >= 5


def _provider_check(kind: str) -> Callable[[str], bool]:
    if kind == "openai_key":
        return lambda s: _diverse_tail(s) and _openai_body_ok(s[3:])
    if kind in SELF_EVIDENT:
        return _diverse_tail
    return lambda s: _diverse_tail(s) and random_enough(s)


def _provider_rule(kind: str, triggers: tuple[str, ...], pattern: str) -> tuple[Lazy, Decide, tuple[str, ...]]:
    return Lazy(pattern, A), fixed(kind, _provider_check(kind)), triggers


# Provider rows are gated on case-sensitive triggers in the original text (see providers.py).
PROVIDER_RULES: tuple[Rule, ...] = tuple(_provider_rule(*row) for row in PROVIDERS)

# Gated on triggers in the lower-cased text.
SHAPE_RULES: tuple[Rule, ...] = (
    (PEM_FULL, fixed("private_key"), ("-----begin",)),
    (PEM_TRUNCATED, fixed("private_key"), ("-----begin",)),
    (JWT, fixed("jwt"), ("eyj",)),
)
LATE_RULES: tuple[Rule, ...] = (
    (SLACK_WEBHOOK, fixed("slack_webhook", lambda s: any(c.isdigit() for c in s)), ("hooks.slack.com",)),
    (URL, _decide_url, ("://",)),
    (AUTH_HEADER, _decide_auth, ("authorization",)),
    (BEARER, fixed("bearer_token", _bearer_ok, rstrip="."), ("bearer",)),
)
