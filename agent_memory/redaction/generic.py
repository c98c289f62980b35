"""Mechanisms meant to generalise to secrets no rule names, rather than one more family per format.

* a multilingual label lexicon (password, PIN, secret, key, token, recovery/backup/setup code, licence/serial,
  passport, ID/tax/social-security/driving-licence numbers … in about thirty languages and scripts) applied to
  prose ("la chiave API è X", "旅券番号：X"), to the next line when the label line ends in a colon, to table
  columns (CSV/TSV/Markdown headers) and to XML elements; how much value a label may take depends on its
  strength (a password label takes a short password, a "key" label only a random-looking token);
* a random-token detector: a run of 20+ token characters whose classes and entropy look machine-made
  (base62/base64 with both cases and digits, or long base36), unless it has a benign shape (a path, a
  camelCase identifier, a URL, a digest next to a hash word, a public key);
* shapes of hand-typed keys: grouped product keys (``XXXXX-XXXXX-…``) and armoured licence blocks;
* ``spared``: look-alikes every rule must leave alone (``sk_live_xxxx…`` placeholders, ``vault:`` references,
  ``h1:``/``sha256:`` digests, IBANs that fail their checksum).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agent_memory.redaction import cues
from agent_memory.redaction.base import I, Lazy
from agent_memory.redaction.families import iban_ok
from agent_memory.redaction.heuristics import b64_prose
from agent_memory.redaction.providers import entropy

Span = tuple[int, int, str]

# --- the label lexicon ------------------------------------------------------------------------------------------
# Strong labels: whatever password-like value follows them is a secret.
_PASSWORD_WORDS = (
    r"passwor[dt]\w*|passcode|passphrase|kennwort\w*|mot\s+de\s+passe|contrase(?:ñ|n)a|senha|has(?:ł|l)o|heslo|"
    r"wachtwoord|l(?:ö|o)senord\w*|passord\w*|adgangskode|salasana\w*|jelszó|parol[aă]|(?:ş|s)ifre\w*|"
    r"lozinka|geslo|\bparol\b|requirepass|masterauth|kata\s+sandi\w*|пароль|пароля|κωδικός(?:\s+πρόσβασης)?|συνθηματικό|كلمة\s+(?:المرور|السر)|סיסמ[הא]|"
    r"पासवर्ड|कूटशब्द|パスワード|暗証番号|密码|密碼|口令|비밀번호|암호|mật\s+khẩu|kata\s+sandi|รหัสผ่าน|"
    r"\bpin(?:\s+code)?\b|\bpwd\b|\bpw\b|"
    r"(?:alarm|door|gate|garage|keypad|safe|entry|unlock|bike\s+lock|lock|locker)(?:\s+(?:keypad|lock))?\s+(?:code|combination|pin)|"
    r"\bcombination\b|"
    r"\bpuk\b|пин[\s-]?код\w*|رمز\s+\S+|הקוד\S*|รหัส\S*|코드"
)
# Key-ish labels: they take a random-looking token (or a grouped key).
_KEY_WORDS = (
    r"\bsecret\w*|\btoken\b|\bapi[\s_-]?key\b|\bkey\b|\bkeys\b|access\s+key|private\s+key|client\s+secret|"
    r"schlüssel|geheim\w*|\bclé\b|\bclef\b|\bclave\b|\bchave\b|\bchiave\b|sleutel|nyckel\w*|\bnøgle\b|"
    r"\bavain\b|\bklucz\b|klíč|\banahtar\b|ключ\w*|токен|κλειδί|مفتاح|מפתח|कुंजी|キー|鍵|トークン|シークレット|"
    r"密钥|密鑰|令牌|秘钥|키|토큰|\bkhóa\b|\bkunci\b|"
    r"recovery\s+(?:code|key)s?|backup\s+codes?|setup\s+key|two[\s-]step|\b2fa\b|\bmfa\b|\btotp\b|\botp\b|"
    r"zwei-faktor\S*|authenticator|wiederherstellung\S*|"
    r"licen[cs]e(?:\s+key)?|lizenz\w*|licencia|licença|licenza|serial(?:\s+(?:number|key))?|seriennummer|"
    r"n(?:ú|u)mero\s+de\s+s(?:é|e)rie|num(?:é|e)ro\s+de\s+s(?:é|e)rie|product\s+key|シリアル|序列号|"
    r"\bsalt\b|credential\w*|\bcookie\b|session\s*id"
)
# Identity labels: they take an identifier (digits, or letters mixed with digits).
_ID_WORDS = (
    r"passport\w*|reisepass\w*|passeport|pasaporte|passaporto|paspoort|паспорт\w*|旅券|护照|護照|여권|पासपोर्ट|"
    r"جواز\s+السفر|driv(?:er|ing)['’]?s?[\s_-]+licen[cs]e|dl[_\s-]?(?:number|no)\b|führerschein\w*|permis\s+de\s+conduire|"
    r"permiso\s+de\s+conduc\w*|carteira\s+de\s+motorista|patente\s+di\s+guida|rijbewijs\w*|免許証\w*|驾驶证|驾照|면허\w*|"
    r"social\s+security|\bssn\b|\bsin\b|\bnas\b|assurance\s+sociale|sozialversicherung\w*|seguridad\s+social|"
    r"identifikationsnummer|steuer[\s-]?id|tax\s+(?:id|number)|\btin\b|\bnif\b|\bnie\b|\bdni\b|\bcpf\b|\bnir\b|"
    r"id[\s_-]?(?:number|no|nr)\b|identity\s+(?:number|card)|national\s+id\w*|personalausweis\w*|ausweis\w*|"
    r"carte\s+d['’]identité|documento\s+de\s+identidad|personnummer|fødselsnummer|henkilötunnus|aadhaar|आधार|"
    r"sort[\s_-]?code|\bbsb\b|身份证\w*|マイナンバー|個人番号|주민등록번호|account[\s_-]+(?:number|no)\b|kontonummer|num(?:é|e)ro\s+de\s+compte|"
    r"n(?:ú|u)mero\s+de\s+cuenta|card[\s_-]*(?:number|no)?\b|kartennummer|numéro\s+de\s+carte"
)
_PW_LABEL = Lazy(_PASSWORD_WORDS, I)
_LABEL = Lazy(rf"(?P<pw>{_PASSWORD_WORDS})|(?P<key>{_KEY_WORDS})|(?P<id>{_ID_WORDS})", I)
# A value candidate: a run without spaces, quotes, brackets or CJK punctuation.
_VALUE = Lazy(r"[^\s\"'`()\[\]<>{}，。：；、（）「」【】|*]+")
_GROUPED = Lazy(r"(?<![\w-])[A-Za-z0-9]{2,8}(?:[ -][A-Za-z0-9]{2,8}){1,9}(?![\w-])")
# words in a label's line that end the search for its value (another sentence, a negation of sharing …)
_STOP = frozenset("and und et y e en och og ja и و but aber mais pero ma maar".split())


# round 13: a copula before a grouped value is no group of it ("the safe combination is 12-34-56")
_GROUP_COPULA = Lazy(r"(?:is|was|ist|war|est|es|era|är|er|are)[ -]", I)


def _letters_only(v: str) -> bool:
    return v.replace("-", "").replace("_", "").isalpha()


_NOT_PW = Lazy(r"[./~$%{!].*|.*[=:]|.*(?:==|://).*|[A-Za-z_]\w*(?:\.\w+)+\(?\)?|\w+=.*|(?-i:[a-z]+\d?[a-z]+)", I)


def _pw_value(v: str) -> bool:
    """A password after a password label: 4+ characters, not a plain word, not a reference or placeholder."""
    if len(v) < 4 or len(v) > 128 or _placeholder(v) or _NOT_PW.get().fullmatch(v):
        return False
    if re.fullmatch(r"v\d+(?:\.\d+)+", v):
        return False  # "the password was v1.2": a version
    if _PW_LABEL.get().search(v):
        return False  # "is 1Password": the value names the label
    if cues.cjk_clause(v):
        return False  # "パスワードは8文字以上で設定してください": a rule written as a clause, not a value
    if _letters_only(v) and not (any(c.isupper() for c in v[1:]) and any(c.islower() for c in v)):
        return False
    return any(c.isalnum() for c in v)


def _slug(v: str) -> bool:
    """Lowercase words joined by hyphens or underscores, perhaps ending in a short hex or number: a record id, a file
    or page name (``2026-11-27-the-key-to-the-roadmap-ab12cd34``), not a key, even right after a key label."""
    pieces = re.split(r"[-_]", v.strip("-_"))
    if len(pieces) < 3 or not all(re.fullmatch(r"[a-z]+|\d+|[a-z]{1,3}\d{1,3}|\d{1,4}[a-z]{1,3}", p) for p in pieces[:-1]):
        return False
    if not re.fullmatch(r"[a-z]+|\d+|[0-9a-f]{4,12}", pieces[-1]):
        return False
    return sum(1 for p in pieces if len(p) >= 3 and p.isalpha() and re.search(r"[aeiouy]", p) is not None) >= 2


def _random_enough(v: str) -> bool:
    """After a key label a key may be plainer than a free-standing random token: upper- or lower-case base36 or
    base32 of 16+ characters with digits spread through it (``OLGOD853JQH3JMYZ…``, ``az9lpefterung6dm…``)."""
    if len(v) < 16 or len(v) > 200 or not v.isalnum() or v.isdigit() or v.isalpha():
        return False
    if not (v.isupper() or v.islower()):
        return False
    digit_runs = re.findall(r"\d+", v)
    return len(digit_runs) >= 3 and max(len(w) for w in re.findall(r"[A-Za-z]+", v)) <= 14


def _key_value(v: str) -> bool:
    """A key after a key label: a random-looking token of 8+ characters (digits and letters)."""
    if (
        len(v) < 8
        or _placeholder(v)
        or "://" in v
        or "&" in v
        or "=" in v.rstrip("=")
        or v.count(".") >= 2
        and not any(c.isupper() for c in v)
    ):
        return False
    if re.fullmatch(r"(?:[0-9A-Fa-f]{2}:){5,}[0-9A-Fa-f]{2}", v) or _PUBLIC_ID.get().match(v):
        return False
    if passphrase(v):
        return True  # "key = dove-silent-unfold-reason14": words with digits glued on, a passphrase
    if _slug(v):
        return False
    if _random_enough(v):
        return True
    segments = len(re.findall(r"[A-Z]+|[a-z]+|\d+|[^A-Za-z0-9]+", v))
    if segments * 10 < len(v) * 3:
        return False
    digits = sum(c.isdigit() for c in v)
    letters = sum(c.isalpha() for c in v)
    if digits == 0 or letters == 0:
        return len(v) >= 16 and letters == 0 and digits == 0 and entropy(v) >= 3.0
    if re.fullmatch(r"v?\d+(?:\.\d+)+\S*", v):  # a version
        return False
    if len(v) < 16:
        return digits >= 2 and letters >= 2 and entropy(v) >= 2.8
    return entropy(v) >= 3.0


def _id_value(v: str) -> bool:
    """An identifier after an identity label: 6+ digits, or 6+ characters mixing letters and digits."""
    core = v.replace("-", "").replace(".", "").replace(" ", "").replace("/", "")
    if len(core) < 6 or len(core) > 24 or not core.isalnum() or _placeholder(v):
        return False
    digits = sum(c.isdigit() for c in core)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}|\d{1,2}[./]\d{1,2}[./]\d{2,4}", v):  # a date
        return False
    return digits >= 6 or digits >= 2 and len(core) - digits >= 1


_CHECKS = {"pw": _pw_value, "key": _key_value, "id": _id_value}
_PLACEHOLDER = Lazy(
    r"(?:\$\{?[A-Za-z_]\w*\}?|%[A-Za-z_]\w*%|\{\{.*\}\}|<[^>]*>|\[?redacted\]?|(?:your|my|the|some|enter|insert)[-_].*|.*[-_](?:here|placeholder)"
    r"|[xX*•.#]{4,}|(?:vault|ssm|secretsmanager|awssm|op|env|file|keychain|sops|kms)://?\S*|\$(?:1|2[aby]?|5|6|y|argon2\w*|pbkdf2[\w-]*|scrypt)\$.*|changeme|replace[-_]?me|redacted|none|null|"
    r"true|false|required|optional|example\S*|\*+)",
    I,
)


def _placeholder(v: str) -> bool:
    return _PLACEHOLDER.get().fullmatch(v) is not None or "[REDACTED:" in v


_CONNECTOR = Lazy(
    r"[:：=→]|\b(?:is|are|was|est|este|ist|lautet|är|er|es|é|è|era|wynosi|je|jest|on|это|là|adalah|ialah|nº|no\.?|nr\.?)(?!\w)|"
    r"هي|είναι|是|为|為|は|는|은|है|היא|הוא|คือ",
    I,
)
_LINE_END = Lazy(r"[:：]\s*$|(?:\bis|\best|\bist|\blautet|\bär|\bé|\bè)\s*:?\s*$", I)


def _bangs(raw: str, kept: int) -> int:
    """How many "!" follow a password value's first ``kept`` characters: "Girasole42!" ends in its "!" (a "." or "?"
    after a value ends the sentence; a "!" right after it is typed as part of the password as often as not)."""
    tail = raw[kept:]
    return len(tail) - len(tail.lstrip("!"))


def _values_after(text: str, pos: int, line_end: int, strength: str) -> Iterator[tuple[int, int]]:
    """The value a label at ``pos`` names: the first acceptable token in the rest of its line (or the next lines)."""
    check = _CHECKS[strength]
    rest = text[pos:line_end]
    if strength != "pw" or True:
        g = _GROUPED.get().search(rest)
        if g is not None and g.start() <= 40 and _grouped_ok(g.group(), strength):
            cop = _GROUP_COPULA.get().match(g.group())
            if cop is None or _grouped_ok(g.group()[cop.end() :], strength):
                yield pos + g.start() + (cop.end() if cop else 0), pos + g.end()
                return
    if strength == "pw":
        c = _CONNECTOR.get().search(rest, 0, 60)
        if c is None:
            # no connector: "kata sandinya MeritFaith2374@" takes a value right after the label only if it is strong
            first = _VALUE.get().match(rest.replace("\t", " "), len(rest) - len(rest.lstrip(" \t")))
            if first is not None and rest[: first.start()].strip() == "":
                v = first.group().rstrip(".,;!?")
                if _strong_after_label(v):
                    yield pos + first.start(), pos + first.start() + len(v) + _bangs(first.group(), len(v))
            return
        rest = " " * c.end() + rest[c.end() :]
        first = _VALUE.get().search(rest)
        if first is not None:
            v = first.group().lstrip(":：=→>-~,").rstrip(".,;!?")
            if v:
                if _pw_value(v):
                    kept = len(first.group().rstrip(".,;!?"))
                    e = first.end() - (len(first.group()) - kept)
                    yield pos + e - len(v), pos + e + _bangs(first.group(), kept)
                return
    words = 0
    for m in _VALUE.get().finditer(rest):
        v = m.group()
        s, e = m.start(), m.end()
        lead = len(v) - len(v.lstrip(":：=→>-~@,"))
        v = v[lead:]
        s += lead
        while v and v[-1] in ".,;:!?—" and strength != "pw" or v.endswith((".", ",", ";")) and len(v) > 1:
            v = v[:-1]
            e -= 1
        if strength != "pw" and "=" in v.rstrip("="):
            cut = v.index("=") + 1
            v, s = v[cut:], s + cut
        if not v:
            continue
        if check(v):
            yield pos + s, pos + e
            return
        if v.lower() in _STOP or m.start() > 80:
            return
        words += 1
    if _LINE_END.get().search(rest) or not rest.strip():
        # "the new key for staging is:\n\n    VALUE": the first non-empty line below
        nxt = line_end
        for _ in range(2):
            if nxt >= len(text):
                return
            end = text.find("\n", nxt + 1)
            end = len(text) if end < 0 else end
            line = text[nxt + 1 : end]
            if line.strip():
                stripped = line.strip()
                off = nxt + 1 + line.index(stripped)
                if " " not in stripped and check(stripped.strip("`\"'")):
                    q = len(stripped) - len(stripped.lstrip("`\"'"))
                    yield off + q, off + len(stripped.rstrip("`\"'"))
                elif strength != "id" and _GROUPED.get().fullmatch(stripped) and _grouped_ok(stripped, strength):
                    yield off, off + len(stripped)
                return
            nxt = end


_CODEISH = Lazy(
    r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+(?:\(.*)?|[A-Za-z_]\w*\(.*|v?\d+(?:\.\d+)+\S*|\d{4}-\d\d-\d\d\S*|[\w.+-]+@[\w-]+\.[\w.]+"
)


def _strong_value(v: str) -> bool:
    """A value a credential name binds, random or typed by hand: 8+ characters of three character classes (or two with
    digits and 12+ characters), not code, a version, a date, an e-mail, a path or a slug."""
    if not 8 <= len(v) <= 200 or any(c.isspace() for c in v) or _CODEISH.get().fullmatch(v) or v.startswith(("/", "~/", "./")):
        return False
    if re.fullmatch(r"[A-Za-z_][\w.-]*=\w*", v) or _PUBLIC_ID.get().match(v):  # "auto_error=False", "pk.…"
        return False
    lower = any(c.islower() for c in v)
    upper = any(c.isupper() for c in v)
    digit = sum(c.isdigit() for c in v)
    symbol = any(not c.isalnum() for c in v)
    classes = lower + upper + (digit > 0) + symbol
    if classes >= 3 and (digit or symbol and upper and lower):
        return not re.fullmatch(r"[A-Za-z]+(?:[-_][A-Za-z]+)+", v)
    return classes == 2 and len(v) >= 12 and digit >= 2 and not re.fullmatch(r"[a-z]+(?:[-_.][a-z0-9]+)+", v)


# A passphrase made of words: three or more lowercase words joined by one separator, with digits at the end
# ("dove-silent-unfold-reason14"), or four or more words.
_PASSPHRASE = Lazy(r"[a-z]{3,9}(?P<sep>[-_.])[a-z]{3,9}(?:(?P=sep)[a-z]{3,9}){1,6}\d{1,4}[!@#$%&*?]?")


def passphrase(v: str) -> bool:
    """Three or more lowercase words joined by one separator, the digits glued to the last word
    (``dove-silent-unfold-reason14``); a slug or record id puts its number after a separator."""
    return _PASSPHRASE.get().fullmatch(v) is not None


def _strong_after_label(v: str) -> bool:
    """A value right after a password label with nothing between: typed by hand with digits and three classes, or a
    passphrase of words ending in digits."""
    return v.isascii() and any(c.isdigit() for c in v) and (_strong_value(v) or passphrase(v))


def _grouped_ok(v: str, strength: str) -> bool:
    """A value written in groups ("6888 7189 5812", "inur 26c7 keqy ueez …", "9XKO-ZMBE-WR7P-QLOF")."""
    groups = re.split(r"[ -]", v)
    if len(groups) < 2 or len({len(g) for g in groups[:-1]}) > 1 or len(groups[-1]) > len(groups[0]):
        return False
    if sum(any(c.isdigit() for c in g) for g in groups) * 2 < len(groups):
        return False
    core = "".join(groups)
    digits = sum(c.isdigit() for c in core)
    if strength == "id":
        return digits >= 6 and 8 <= len(core) <= 20
    if re.search(r"[a-z]", core) and re.search(r"[A-Z]", core):
        return False  # prose words ("Ops Admin")
    if len(groups) < 3 and not all(any(c.isdigit() for c in g) for g in groups):
        return False
    return len(core) >= 8 and digits >= 2


_HEADER_SEPS = (("|", 2), ("\t", 1), (",", 2), (";", 2))


# The first three letters of every ASCII label (and the labels shorter than that): an ASCII text is searched only at
# the starts of words that begin so (the whole lexicon at every position costs 0.2-0.4 ms per 300 characters).
_STEMS = frozenset(
    "pas pwd pin ken mot con sen has hes wac los adg sal jel par sif loz gel kat sec tok api key acc pri cli sch geh cle "
    "cla cha chi sle nyc ava klu ana kun rec bac set two 2fa mfa tot otp zwe aut wie lic liz ser num pro cre coo ses rei "
    "dri dl_ per car rij soc ssn sin nas ass soz seg ide ste tax tin nif nie dni cpf nir id_ nat aus doc hen aad kon kar "
    "ala doo gat gar saf ent unl bik loc puk com req mas sor bsb".split()
)
_SHORT = frozenset("pw id dl".split())
_WORD = Lazy(r"\w+")


def _labels(text: str) -> Iterator[re.Match[str]]:
    label = _LABEL.get()
    if not text.isascii():
        yield from label.finditer(text)
        return
    low = text.lower()
    after = 0
    for w in _WORD.get().finditer(low):
        s = w.start()
        if s < after:
            continue
        word = w.group()
        if word[:3] in _STEMS or word in _SHORT:
            m = label.match(text, s)
            if m is not None:
                after = m.end()
                yield m


_POSTAL_PIN = Lazy(r"pin", I)
_POSTAL = Lazy(r"postal|post\s+office|pincode|\bzip\b|delivery\s+address", I)


def label_spans(text: str) -> Iterator[Span]:
    """Values named by a label of the lexicon in prose, chat, CJK text and after a label line."""
    for m in _labels(text):
        strength = m.lastgroup or "key"
        line_end = text.find("\n", m.end(), m.end() + 300)
        line_end = min(len(text), m.end() + 300) if line_end < 0 else line_end
        line_start = text.rfind("\n", max(0, m.start() - 300), m.start()) + 1 or max(0, m.start() - 300)
        if _is_header(text[line_start:line_end]):
            continue
        before = text[max(line_start, m.start() - 1) : m.start()]
        after = text[m.end() : m.end() + 1]
        if before == ":" and after == "@":
            continue  # "postgres://user:password@host": the word is the placeholder
        if before and (before in "_$%{</.=" or before.isalnum() and before.isascii() and m.group().isascii()) or after in ("}", "%", ">"):
            continue
        if before in "\"'" and after in "\"'" and after and text[m.end() + 1 : m.end() + 2] != ":":
            continue
        if strength != "pw" and _HASH_CONTEXT.get().search(text, max(line_start, m.start() - 200), min(line_end, m.end() + 200)):
            continue
        if "REDACTED:" in text[max(0, m.start() - 12) : m.start()]:
            continue  # a marker's kind
        if _POSTAL_PIN.get().match(m.group()) and _POSTAL.get().search(text, line_start, line_end):
            continue  # India's "PIN code" is a postal code ("PIN code (Indian postal) is 560034")
        card = re.search(r"card|kart|carte", m.group(), I) is not None
        for s, e in _values_after(text, m.end(), line_end, strength):
            digits = re.sub(r"[^0-9]", "", text[s:e])
            if card and digits.isdigit() and 13 <= len(digits) <= 19 and not _luhn(digits):
                continue  # a card number failing its check digit is a look-alike
            yield s, e, "password" if strength == "pw" else ("national_id" if strength == "id" else "secret")


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _is_header(line: str) -> bool:
    return any(line.count(sep) >= least for sep, least in _HEADER_SEPS)


def _cells(line: str, sep: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = 0
    for part in line.split(sep):
        s, e = pos, pos + len(part)
        while s < e and line[s] in " \t`*\"'":
            s += 1
        while e > s and line[e - 1] in " \t`*\r\"'":
            e -= 1
        out.append((s, e))
        pos += len(part) + len(sep)
    return out


_COLUMN_WORD = Lazy(r"[a-z]+|[A-Z]+(?![a-z])|[A-Z][a-z]*|\d+")


def _column_strength(name: str) -> str | None:
    words = " ".join(_COLUMN_WORD.get().findall(name.replace("_", " ").replace("-", " "))).lower()
    if not name.isascii():
        words = name.strip().lower()  # パスワード, Passwort in Cyrillic or Arabic headers
    if re.fullmatch(r"(?:bank[ _-]?)?(?:account|acct|konto|compte|cuenta|conta)", words):
        return "id"  # an account column under a payee (its values must still be 6+ digits)
    if not words or re.search(
        r"\b(?:name|type|id|date|hint|policy|length|rotated|expires|created|hash|fingerprint|public|routing)$", words
    ):
        return None
    m = _LABEL.get().search(words)
    return m.lastgroup if m is not None else None


def table_spans(text: str) -> Iterator[Span]:
    """Cells under a header cell the lexicon names (CSV, TSV, Markdown), in the rows below it."""
    pos = 0
    n = len(text)
    while pos < n:
        end = text.find("\n", pos)
        end = n if end < 0 else end
        line = text[pos:end]
        nxt_end = text.find("\n", end + 1) if end < n else -1
        below = text[end + 1 : nxt_end if nxt_end >= 0 else n] if end < n else ""
        sep = next((s for s, least in _HEADER_SEPS if line.count(s) >= least and below.count(s) == line.count(s)), "")
        if not sep:
            pos = end + 1
            continue
        header = [line[s:e] for s, e in _cells(line, sep)]
        cols = [(k, st) for k, c in enumerate(header) if (st := _column_strength(c)) is not None]
        row_pos = end + 1
        if sep == "|" and re.fullmatch(r"[\s|:-]+", below):
            row_pos = nxt_end + 1 if nxt_end >= 0 else n
        while cols and row_pos < n:
            r_end = text.find("\n", row_pos)
            r_end = n if r_end < 0 else r_end
            row = text[row_pos:r_end]
            if row.count(sep) != line.count(sep) or not row.strip():
                break
            cells = _cells(row, sep)
            for k, st in cols:
                if k < len(cells):
                    s, e = cells[k]
                    v = row[s:e]
                    if (
                        _CHECKS[st](v)
                        or st == "pw"
                        and _strong_after_label(v)
                        or _GROUPED.get().fullmatch(v)
                        and _grouped_ok(v, "pw")
                        or st == "id"
                        and re.fullmatch(r"[\d -]{8,23}", v)
                        and _id_value(v)
                    ):
                        yield row_pos + s, row_pos + e, "password" if st == "pw" else "secret"
            row_pos = r_end + 1
        pos = end + 1


# --- XML elements, headers, CLI ------------------------------------------------------------------------------------
_XML_SECRET = Lazy(
    r"<(?P<tag>[\w:.-]*(?:password|passwd|secret|token|apikey|privatekey|passphrase|credential)[\w:.-]*)(?:\s[^<>]*)?>"
    r"\s*(?:<(?:value|string|data)>\s*)?(?P<v>[^<>\s][^<>\r\n]{2,200}?)\s*<",
    I,
)
_AUTH_HEADER = Lazy(r"authorization\s*:\s*(?:(?:token|bearer|basic|apikey|key|sso-key|otp)\s+)?(?P<v>[^\s'\"]{8,400})", I)
_USER_PASS = Lazy(r"(?<!\S)(?:-u|--user)[ \t]+[^\s:'\"]+:(?:'(?P<sq>[^'\r\n]+)'|\"(?P<dq>[^\"\r\n]+)\"|(?P<bare>[^\s'\"]{4,}))")
_AUTH_PLAIN = Lazy(r"\bAUTH[ \t]+(?:PLAIN|LOGIN|XOAUTH2)[ \t]+(?P<v>[A-Za-z0-9+/]{12,}={0,2})")
_NETSCAPE = Lazy(r"(?m)^[^\t\r\n#]+\t(?:TRUE|FALSE)\t[^\t\r\n]*\t(?:TRUE|FALSE)\t\d+\t[^\t\r\n]+\t(?P<v>[^\t\r\n]{8,})$")
_ARMOUR = Lazy(r"-{3,}[ \t]*BEGIN[ \t]+(?P<what>[A-Z0-9 ]{0,40}?)[ \t]*-{3,}")
_ARMOURED = Lazy(r"LICEN[CS]E|SECRET|TOKEN|\bKEY\b")
_PRODUCT_KEY = Lazy(r"(?<![\w-])[A-Z0-9]{4,6}(?:-[A-Z0-9]{4,6}){3,7}(?![\w-])")
_OTP_CALL = Lazy(r"\b(?:totp|hotp|otp)\w*\s*\(\s*[\"'](?P<v>[A-Z2-7]{16,}=*)[\"']", I)


def structure_spans(text: str, low: str) -> Iterator[Span]:
    """Secrets in XML elements named for them, authorization headers, ``-u user:pass``, SMTP AUTH, cookie files,
    armoured licence blocks, product keys and OTP seeds passed to a TOTP constructor."""
    if "<" in text:
        for m in _XML_SECRET.get().finditer(text):
            v = m.group("v").strip()
            if not _placeholder(v) and not re.fullmatch(r"true|false|\d{1,3}", v, I):
                yield m.start("v"), m.start("v") + len(v), "password"
    if "authorization" in low:
        for m in _AUTH_HEADER.get().finditer(text):
            v = m.group("v")
            if not _placeholder(v) and not v.startswith("$"):
                yield m.start("v"), m.end("v"), "bearer_token"
    if "-u" in text:
        for m in _USER_PASS.get().finditer(text):
            g = "sq" if m.group("sq") else "dq" if m.group("dq") else "bare"
            v = m.group(g)
            if v and not _placeholder(v) and not v.startswith("$") and "@" not in v.split("/")[0][-1:]:
                yield m.start(g), m.end(g), "password"
    if "auth" in low:
        for m in _AUTH_PLAIN.get().finditer(text):
            yield m.start("v"), m.end("v"), "basic_auth"
    if "\t" in text:
        for m in _NETSCAPE.get().finditer(text):
            yield m.start("v"), m.end("v"), "token"
    if "begin" in low:
        end = -1
        for m in _ARMOUR.get().finditer(text):
            what = m.group("what")
            if "PUBLIC" in what or "PRIVATE" in what or _ARMOURED.get().search(what) is None:
                continue  # public blocks stay; private keys have their own rule
            if end < m.end():  # the next END marker, found once for all the headers before it (linear)
                end = text.find("END", m.end())
                end = len(text) if end < 0 else end
            if end - m.end() > 8000:
                continue
            body_start = m.end()
            for line in re.finditer(r"[^\r\n]+", text[body_start:end]):
                chunk = line.group().strip().rstrip("-").strip()
                if re.fullmatch(r"(?:[0-9A-Fa-f]{4,}[ \t]*){2,}|[A-Za-z0-9+/=]{24,}", chunk):
                    s = body_start + line.start() + line.group().index(chunk)
                    yield s, s + len(chunk), "secret"
    if "-" in text:
        for m in _PRODUCT_KEY.get().finditer(text):
            v = m.group()
            if sum(c.isdigit() for c in v) >= 2 and sum(c.isalpha() for c in v) >= 4 and not re.fullmatch(r"[0-9A-F-]+", v):
                yield m.start(), m.end(), "secret"
    if "otp" in low:
        for m in _OTP_CALL.get().finditer(text):
            yield m.start("v"), m.end("v"), "secret"


# --- lists of codes, secrets in URLs ----------------------------------------------------------------------------------
_CODE_HEAD = Lazy(
    r"(?im)^[^\r\n]{0,60}\b(?:recovery|backup|one[- ]time|scratch|emergency|wiederherstellungs|sauvegarde|respaldo|recupera)\w*[ \t]+(?:codes?|keys?|tokens?)\b[^\r\n]{0,60}$"
)
_CODE_LINE = Lazy(r"[ \t]*(?:[-*•]|\d{1,2}[.)])?[ \t]*(?P<v>[A-Za-z0-9]{3,10}(?:[ -][A-Za-z0-9]{3,10}){0,3})[ \t]*,?[ \t]*")
_CODE_LIST = Lazy(
    r"(?<![\w-])[A-Z0-9]{6,12}(?:,[ \t]*[A-Z0-9]{6,12}){3,}(?![\w-])|(?<![\w-])[a-z0-9]{6,12}(?:,[ \t]*[a-z0-9]{6,12}){3,}(?![\w-])"
)
_HOOK_URL = Lazy(
    r"https?://[^\s/\"'<>]{0,100}(?:hook|trigger|ifttt|zapier)[^\s\"'<>]{0,400}|https?://[^\s\"'<>]{0,200}?/(?:hooks?|webhooks?\w*|trigger|key|keys|token)/[^\s\"'<>]{0,400}",
    I,
)


def list_spans(text: str) -> Iterator[Span]:
    """Codes listed under a "recovery/backup codes" line, and comma lists of same-shape random codes."""
    for h in _CODE_HEAD.get().finditer(text):
        pos = h.end() + 1
        while pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            m = _CODE_LINE.get().fullmatch(text, pos, end)
            if m is None:
                break
            v = m.group("v")
            if any(c.isdigit() for c in v):
                yield m.start("v"), m.end("v"), "secret"
            pos = end + 1
    for m in _CODE_LIST.get().finditer(text):
        codes = [c.strip() for c in m.group().split(",")]
        mixed = sum(any(c.isdigit() for c in x) and any(c.isalpha() for c in x) for x in codes)
        if len({len(c) for c in codes}) == 1 and mixed * 2 >= len(codes) and all(entropy(c) >= 2.5 for c in codes):
            yield m.start(), m.end(), "secret"


def url_spans(text: str) -> Iterator[Span]:
    """Random-looking path segments of webhook and trigger URLs (the segment is the credential)."""
    if "://" not in text:
        return
    for m in _HOOK_URL.get().finditer(text):
        for seg in re.finditer(r"[A-Za-z0-9_-]{20,}", m.group()):
            v = seg.group()
            digits = sum(c.isdigit() for c in v)
            if re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", v):
                continue
            if digits >= 2 and any(c.isalpha() for c in v) and entropy(v) >= 3.5 and not _CAMEL.get().fullmatch(v):
                yield m.start() + seg.start(), m.start() + seg.end(), "secret"


# --- random tokens ---------------------------------------------------------------------------------------------------
_RUN = Lazy(r"(?<![A-Za-z0-9+/=_\-.~$])[A-Za-z0-9+/_\-.~$]{20,}+={0,2}")
_PUBLIC_ID = Lazy(
    r"(?:phc_|chatcmpl-|req_|msg_|run_|thread_|asst_|file-|xpub|ypub|zpub|tpub|vpub|npub1|pk_(?:live|test)_|pk\.|price_|prod_|pi_|cus_|sub_|in_|ch_|evt_|acct_|seti_|pm_|txn_|0x[0-9a-fA-F]{40}|"
    r"(?![0-9a-fA-F]+$)[13][1-9A-HJ-NP-Za-km-z]{25,34}$|(?:tz[1-4]|KT1)[1-9A-HJ-NP-Za-km-z]{33}$|bc1[02-9ac-hj-np-z]{8,87}$)"
)
_PUBLIC_ARMOUR = Lazy(r"-{3,}[ \t]*BEGIN[ \t]+[A-Z0-9 ]*(?:PUBLIC|CERTIFICATE)[A-Z0-9 ]*-{3,}[\s\S]*?(?:-{3,}[ \t]*END[^\r\n]*|$)")
# round 7: a short run of one token alphabet (base62, or nanoid's base64url without "+" "/" "=")
_UNCUED = Lazy(r"[A-Za-z0-9_-]{20,27}")
_ID_BEFORE = Lazy(r"(?:\b|_)(?:id|ids|uuid|ksuid|ulid|sid|oid|name)[ \t]*[=:][ \t]*[\"']?$", I)
_FILE_EXT = Lazy(r".*\.(?:js|mjs|css|map|gz|json|png|jpe?g|gif|svg|html?|txt|log|tar|zip|py|go|rs|woff2?)$", I)
# WIF / extended keys: their own rule takes them when the base58check holds (a bad checksum is a look-alike)
_BASE58_KEY = Lazy(r"[5KLc9][1-9A-HJ-NP-Za-km-z]{50,51}|[xt]prv[1-9A-HJ-NP-Za-km-z]{100,108}")
_BASE64_TEXT = Lazy(r"[A-Za-z0-9+/_-]+={0,2}")
_HASH_CONTEXT = Lazy(
    r"sha(?:\d+|sum|(?![a-z]))|md5|hash|digest|checksum|integrity|etag|commit|fingerprint|nonce|\bh1:|\bsum\b|\bpub(?:lic)?\b|ssh-(?:rsa|ed25519|dss)|"
    r"public|sitekey|\bkid\b|x5t|thumbprint|site[-_ ]key|publishable|wallet|donat|ecdsa-sha2|\bcid\b|\bipfs\b|\bblob\b|\bsri\b|\btx\b|\baddress\b|\bdata:image|\btrace|\bspan\b|\brequest[\s_-]?id|\bcorrelation",
    I,
)
_CAMEL = Lazy(r"(?>[A-Z]?[a-z]{2,}+|[A-Z]{2,}+(?![a-z])|\d{1,4}+(?!\d)|[_\-.])++")


def _decodes_to_text(v: str) -> bool:
    """Base64 of readable text or JSON (a JWT header, an encoded sentence): public, not a key."""
    if not _BASE64_TEXT.get().fullmatch(v):
        return False
    import base64
    import binascii

    try:
        raw = base64.urlsafe_b64decode(v.replace("+", "-").replace("/", "_") + "=" * (-len(v) % 4))
    except (binascii.Error, ValueError):
        return False
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return decoded.isprintable() and (" " in decoded or decoded.startswith("{"))


def _random_run(v: str) -> bool:
    """Machine-made: the classes and entropy of base62/base64/base36 randomness, not a word, path or identifier."""
    core = v.strip("=._-~$")
    if len(core) < 20 or _PUBLIC_ID.get().match(core) or _FILE_EXT.get().fullmatch(core):
        return False
    if max(len(r) for r in re.split(r"[^A-Za-z0-9]+", core)) < 16:
        return False  # pieces joined by separators: a path, a pod name, a slug
    if re.fullmatch(r"0x[0-9a-fA-F]+", core) or _decodes_to_text(core) or _BASE58_KEY.get().fullmatch(core):
        return False
    if "/" in core and all(
        re.fullmatch(r"[A-Za-z0-9_.~-]*", p) and (not p or not any(c.isdigit() for c in p) or len(p) < 6) for p in core.split("/")
    ):
        return False  # a path
    if re.fullmatch(r"[0-9a-fA-F]+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", core):
        return False  # hex and UUIDs: hashes and ids unless labelled
    if _CAMEL.get().fullmatch(core):
        return False  # camelCase / snake_case / CONSTANT names, versions
    upper = sum(c.isupper() for c in core)
    lower = sum(c.islower() for c in core)
    digits = sum(c.isdigit() for c in core)
    segments = len(re.findall(r"[A-Z]+|[a-z]+|\d+|[^A-Za-z0-9]+", core))
    if segments * 10 < len(core) * 3:
        return False  # long runs of one class: words glued together
    e = entropy(core)
    if upper >= 3 and lower >= 3 and digits >= 2:
        return e >= 3.8
    if upper == 0 and lower >= 8 and digits >= 5 and len(core) >= 24:
        return e >= 4.0 and not re.search(r"[a-z]{6,}", core)
    return False


def random_spans(text: str) -> Iterator[Span]:
    """Runs of token characters that look machine-made, outside URLs and hash/public-key context."""
    public = [(p.start(), p.end()) for p in _PUBLIC_ARMOUR.get().finditer(text)] if "BEGIN" in text else []
    for m in _RUN.get().finditer(text):
        v = m.group()
        s = m.start()
        if _placeholder(v) or not _random_run(v) or any(a <= s < b for a, b in public):
            continue
        line_start = text.rfind("\n", max(0, s - 200), s) + 1 or max(0, s - 200)
        line_end = text.find("\n", m.end(), m.end() + 200)
        line_end = min(len(text), m.end() + 200) if line_end < 0 else line_end
        line = text[max(line_start, s - 200) : min(line_end, m.end() + 200)]
        before = text[max(line_start, s - 200) : s]
        if re.search(r"https?://\S*$|\b[\w.-]+\.(?:com|net|org|io|dev|app)/\S*$", before):
            continue  # part of a URL
        if _HASH_CONTEXT.get().search(line):
            continue
        if before.endswith(("@", "#", "%")) or text[m.end() : m.end() + 1] == "@" or _ID_BEFORE.get().search(before):
            continue
        if b64_prose(v):
            continue  # round 8: a sentence in base64 is content, not a key
        if len(v) <= 27 and _UNCUED.get().fullmatch(v) and not cues.secret_cued(text):
            continue  # a short id-sized run (nanoid 21, KSUID 27) that nothing in the text calls a secret: an id
        # strip the leading and trailing punctuation that ends sentences
        e = m.end()
        while e > s and text[e - 1] in ".-_~":
            e -= 1
        yield s, e, "high_entropy_secret"


# --- look-alikes every rule spares ---------------------------------------------------------------------------------
_DIGEST_BEFORE = Lazy(r"(?:\bh1|sha1|sha224|sha256|sha384|sha512|md5|blake2b|sha3-256)[:-]$", I)
_REPEATED_BODY = Lazy(r"(?:[A-Za-z]{2,12}[_-]){0,3}(?P<body>(?P<c>[xX*0•.#])(?P=c){7,})")
_REFERENCE = Lazy(r"(?:vault|ssm|secretsmanager|awssm|op|keychain|kms|sops|azurekv|gcpsm):\S+", I)
_IBAN_SHAPE = Lazy(r"[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?")
# round 10: a value that is code, not a literal: a function or method called ("= useState('')", ": os.getenv(…)");
# a code's name has a small letter and few digits ("HKID: V267126(3)" is an id and its check digit)
_CALL = Lazy(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_OPTION = Lazy(r"(?P<name>[A-Za-z][\w.-]{0,40}[:=])\d+")
_CALL_AFTER = Lazy(r"\([^\n()]{0,200}\)")
# round 10: a number under a label that names a quantity ("rsa_keygen_bits:4096", "key_size=2048", "token ttl: 3600")
_QUANTITY_LABEL = Lazy(
    r"(?:\b|[-_.])(?:bits|bytes|size|length|len|count|ttl|timeout|seconds|secs|days|hours|minutes|rounds|iterations"
    r"|retries|limit|max|min|port|version|width|height|expiry|expires_in|lifetime|age)[\\\"'`]{0,2}[ \t]*[:=][ \t]*[\"'`]?$",
    I,
)


def spared(text: str, start: int, end: int) -> bool:
    """A span no rule should replace: a placeholder, a secret-store reference, a digest, a bad-checksum IBAN."""
    v = text[start:end]
    if _REPEATED_BODY.get().fullmatch(v) or _REFERENCE.get().fullmatch(v):
        return True
    if v.startswith("@Microsoft.") and text.startswith("(", end):
        return True  # round 9: an App Service reference, "@Microsoft.KeyVault(SecretUri=…)", names where a secret is
    if _DIGEST_BEFORE.get().search(text[max(0, start - 10) : start]):
        return True
    if _published(text, start, v):
        return True
    if _CALL.get().fullmatch(v) and v.upper() != v and sum(c.isdigit() for c in v) <= 2 and _CALL_AFTER.get().match(text, end):
        return True  # round 10: "const [password, setPassword] = useState('')": a call, the value is computed
    if v.isdigit() and _QUANTITY_LABEL.get().search(text[max(0, start - 40) : start]):
        return True  # round 10: a count, size or duration, not a code
    opt = _OPTION.get().fullmatch(v)
    if opt and _QUANTITY_LABEL.get().search(opt.group("name")):
        return True  # round 10: an option set to a quantity ("-pkeyopt rsa_keygen_bits:4096"), not a key
    if _IBAN_SHAPE.get().fullmatch(v) and len(v.replace(" ", "")) >= 15 and cues.iban_shaped(v):
        return not iban_ok(v)  # (a token that merely starts with two capitals and two digits is no IBAN)
    return (
        _look_alike(text, start, end, v)
        or _public_by_cause(text, start, end, v)
        or cues.public_value(text, start, end)
        or _key_id(text, start, v)
    )


# --- round 8: values published as examples, and values a label calls public ------------------------------------------
# the test card numbers payment processors document (Stripe, Braintree, Adyen, PayPal …): they pay for nothing, and a
# reader needs them intact (documented example IBANs stay redacted: tests/test_redact_causes.py treats them as accounts)
_TEST_CARDS = frozenset(
    """4242424242424242 4000056655665556 5555555555554444 2223003122003222 5200828282828210 5105105105105100
    378282246310005 371449635398431 6011111111111117 6011000990139424 3056930009020004 36227206271667
    3566002020360505 6200000000000005 4111111111111111 4012888888881881 4222222222222 4000000000000002
    4000000000009995 4000000000000077 4000002500003155 4000000000003220 4000000000000341 5454545454545454
    340000000000009 30000000000004 6011000000000004""".split()
)
_CARD_SHAPE = Lazy(r"\d[\d -]{11,22}\d")
_PW_HASH_NAME = Lazy(r"pass|pw|pin|secret|token|key", I)
_POSTAL_PIN = Lazy(r"(?:(?P<one>\bpincode|\bpin-code|\bpostal\s+code|\bpost\s+office)|\bpin(?:\s+code)?)\b[^\w\n]{0,4}(?:is\s+)?$", I)
_PLACE_AFTER = Lazy(r"[ \t]*(?:,[ \t]*)?\(?(?!Please|Thanks|Thank|Keep|Don|Do|Never|Use|It|This|That|The|And|But)[A-Z][a-z]{2,}")
_CVV_BEFORE = Lazy(r"\b(?:cvv2?|cvc2?|csc|cv2|security\s+code)\b[^\w\n]{0,4}$", I)
# a value its label calls a signature, digest, checksum or fingerprint: what a key made, or a hash; public by policy
# (a signing key or signing secret is not: "signing", "signature key", "signature secret" name the key)
_PUBLIC_LABEL = Lazy(
    r"(?:(?<![\w-])|[-_])(?:signature|digest|checksum|hash|fingerprint|etag)s?"
    r"(?![\w-]*(?:key|secret|token|salt|pepper))[\\\"'`]{0,2}[ \t]*(?:=|:|is)[ \t]*[\\\"'`]{0,2}$",
    I,
)
# Google Analytics' client-id cookies (_ga, _gid: "GA1.2.<random>.<time>"): a visitor id, it authenticates nothing
_GA_COOKIE = Lazy(r"GA1\.\d\.\d{5,12}\.\d{9,11}|GS1\.\d\.[\w.$-]{10,80}")


def _published(text: str, start: int, v: str) -> bool:
    core = v.strip().strip("'\"`")
    if _CARD_SHAPE.get().fullmatch(core):
        digits = core.replace(" ", "").replace("-", "")
        if digits in _TEST_CARDS or len(set(digits[1:])) == 1:
            return True
    if _GA_COOKIE.get().fullmatch(core):
        return True
    if len(core) == 6 and core.isdigit() and core[0] in "12345678":
        label = _POSTAL_PIN.get().search(text, max(0, start - 24), start)
        if label is not None and (label.group("one") or _PLACE_AFTER.get().match(text, start + len(v))):
            return True  # India's postal PIN code: "pincode: 110001", "PIN code 560001 Bangalore", "PIN 400001, Mumbai"
    if core.isdigit() and 3 <= len(core) <= 4 and _CVV_BEFORE.get().search(text, max(0, start - 16), start):
        cards = [re.sub(r"[ -]", "", m.group()) for m in _CARD_SHAPE.get().finditer(text)]
        cards = [c for c in cards if 13 <= len(c) <= 19]
        if cards and all(c in _TEST_CARDS or len(set(c[1:])) == 1 for c in cards):
            return True  # the CVC given with a documented test card ("4242 4242 4242 4242, any CVC: 123")
    label = _PUBLIC_LABEL.get().search(text, max(0, start - 40), start)
    if label is None or core.startswith(("$", "{")) or _PW_HASH_NAME.get().search(text, max(0, label.start() - 12), label.end()):
        return False  # a password's hash ("password_hash: $2b$…", "pw_digest") is a credential file's secret
    # in a URL's query the signature is the capability itself (SAS "sig=", "X-Amz-Signature=", GCS "X-Goog-Signature=")
    token_start = max(text.rfind(" ", 0, label.start()), text.rfind("\n", 0, label.start()), text.rfind("\t", 0, label.start()))
    return not any(c in text[token_start + 1 : label.end()] for c in "?&")


# --- round 5: a PGP/GPG key id or fingerprint is public (it names a key; it cannot sign or decrypt) ---------------
# 8 or 16 hex digits (short/long key id) or 40 (a v4 fingerprint, perhaps in groups of four), named as such right before
_KEY_ID_VALUE = Lazy(r"(?:0x)?(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{16}|[0-9A-Fa-f]{4}(?:[ ]{0,2}[0-9A-Fa-f]{4}){9})")
_KEY_ID_BEFORE = Lazy(
    r"(?:(?:\bkey[\s_-]?id|\bkeyid|fingerprint|recv-keys?|receive-keys?|(?:long|short)[\s_-]id"
    # round 9: gpg names the key by its algorithm ("using RSA key 29E8…", "sec rsa4096/3AA5C343…", "EDDSA key")
    r"|\b(?:rsa|dsa|ecdsa|eddsa|ecc|elg|elgamal|ed25519|cv25519|nistp\d{3}|pgp|gpg|openpgp)\d{0,4}[\s_-]?key)s?"
    r"[\s\"'`]{0,3}[:=#]?[\s\"'`]{0,3}|\b(?:rsa|dsa|elg|ed25519|cv25519|nistp)\d{0,4}/)$",
    I,
)


def _key_id(text: str, start: int, v: str) -> bool:
    return bool(_KEY_ID_VALUE.get().fullmatch(v)) and _KEY_ID_BEFORE.get().search(text, max(0, start - 40), start) is not None


# --- round 4: look-alikes by cause (holdout6) -------------------------------------------------------------------------
# a digest or nonce named by its own prefix (CSP "'sha256-…'", SRI "integrity=sha384-…")
_NAMED_DIGEST = Lazy(r"['\"]?(?:sha(?:1|224|256|384|512)|md5|nonce|blake2b?)-", I)
# base64 of a binary file, known by its magic bytes: PNG, JPEG, GIF, PDF, WOFF/WOFF2, ICO, RIFF/WebP, Ogg, MP3, XML, SVG,
# wasm (not gzip or zip: a Helm release or an archive may hold secrets)
_CSP_SOURCE = Lazy(r"'(?:sha(?:256|384|512)|nonce)-[A-Za-z0-9+/_=-]{8,}")
_FILE_MAGIC = Lazy(r"iVBORw0KGgo|/9j/|R0lGOD|JVBERi0|d09GM|d09GR|AAABAA|UklGR|T2dnUw|SUQz|PD94bWwg|PHN2Zy|AGFzbQ")
_DATA_URI = Lazy(r"data:(?:font|image|audio|video|application/(?:font|x-font|octet-stream|pdf|wasm|zip))[\w/+.-]*;base64,$", I)
# content addresses: IPFS CIDv0 / CIDv1
_CONTENT_ID = Lazy(r"Qm[1-9A-HJ-NP-Za-km-z]{44}|baf[ykz][a-z2-7]{50,}")
_UUID_SHAPE = Lazy(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# a UUID in an id position: "key id …", "Idempotency-Key: …", "request id …"
_ID_POSITION = Lazy(
    r"(?:\bid|\bids|idempotency[\s_-]?key|request|correlation|trace|message|event|run|job|order|object)"
    r"[\s\"'`]{0,3}[:=#]?[\s\"'`]{0,3}$",
    I,
)
_SESSION = Lazy(r"session|sid\b|auth|api|secret|token", I)  # a session id or an auth id is a credential
_SCHEME_BEFORE = Lazy(r"[A-Za-z][A-Za-z0-9+.-]{0,20}:$")
_USERINFO_AFTER = Lazy(r"[^/\s@]{0,200}@")  # the span is a URL's user part ("//KEY:x@host"): a credential
_PATH_FILE = Lazy(r"[\w.-]+(?:/[\w.-]+)+\.[A-Za-z0-9]{1,8}")
# a value that says it is an example: AWS's documented "AKIAIOSFODNN7EXAMPLE", "…/bPxRfiCYEXAMPLEKEY", "sk_example_…"
_EXAMPLE = Lazy(r"EXAMPLE(?:KEY)?$|(?:^|[_-])(?:EXAMPLE|example)(?:[_-]|$)")
_SIGNED_ARMOUR = Lazy(r"-----BEGIN (?:PGP SIGNATURE|PGP PUBLIC KEY BLOCK|PUBLIC KEY|CERTIFICATE|SSH SIGNATURE|SIGNATURE)-----")


def _public_by_cause(text: str, start: int, end: int, v: str) -> bool:
    """Round 4's look-alikes: a digest named as a digest, base64 of a binary file, a content address, a UUID in an id
    position or a file path, a URL's own ``//host/path``, an example or elided placeholder (``AKIA…EXAMPLE``,
    ``sk-...``), a span inside a template expression ``{{ … }}``, the body of a signature or public-key armour."""
    core = v.strip().strip("'\"`")
    before = text[max(0, start - 60) : start]
    if _NAMED_DIGEST.get().match(core) or _NAMED_DIGEST.get().search(before[-9:] + core[:1]) and before.endswith("-"):
        return True
    if _CSP_SOURCE.get().search(v):
        return True  # "'self' 'sha256-…'": a CSP source list, hashes named as hashes
    if _FILE_MAGIC.get().match(core) or _DATA_URI.get().search(before):
        return True
    if _CONTENT_ID.get().fullmatch(core):
        return True
    if _UUID_SHAPE.get().fullmatch(core) and _ID_POSITION.get().search(before) and not _SESSION.get().search(before[-24:]):
        return True
    if _PATH_FILE.get().fullmatch(core) and not core.startswith(("~", ".ssh")) and "/" in core:
        return True  # "logs/app/3513ee2a-….json": a file path, not a key
    if core.startswith("//") and _SCHEME_BEFORE.get().search(before) and not _USERINFO_AFTER.get().match(text, end):
        return True  # "https://docs.google.com/document/d/…", "s3://bucket/…": a URL taken whole (not its user part)
    if (
        _EXAMPLE.get().search(core)
        or re.search(r"(?:\.\.\.|…)", core)
        and max((len(r) for r in re.findall(r"[A-Za-z0-9]+", core)), default=0) < 12
    ):
        return True
    lo = max(0, start - 200)
    opened = text.rfind("{{", lo, start)
    if opened >= 0 and text.rfind("}}", opened, start) < 0:
        closed = text.find("}}", end, end + 200)
        if closed >= 0 and "\n" not in text[end:closed]:
            return True
    armour = text.rfind("-----BEGIN ", max(0, start - 8000), start)
    if armour >= 0 and _SIGNED_ARMOUR.get().match(text, armour) and text.find("-----END", armour, start) < 0:
        return True
    return False


# --- look-alikes by cause: placeholders and masks, public identifiers, failed check characters -------------------------
_OPEN, _CLOSE = "[<{«(（【「", "]>}»)）】」"
_MASK_WORD = Lazy(
    r"[*•█#xX_.\-]*(?:redacted|removed|filtered|hidden|masked|omitted|censored|scrubbed|elided|snip|password|passwd|secret|"
    r"token|api[-_ ]?key|key|value|placeholder|changeme|[a-z0-9]+[-_ ](?:secret|key|token|password|here|value)|your[-_][a-z_-]+|[a-z_-]+[-_]here)"
    r"[*•█#xX_.\-]*",
    I,
)
_MASK_CHARS = Lazy(r"[*•█#xX_.\-]{3,}(?:[A-Za-z]{0,12}[*•█#xX_.\-]{3,})?")
_URL_PLACEHOLDER = Lazy(r"password|passwd|secret|changeme|<[^>]*>|\$\{?\w+\}?", I)
_COLON_HEX = Lazy(r"(?:[0-9A-Fa-f]{2}:){4,}[0-9A-Fa-f]{2}")
_ARN = Lazy(r"arn:[\w-]+:[\w-]+:[\w-]*:\d*:\S+")
_ID_WORD_BEFORE = Lazy(r"\b(?:ksuid|ulid|uuid|guid|snowflake|xid|cuid|nanoid)\s*[:=#]?\s*$", I)
_SPDX = Lazy(r"spdx|license-identifier|licen[cs]e\s*(?:id|identifier|expression)\s*[:=]", I)
_CPF = Lazy(r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}")
_DNI = Lazy(r"[XYZ]?\d{7,8}-?[A-Z]")


def _cpf_ok(digits: str) -> bool:
    nums = [int(c) for c in digits]
    for n in (9, 10):
        total = sum(nums[i] * (n + 1 - i) for i in range(n))
        if (total * 10 % 11) % 10 != nums[n]:
            return False
    return True


def _dni_ok(v: str) -> bool:
    v = v.replace("-", "")
    body = v[:-1].replace("X", "0").replace("Y", "1").replace("Z", "2")
    return "TRWAGMYFPDXBNJZSQVHLCKE"[int(body) % 23] == v[-1]


_PUBLIC_PAIR = Lazy(
    r"[.]?(?:[A-Za-z]\w*[._-])?(?:sha|commit|commit_sha|id|uuid|guid|digest|hash|version|build|trace_id|request_id|span_id|etag|checksum|fingerprint)=",
    I,
)
_IMAGE = Lazy(r"[a-z][a-z0-9.-]*(?:/[a-z][a-z0-9._-]*)+(?::[\w.-]+)?")
_INDIRECT = Lazy(
    r"[\"'`]?(?:\$\{?[A-Za-z_]\w*\}?|%[A-Za-z_]\w*%|\{\{[^{}]*\}\}|\$\([^()]*\)|(?:none|null|nil|undefined|true|false)|"
    r"(?:secretKeyRef|valueFrom|secretRef|secretName)|(?:os\.getenv|getenv|process\.env|ENV|env|os\.environ)\b\S*|/run/secrets/\S+)[\"'`;,]?",
    I,
)


# a password stated in prose just before a span: its value is the word, even a default one ("the password is secret")
_STATED_DEFAULT = Lazy(r"(?:passw|kennw|passe|contrase|senha|wachtw)\w*[ \t]+(?:is|was|will[ \t]+be|ist|war|est|es|é|è|är)[ \t]+$", I)


def _look_alike(text: str, start: int, end: int, v: str) -> bool:
    """Spans that only look like secrets: a mask or placeholder (``***REMOVED***``, ``<password>``, ``{base32-secret}``,
    ``«redacted»``), a note in brackets, a URL's literal ``:password@``, a PEM block without a body, a colon-hex serial,
    a span inside an ARN, a value named as an id (``ksuid …``), an SPDX licence expression, a labelled CPF/DNI whose
    check characters fail."""
    before = text[max(0, start - 40) : start]
    core = v.strip()
    if _INDIRECT.get().fullmatch(core):
        return True  # a reference to where the secret lives, not the secret
    if _PUBLIC_PAIR.get().match(core):
        return True  # "COMMIT_SHA=9fce…", ".request_id=3f2b…": a whole pair whose name says it is public
    if _IMAGE.get().fullmatch(core):
        return True  # "acme/app", "ghcr.io/org/app:1.2": an image or a path, not a password
    opened = start > 0 and text[start - 1] in _OPEN or v[:1] in _OPEN
    closed = end < len(text) and text[end] in _CLOSE or v[-1:] in _CLOSE
    inner = core.strip(_OPEN + _CLOSE)
    if (
        opened
        and closed
        and re.fullmatch(r"[A-Za-z][A-Za-z _-]{0,40}", inner)
        and all(re.fullmatch(r"(?:[A-Z]?[a-z]{2,})+|[A-Z]+", w) for w in re.split(r"[ _-]+", inner) if w)
    ):
        return True  # "<password>", "{base32-secret}", "[hidden]" (not "[hf_SQNJFCVJwnhSz…]": its case is random)
    if _MASK_CHARS.get().fullmatch(inner) or _MASK_WORD.get().fullmatch(inner) and (opened or not any(c.isdigit() for c in inner)):
        # round 13: unless it is the word an owner's password is said to be in prose ("the password is changeme")
        if opened or not inner.isalpha() or _STATED_DEFAULT.get().search(before) is None:
            return True
    if v[:1] in "(（":
        return True  # "（1Passwordを参照）": a note, not a value
    if v[:1].isspace() and before[-1:] in "`'\"" and re.fullmatch(r"[A-Za-z ,.;]+", core):
        return True  # "`ADMIN_PASSWORD=` left empty."
    if before.endswith(":") and text[end : end + 1] == "@" and _URL_PLACEHOLDER.get().fullmatch(v):
        return True  # postgres://user:password@host
    if v.startswith("-----BEGIN") and len(re.sub(r"-----[^-]*-----|[^A-Za-z0-9+/=]", "", v)) < 24:
        return True  # a PEM block with "..." for a body
    lo = max(0, start - 60)
    for pattern in (_COLON_HEX, _ARN):
        for m in pattern.get().finditer(text, lo, min(len(text), end + 60)):
            if m.start() <= start and end <= m.end():
                return True
    if _ID_WORD_BEFORE.get().search(before):
        return True
    if _SPDX.get().search(before):
        return True
    low_before = before.lower()
    if _CPF.get().fullmatch(v) and "cpf" in low_before:
        return not _cpf_ok(re.sub(r"\D", "", v))
    if _DNI.get().fullmatch(v) and re.search(r"\b(?:dni|nie|nif)\b", low_before):
        return not _dni_ok(v)
    return False
