"""Secrets found by context rather than by a fixed format: prose ("my wifi password is …",
"the PIN is 4821"), card numbers (Luhn), high-entropy values in assignments and base64 that
decodes to a secret."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Iterator

from agent_memory.redaction.base import A, I, Lazy
from agent_memory.redaction.keyvalue import NOT_A_VALUE, PLACEHOLDER_RE, public_value
from agent_memory.redaction.providers import entropy

Span = tuple[int, int, str]

# --- prose -------------------------------------------------------------------------------------
_VALUE = r"""(?:"(?P<dq>[^"\r\n]{1,80})"|'(?P<sq>[^'\r\n]{1,80})'|(?P<bare>[^\s"'`]{1,80}))"""
_PROSE = (
    r"(?<![A-Za-z])(?P<what>pass(?:word|code|phrase)|pin(?:[ \t]+(?:code|number))?|pw"
    r"|(?:alarm|door|gate|safe|lock|entry|garage|security|keypad)[ \t]+code|combination)"
    r"(?:[ \t]+(?:for|to|of|on|at)[ \t]+(?:(?:the|my|our|your|this)[ \t]+)?[\w.'-]+(?:[ \t]+[\w.'-]+)?)?"
    r"(?:'s|[ \t]+(?:is|was|is[ \t]+now|will[ \t]+be|remains))[ \t]+"
    + _VALUE
    + r"|\b(?:chang|set|reset|updat)\w*[ \t]+(?:(?:my|the|our|his|her|their|your)[ \t]+)?(?:[\w-]+[ \t]+)?"
    r"(?P<what2>pass(?:word|code|phrase)|pin)[ \t]+to[ \t]+" + _VALUE.replace("?P<", "?P<c_")
)
PROSE = Lazy(_PROSE, A | I)
PROSE_LOW = Lazy(_PROSE, A)  # the same, matched against lower-cased ASCII text (faster than IGNORECASE)
_WORD = Lazy(r"[A-Za-z]+(?:[-'][A-Za-z]+)*")
_PIN = Lazy(r"\d{4,12}")
_PROSE_STOP = NOT_A_VALUE | frozenset("too still now also only just very stored saved hashed encrypted".split())


def _prose_value(m: re.Match[str], prefix: str) -> tuple[int, int, bool] | None:
    for name in ("dq", "sq", "bare"):
        start = m.start(prefix + name)
        if start >= 0:
            end = m.end(prefix + name)
            if name == "bare":
                while end > start and m.string[end - 1] in ".,;:)":
                    end -= 1
            return start, end, name != "bare"
    return None


def prose_spans(text: str, low: str) -> Iterator[Span]:
    """``low`` is ``text.lower()``; values are read from ``text`` at the same offsets."""
    ascii_text = text.isascii()
    for m in (PROSE_LOW if ascii_text else PROSE).get().finditer(low if ascii_text else text):
        prefix = "" if m.group("what") else "c_"
        what = (m.group("what") or m.group("what2")).lower()
        found = _prose_value(m, prefix)
        if found is None:
            continue
        start, end, quoted = found
        value = text[start:end]
        if what.startswith("pass") and what != "passcode" or what == "pw":
            if len(value) < 4 or value.lower() in _PROSE_STOP or PLACEHOLDER_RE.get().match(value):
                continue
            if not quoted and _WORD.get().fullmatch(value) and not any(c.isupper() for c in value[1:]):
                continue  # "is case-sensitive", "is long": a word, not a password
            if not quoted and re.fullmatch(r"v\d+(?:\.\d+)+", value):
                continue  # "the password was v1.2": a version
            yield start, end, "password"
        elif _PIN.get().fullmatch(value.rstrip("#*")):
            yield start, end, "pin"


# --- card numbers --------------------------------------------------------------------------------
# groups joined by one separator throughout: space, dash, dot, underscore or slash (views.py turns every Unicode dash,
# dot and decimal digit into these)
CARD = Lazy(
    r"(?<![\w.+/-])(?P<n>\d{4}(?P<s>[ ._/-]?)\d{4}(?P=s)\d{4}(?P=s)\d{4}(?:(?P=s)\d{1,3})?"
    r"|3[47]\d{2}(?P<a>[ -]?)\d{6}(?P=a)\d{5}|3[0689]\d{2}(?P<d>[ -]?)\d{6}(?P=d)\d{4}|\d{13,19})(?![\w-]|[.,]\d)",
    A,
)
# issuer prefixes: Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro (50, 56-69), Mir (2200-2204),
# RuPay (60, 65, 81, 82, 508), Troy (9792), Verve (506, 507, 650), Elo
_IIN = Lazy(r"4|5\d|2(?:20[0-4]|2[2-9]|[3-6]\d|7[01]|720)|3[47]|6|35(?:2[89]|[3-8])|3(?:0[0-5]|[689])|8[12]|9792")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# a card number spelt out digit by digit: "5 5 6 4 1 9 0 9 …"
_SPACED_CARD = Lazy(r"(?<![\w.])\d(?:[ ]\d){12,18}(?![ ]?\d)", A)


# a card whose groups run over a line break: "my visa is 4532 0151\n1283 0366"
_LINE_CARD = Lazy(r"(?<![\w.+/-])\d{4}(?:(?:[ ._/-]|[ \t]*\r?\n[ \t]*)?\d{4}){2,3}(?:[ ._/-]?\d{1,3})?(?![\w-]|[.,]\d)", A)

_DIGIT_BREAK = Lazy(r"\n[ \t]{0,6}\d{4}", A)  # a line opening with a group (a literal first: a fast scan)


def _card_ok(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and len(set(digits)) > 2 and bool(_IIN.get().match(digits)) and luhn_ok(digits)


def card_spans(text: str) -> Iterator[Span]:
    for m in CARD.get().finditer(text):
        digits = "".join(c for c in m.group("n") if c.isdigit())
        if 13 <= len(digits) <= 19 and len(set(digits)) > 2 and _IIN.get().match(digits) and luhn_ok(digits):
            yield m.start(), m.end(), "card_number"
    # only around a line break with a digit on each side
    last = -1
    for b in _DIGIT_BREAK.get().finditer(text) if "\n" in text else ():
        nl = b.start()
        end = len(text[max(0, nl - 6) : nl].rstrip(" \t\r")) + max(0, nl - 6)  # the previous line's last character
        if nl >= last and text[max(0, end - 4) : end].isdigit():
            for m in _LINE_CARD.get().finditer(text, max(0, end - 40), min(len(text), b.end() + 60)):
                if m.start() <= nl < m.end() and _card_ok("".join(c for c in m.group() if c.isdigit())):
                    yield m.start(), m.end(), "card_number"
                    last = m.end()
    if " " in text:
        for m in _SPACED_CARD.get().finditer(text):
            digits = m.group().replace(" ", "")
            if len(set(digits)) > 2 and _IIN.get().match(digits) and luhn_ok(digits):
                yield m.start(), m.end(), "card_number"


# --- long runs: high entropy in an assignment, base64 that decodes to a secret ------------------------
# (no look-behind: runs are maximal and found left to right, and a leading look-behind would turn
# off the regex engine's first-character scan)
LONG_RUN = Lazy(r"[A-Za-z0-9+/_\-=.~]{20,}+")
_ASSIGN_LEFT = Lazy(r"(?P<key>[A-Za-z_][\w.-]{0,60}+)(?:\[\d{0,4}\])?[\"']?[ \t]*+(?::=|=>|[:=])[ \t]*+[\"'`]?$", A)
# a name that ends in a word for key material: appKey, aes_key, master.key, hmac_secret, client_token
_SECRET_KEY_END = Lazy(r"(?:key|secret|token|passw(?:or)?d|pwd|psk|salt|seed)$", I)
_NOT_SECRET_KEY = Lazy(
    r"(?:^|[_.-]|(?<=[a-z])(?=[A-Z]))(?:id|ids|uuid|guid|sha|sha\d+|hash|checksum|digest|commit|rev|revision|version|etag"
    r"|trace|request|integrity|url|uri|path|file|dir|name|image|type|format|region|host|ref|class|module|handler|prefix"
    r"|arn|email|user|username|bucket|public|pub|pubkey|address|addr|fingerprint|sitekey|site[_-]?key|publishable"
    r"|iv|nonce|tag|cache|idempotency|partition|sort|primary|foreign|lookup|dedupe?|row|shard|index|modulus|exponent"
    r"|kid|x5t|x5c|thumbprint)"
    r"(?:$|[_.-]|(?=[A-Z]))",
    I,
)
_HEXISH = Lazy(r"[0-9a-fA-F-]+")
_B64_RUN = Lazy(r"[A-Za-z0-9+/]{24,}+={0,2}|[A-Za-z0-9_\-]{24,}+={0,2}")
_DOCKER_AUTH = Lazy(r"[^\s:]{1,64}:\S{4,}")


def _high_entropy(s: str) -> bool:
    if _HEXISH.get().fullmatch(s) or s[:7].lower() in ("sha256-", "sha384-", "sha512-") or public_value(s):
        return False
    if s[1:4] == "pub" and s[0] in "xyzt":  # an extended PUBLIC key (xpub/ypub/zpub/tpub) is shareable
        return False
    if "//" in s or s.startswith(("/", ".", "~")) or s.count("/") > 2 or s.count(".") > 2:
        return False
    digits = sum(c.isdigit() for c in s)
    upper = sum(c.isupper() for c in s)
    lower = sum(c.islower() for c in s)
    return digits >= 2 and upper >= 2 and lower >= 2 and entropy(s) >= 3.7


def _decoded(run: str) -> str | None:
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_" if ("-" in body or "_" in body) else None, validate=True)
        out = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\r\n\t" for c in out)
    return out if len(out) >= 8 and printable >= 0.95 * len(out) else None


_PROSE_TEXT = Lazy(r"[A-Za-z][a-z']*(?:[ ,.!?:;-]{1,3}[A-Za-z0-9][a-z0-9']*){3,}[.!?]?\s*")


def b64_prose(run: str) -> bool:
    """Round 8: base64 whose text is a sentence ("V2VsY29tZSB0byB0aGUg…" = "Welcome to the staging cluster"): content
    carried in base64 (a ConfigMap, a data URI of text), not a key. A secret inside is found apart (``encoded_secret``)."""
    if len(run) < 16 or len(run) % 4 == 1:
        return False
    decoded = _decoded(run)
    return decoded is not None and _PROSE_TEXT.get().fullmatch(decoded) is not None


def run_spans(text: str, detect: Callable[[str], bool], decode: bool) -> Iterator[Span]:
    """Base64 runs hiding a secret (when ``decode``) and high-entropy assignment values."""
    for m in LONG_RUN.get().finditer(text):
        start = m.start()
        run = m.group()
        found = False
        if decode and len(run) >= 24:
            for b in _B64_RUN.get().finditer(run):
                decoded = _decoded(b.group())
                if decoded is None:
                    continue
                bstart = start + b.start()
                if detect(decoded):
                    found = True
                    yield bstart, start + b.end(), "encoded_secret"
                elif _DOCKER_AUTH.get().fullmatch(decoded) and "auth" in text[max(0, bstart - 24) : bstart].lower():
                    found = True
                    yield bstart, start + b.end(), "basic_auth"
        if found:
            continue
        left = _ASSIGN_LEFT.get().search(text, max(0, start - 80), start)
        if left is not None and not _NOT_SECRET_KEY.get().search(left.group("key")):
            value = run.rstrip(".")
            if _high_entropy(value) and not _b58_address(value) and not b64_prose(value):
                yield start, start + len(value), "high_entropy_secret"
            elif _SECRET_KEY_END.get().search(left.group("key")) and _HEX_KEY.get().fullmatch(value):
                yield start, start + len(value), "high_entropy_secret"


_HEX_KEY = Lazy(r"(?:0x)?[0-9a-fA-F]{16,128}")
_B58_CHARS = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _b58_address(s: str) -> bool:
    """A base58check string of 25 bytes: a public address (bitcoin, litecoin, dogecoin …), never a secret."""
    if not 25 <= len(s) <= 35 or any(c not in _B58_CHARS for c in s):
        return False
    n = 0
    for c in s:
        n = n * 58 + _B58_CHARS.index(c)
    raw = b"\0" * (len(s) - len(s.lstrip("1"))) + n.to_bytes((n.bit_length() + 7) // 8, "big")
    return len(raw) == 25 and hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:]
