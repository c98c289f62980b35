"""Secret families found by structure rather than by one provider's format.

* bank and identity numbers: IBAN (mod-97 checked, grouped or not), and numbers labelled as an
  SSN / SIN / national insurance / DNI / tax id / passport / CVV in prose or config;
* wallet secrets: BIP-39 seed phrases (12+ consecutive words of the BIP-39 list, however they are
  separated or numbered; the other official lists too, accents typed or not), base58check WIF keys and extended private keys (checksum verified),
  64-hex private keys labelled as keys, 64-byte key-pair arrays;
* key files of any tool: PuTTY ``.ppk`` private lines, a base64 line under a "secret key" comment
  (minisign, signify), ``client-key-data``, npm ``_auth``, ``.pgpass`` lines, XML password elements;
* a value labelled as a key / token / secret in prose ("algolia admin api key: …"), partial provider
  tokens, webhook URLs.

Public look-alikes (xpub, addresses, transaction and block hashes, checksums, public keys) are left alone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator

from agent_memory.redaction import bip39
from agent_memory.redaction.base import A, I, Lazy, X
from agent_memory.redaction.bip39 import WORDS
from agent_memory.redaction.heuristics import luhn_ok
from agent_memory.redaction.keyvalue import KEY_CORES, PLACEHOLDER_RE, placeholder_value, public_value
from agent_memory.redaction.providers import entropy

Span = tuple[int, int, str]

# --- IBAN ------------------------------------------------------------------------------------------
_IBAN = Lazy(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{4}){2,7}(?:[ -]?[A-Za-z0-9]{1,4})?(?![A-Za-z0-9])")
# IBAN length by country (ISO 13616 registry): an IBAN in either case must have its country's length.
_IBAN_LENGTHS = {
    **dict.fromkeys("NO".split(), 15),
    **dict.fromkeys("BE".split(), 16),
    **dict.fromkeys("DK FO FI GL NL".split(), 18),
    **dict.fromkeys("MK SI".split(), 19),
    **dict.fromkeys("AT BA EE KZ LT LU XK".split(), 20),
    **dict.fromkeys("CH CR HR LI LV".split(), 21),
    **dict.fromkeys("BG BH DE GB GE IE ME RS VA".split(), 22),
    **dict.fromkeys("AE GI IL TL IQ".split(), 23),
    **dict.fromkeys("AD CZ ES MD PK RO SA SE SK TN VG".split(), 24),
    **dict.fromkeys("PT ST".split(), 25),
    **dict.fromkeys("IS TR".split(), 26),
    **dict.fromkeys("FR GR IT MC MR SM".split(), 27),
    **dict.fromkeys("AL AZ BY CY DO GT HU LB PL SV".split(), 28),
    **dict.fromkeys("BR EG PS QA UA".split(), 29),
    **dict.fromkeys("JO KW MU".split(), 30),
    **dict.fromkeys("MT SC".split(), 31),
    **dict.fromkeys("LC".split(), 32),
}


def _iban_ok(s: str) -> bool:
    s = s.replace(" ", "").replace("-", "")
    if not (s.isupper() or s.islower()):
        return False  # mixed case: not an IBAN written by hand or by a bank
    lower = s.islower()
    s = s.upper()
    expected = _IBAN_LENGTHS.get(s[:2])
    if expected is not None and len(s) != expected or expected is None and lower:
        return False
    # a BBAN of bank letters and account characters ("RO95KDHY…") has few digits; its country's exact length and the
    # mod-97 check then carry the weight
    if not 15 <= len(s) <= 34 or sum(c.isdigit() for c in s[4:]) < (2 if expected is not None and not lower else 6):
        return False
    rearranged = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


iban_ok = _iban_ok


def _iban_end(candidate: str) -> int:
    """Length of the IBAN at the start of ``candidate`` (0 if none): the regex may have taken a following word of four
    letters ("BE70164651239332 graag", "SE45 9012 … 6179 senast"), so the country's length decides where it ends."""
    if _iban_ok(candidate):
        return len(candidate)
    expected = _IBAN_LENGTHS.get(candidate[:2].upper())
    if expected is None:
        return 0
    seen = 0
    for i, c in enumerate(candidate):
        if c.isalnum():
            seen += 1
            if seen == expected:
                return i + 1 if _iban_ok(candidate[: i + 1]) else 0
    return 0


# --- labelled identity numbers -------------------------------------------------------------------
_ID_LABEL = (
    r"(?<![A-Za-z])(?:ssn|social(?:[ \t]+security)?(?:[ \t]+(?:number|no\.?|#))?|sin|social[ \t]+insurance(?:[ \t]+number)?"
    r"|national[ \t]+insurance(?:[ \t]+(?:number|no\.?))?|ni[ \t]+no\.?|nino|dni|nif|nie|nif/dni|dni/nif"
    r"|tax[ \t]+id|tin|passport(?:[ \t]+(?:number|no\.?|#))?|cvv2?|cvc2?|security[ \t]+code|card[ \t]+verification)"
)
_ID = Lazy(
    _ID_LABEL + r"(?![A-Za-z])[^\S\r\n]*(?:\"[ \t]*)?(?:on[ \t]+the[ \t]+back[ \t]+)?"
    r"(?:(?:is|was|number|no\.?|#|:|=|-|—)[^\S\r\n]*)*\"?(?:[ \t]+(?:is|:)[ \t]+)?"
    r"(?=[A-Z0-9 .-]{0,15}\d)(?P<v>[A-Z0-9](?:[A-Z0-9]|[ .-](?=[A-Z0-9])){2,15})(?![A-Za-z0-9])",
    I | A,
)


def _id_value_ok(value: str, label: str) -> bool:
    digits = sum(c.isdigit() for c in value)
    if label.startswith(("cvv", "cvc", "security", "card")):
        return value.isdigit() and 3 <= len(value) <= 4
    if digits < 6 or re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) or re.search(r"[a-z]{3}", value):
        return False
    return not (len(set(value.replace("-", "").replace(" ", ""))) <= 2)


# --- cards separated by dots (spaces and dashes are heuristics.CARD's) ------------------------------
_CARD_DOTS = Lazy(r"(?<![\w.])\d{4}\.\d{4}\.\d{4}\.\d{4}(?![\w.]|\.\d)")

# --- BIP-39 seed phrases --------------------------------------------------------------------------
_WORD = Lazy(r"[a-z]{3,8}")
_GAP = Lazy(r"(?:[\s,;\"']|(?<!\w)\d{1,2}[.):]?(?!\w))*")
_MIN_WORDS = 12

# --- base58check keys -----------------------------------------------------------------------------
_B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58_ALPHABET)}
_B58_RUN = Lazy(r"(?<![A-Za-z0-9])(?:[5KL9c][1-9A-HJ-NP-Za-km-z]{50,51}|[a-z]prv[1-9A-HJ-NP-Za-km-z]{100,108})(?![A-Za-z0-9])")


def _b58check_ok(s: str) -> bool:
    n = 0
    for c in s:
        n = n * 58 + _B58_INDEX[c]
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    raw = b"\0" * (len(s) - len(s.lstrip("1"))) + raw
    if len(raw) < 5:
        return False
    return hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:]


# --- hex private keys and key-pair arrays ---------------------------------------------------------
_HEX64 = Lazy(r"(?<![0-9A-Za-z])(?:0x)?(?P<h>[0-9a-fA-F]{64})(?![0-9A-Za-z])")
_KEYISH = Lazy(r"priv|secret|key|wallet|signer|deployer|account|mnemonic|seed|\bsk\b|wif|\bpk\b", I)
_HASHISH = Lazy(r"hash|sha|digest|checksum|commit|\btx|block|merkle|\bid\b|fingerprint|public|pubkey|address|sum\b", I)
_BYTE_ARRAY = Lazy(r"\[\s*(?:\d{1,3}\s*,\s*){31,63}\d{1,3}\s*\]")

# --- key files ------------------------------------------------------------------------------------
_PPK = Lazy(r"Private-Lines:[ \t]*\d+[ \t]*\r?\n(?P<v>(?:[A-Za-z0-9+/=]{4,}\r?\n?)+)")
_PPK_MAC = Lazy(r"Private-(?:MAC|Hash):[ \t]*(?P<v>[0-9a-fA-F]{20,})")
_COMMENT_KEY = Lazy(r"(?:secret|private)[ \t]+key[^\r\n]*\r?\n[ \t]*(?P<v>[A-Za-z0-9+/]{40,}={0,2})(?![A-Za-z0-9+/=])", I)
_KV_EXTRA = Lazy(
    r"(?<![A-Za-z0-9])(?P<k>client-key-data|_auth|_password|privkey|private[-_]?key|secret[-_]?key|mnemonic|seed[-_ ]?phrase"
    r"|wif|xprv|iban|ssn)[\"']?[ \t]*[:=][ \t]*[\"']?(?P<v>[A-Za-z0-9+/=_.\-]{16,})",
    I | A,
)
_PGPASS = Lazy(r"(?m)^[ \t]*[\w.*\-]+:(?:\d{1,5}|\*):[\w.*\-]+:[\w.*@\-]+:(?P<v>\S{4,})[ \t]*$")
_XML = Lazy(
    r"<(?P<tag>[\w:-]*(?:password|passwd|secret|token|api[-_]?key|apikey|credential)[\w:-]*)>"
    r"(?P<v>[^<\s]{4,200})</(?P=tag)>",
    I,
)

# --- values labelled as keys in prose; webhooks; partial provider tokens ----------------------------
# a value handed to a command through the shell: "private-key <(echo KEY)", "$(echo KEY)", "<<< KEY"
_INDIRECTION = r"(?:(?:<\(|\$\()[ \t]*(?:echo|printf)[ \t]+(?:-[nes]+[ \t]+)?|<<<[ \t]*)?"
_LABELLED = Lazy(
    r"(?<![A-Za-z])(?P<label>(?:api|admin|write|search|app|license|licence|access|auth|secret|private|server|service"
    r"|integration|master|bot|personal)[ \t_-]*(?:api[ \t_-]*)?(?:key|token|secret)|token|secret|pat)"
    r"s?(?![A-Za-z])[ \t]*(?:is|was|=|:|->|=>)?[ \t]*" + _INDIRECTION + r"[\"']?(?P<v>[A-Za-z0-9_\-./+=:]{20,})",
    I | A,
)
_WEBHOOK = Lazy(r"https?://[\w.-]+/(?:api/)?(?:webhooks?|hooks)/[\w/-]*?(?P<v>[A-Za-z0-9_-]{32,})", A)
_ASANA = Lazy(r"(?<![\w/])[12]/\d{10,20}(?:/\d{10,20})?:[0-9a-f]{32}(?![\w])", A)
_PREFIXED = Lazy(
    r"(?<![A-Za-z0-9])(?:sbp|sb_secret|sntryu|CCIPAT|lin_oauth|shpca|dp\.ct|dp\.st)[_.]"
    r"[A-Za-z0-9_.-]{20,}",
    A,
)


def _random_value(v: str) -> bool:
    if re.fullmatch(r"[0-9a-fA-F]{32,}", v):
        return True
    digits = sum(c.isdigit() for c in v)
    letters = sum(c.isalpha() for c in v)
    return digits >= 2 and letters >= 4 and entropy(v) >= 3.6 and "//" not in v and v.count("/") <= 2


_WORD_INDEX: dict[str, int] = {}


def _bip39_checksum_ok(words: list[str]) -> bool:
    """A 12/15/18/21/24-word phrase whose last word carries the SHA-256 checksum of the others' entropy."""
    if len(words) not in (12, 15, 18, 21, 24):
        return False
    if not _WORD_INDEX:
        _WORD_INDEX.update((w, i) for i, w in enumerate(sorted(WORDS)))
    n = 0
    for w in words:
        n = n << 11 | _WORD_INDEX[w]
    cs_bits = len(words) // 3
    entropy_bytes = (n >> cs_bits).to_bytes(len(words) * 4 // 3, "big")
    return hashlib.sha256(entropy_bytes).digest()[0] >> (8 - cs_bits) == n & ((1 << cs_bits) - 1)


def _seed_spans(low: str) -> Iterator[Span]:
    run: list[tuple[int, int]] = []
    gap = _GAP.get()

    def flush() -> Iterator[Span]:
        # enough distinct words ("word " * 4000 is not a seed phrase), or a phrase whose BIP-39 checksum holds
        # (one word said twelve times is no phrase, whatever its checksum: "word " * 12 happens to check out)
        distinct = len({low[s:e] for s, e in run})
        if len(run) >= _MIN_WORDS and (distinct >= 8 or distinct >= 2 and _bip39_checksum_ok([low[s:e] for s, e in run])):
            yield run[0][0], run[-1][1], "seed_phrase"

    for m in _WORD.get().finditer(low):
        s, e = m.start(), m.end()
        boundary_ok = (s == 0 or not low[s - 1].isalpha()) and (e == len(low) or not low[e].isalpha())
        if not boundary_ok:
            continue
        if m.group() in WORDS:
            if run and gap.fullmatch(low, run[-1][1], s) is None:
                yield from flush()
                run = []
            run.append((s, e))
        else:
            yield from flush()
            run = []
    yield from flush()


_ANY_WORD = Lazy(r"(?:[^\W\d_]|[\u0300-\u036f\u3099-\u309c])+")  # letters and combining marks (NFD accents, kana marks)


def _other_seed_spans(low: str) -> Iterator[Span]:
    """Seed phrases in a non-English BIP-39 list (Spanish, French, Japanese, …), accents typed or not: 12+ words of
    one list in a row, with the English rule's separators, enough distinct words or a checksum that holds."""
    # cheap gate (a set intersection in C): at least six distinct list words, as written or typed without accents
    tokens = low.replace(",", " ").split()
    if not low.isascii():
        tokens += [bip39.fold(t) for t in tokens]  # "mañana" typed decomposed, hangul as jamo
    if len(bip39.other_words().intersection(tokens)) < 6:
        return
    lists = bip39.other_lists()
    gap = _GAP.get()
    run: list[tuple[int, int, str]] = []
    langs: set[str] = set()

    def flush() -> Iterator[Span]:
        if len(run) < _MIN_WORDS:
            return
        for lang in langs:
            idx = [lists[lang][w] for _, _, w in run]
            if len(set(idx)) >= 8 or bip39.checksum_ok(idx):
                yield run[0][0], run[-1][1], "seed_phrase"
                return

    for m in _ANY_WORD.get().finditer(low):
        w = bip39.fold(m.group())
        in_langs = {lang for lang, words in lists.items() if w in words}
        if in_langs and run and (gap.fullmatch(low, run[-1][1], m.start()) is None or not (langs & in_langs)):
            yield from flush()
            run, langs = [], set()
        if in_langs:
            langs = langs & in_langs if run else in_langs
            run.append((m.start(), m.end(), w))
        else:
            yield from flush()
            run, langs = [], set()
    yield from flush()


def family_spans(text: str, low: str) -> Iterator[Span]:
    """Spans of ``text`` (``low`` its lower-cased form) that hold a secret of one of these families."""
    if text.count(" ") + text.count("\n") + text.count(",") + text.count("\u3000") >= _MIN_WORDS - 1:
        yield from _seed_spans(low)
        yield from _other_seed_spans(low)
    has_digit = any(c.isdigit() for c in text)
    if has_digit:
        for m in _IBAN.get().finditer(text):
            end = _iban_end(m.group())
            if end:
                yield m.start(), m.start() + end, "iban"
        for m in _ID.get().finditer(text):
            label = m.group(0)[: m.start("v") - m.start()].strip().lower()
            if _id_value_ok(m.group("v"), label):
                yield m.start("v"), m.end("v"), "national_id"
        if "." in text:
            for m in _CARD_DOTS.get().finditer(text):
                if luhn_ok(m.group().replace(".", "")):
                    yield m.start(), m.end(), "card_number"
        if "[" in text:
            for m in _BYTE_ARRAY.get().finditer(text):
                yield m.start(), m.end(), "private_key"
    for m in _B58_RUN.get().finditer(text):
        if _b58check_ok(m.group()):
            yield m.start(), m.end(), "private_key"
    for m in _HEX64.get().finditer(text):
        before = text[max(0, m.start() - 48) : m.start()]
        if _KEYISH.get().search(before) and not _HASHISH.get().search(before):
            yield m.start("h"), m.end("h"), "private_key"
    if "Private-" in text:
        for pattern in (_PPK, _PPK_MAC):
            for m in pattern.get().finditer(text):
                yield m.start("v"), m.end("v"), "private_key"
    if " key" in low:
        for m in _COMMENT_KEY.get().finditer(text):
            if "public" not in m.group(0)[: m.start("v") - m.start()].lower():
                yield m.start("v"), m.end("v"), "private_key"
    for m in _KV_EXTRA.get().finditer(text):
        if not placeholder_value(m.group("v")):
            yield m.start("v"), m.end("v"), "secret"
    if text.count(":") >= 4:
        for m in _PGPASS.get().finditer(text):
            v = m.group("v")
            if v.lower() not in ("password", "pass", "*") and not (":" in v and v.replace(":", "").isdigit()):
                # round 10: digits and colons are /etc/shadow's ageing fields ("daemon:*:19000:0:99999:7:::"), no password
                yield m.start("v"), m.end("v"), "password"
    if "</" in text:
        for m in _XML.get().finditer(text):
            yield m.start("v"), m.end("v"), "password"
    for m in _LABELLED.get().finditer(text):
        v = m.group("v").rstrip(".,;:")
        if _random_value(v) and "public" not in m.group("label").lower() and not public_value(v):
            yield m.start("v"), m.start("v") + len(v), "token"
    if "hook" in low:
        for m in _WEBHOOK.get().finditer(text):
            yield m.start("v"), m.end("v"), "token"
    if ":" in text:
        for m in _ASANA.get().finditer(text):
            yield m.start(), m.end(), "token"
    for m in _PREFIXED.get().finditer(text):
        yield m.start(), m.end(), "token"


# --- YAML block scalars: "password: >-" / "token: |" with the value on the indented lines below --------
_BLOCK = Lazy(
    r"(?m)^(?P<ind>[ \t]*)(?:-[ \t]+)?[\"']?[A-Za-z0-9_.-]*?(?:" + KEY_CORES + r")[A-Za-z0-9_.-]*[\"']?[ \t]*:[ \t]*"
    r"[|>][+-]?[1-9]?[+-]?[ \t]*\r?\n(?P<body>(?:(?P=ind)[ \t]+[^\s#][^\r\n]*(?:\r?\n|$)){1,40})",
    I | A | X,
)
_LINE = Lazy(r"[^\s][^\r\n]*?(?=[ \t]*(?:\r?\n|$))")


def block_scalar_spans(text: str) -> Iterator[Span]:
    """Each line of a YAML block scalar (``|``, ``>``, ``>-`` ...) whose key names a secret."""
    if "|" not in text and ">" not in text:
        return
    for m in _BLOCK.get().finditer(text):
        lines = list(_LINE.get().finditer(text, m.start("body"), m.end("body")))
        if not lines or PLACEHOLDER_RE.get().match(lines[0].group()):
            continue
        for line in lines:
            yield line.start(), line.end(), "password"


# --- secrets split across two lines ------------------------------------------------------------------
# the tail of one line and the head of the next (after a continuation, a closing/opening quote, a "+"
# or a short label such as "part 2:") that together make a token another rule recognises
_SPLIT = Lazy(
    r"(?P<a>[A-Za-z0-9_\-.+/=]{8,})[\"']?[ \t]*(?:\\|\+)?[ \t]*\r?\n"
    r"(?:[^\S\r\n]*[\"']|[^\r\n:]{0,24}:[ \t]*|[^\S\r\n]*)"
    r"(?P<b>[A-Za-z0-9_\-.+/=]{8,})",
    A,
)


_ASSIGNMENT = Lazy(r"[A-Za-z_][\w.-]*=")


def split_spans(text: str, detect: Callable[[str], bool], spans: Callable[[str], list[tuple[int, int, str]]]) -> Iterator[Span]:
    """Halves of a secret broken over two lines (each half is replaced; the text between them is kept)."""
    if "\n" not in text:
        return
    for m in _SPLIT.get().finditer(text):
        a, b = m.group("a"), m.group("b")
        if _ASSIGNMENT.get().match(b) and (a.endswith("=") or _ASSIGNMENT.get().match(a)):
            continue  # "API_KEY=" (empty or not), then the next assignment: two keys, not one value
        # "a" may be a token rule's prefix match already; "b" must then be a random-looking continuation;
        # what is found in the joined text must cross the seam ("SMTP_PASSWORD=" + "SMTP_USER=" is two keys)
        if not detect(b) and (not detect(a) or ("=" not in b and _random_value(b))) and any(s < len(a) < e for s, e, _ in spans(a + b)):
            yield m.start("a"), m.end("a"), "token"
            yield m.start("b"), m.end("b"), "token"
