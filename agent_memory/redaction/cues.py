"""Round-4b detection by cause: secrets named by a cue family or held in a structural position, and public values a
careful scanner spares by what they are.

Detection (:func:`cue_spans`), each rule a family rather than an example:

* a password label of any language, a few filler words, then a value that mixes letters with digits or symbols
  ("lösenordet är Blue.5857mt", "parol ot pochty X", "the password, it's X"), or a dashed passphrase; the value
  before the label ("X is the password for …"); the value on the line below a bare label line;
* round 11: a password of one to four ordinary words stated in prose after an owner's label ("my wifi password is
  tangerine", "the password for the router is swordfish", "mein Passwort ist sonnenblume"), kept when the words say
  something about the password instead ("is expired", "is stored in the vault", "is too short", "ist abgelaufen"):
  see :func:`stated_word_spans`; round 12: the same without an owner when the label opens its clause ("Password is
  tangerine"), with "'s" ("my password's tangerine"), after a verb of setting ("I set the password to tangerine",
  "cambié la contraseña a mariposa", "das Passwort auf sonnenblume geändert"), after a preposition with nothing
  between label and value ("with password Tangerine", "mit dem Passwort Sonnenblume") and "pass" named by what it
  opens ("the wifi pass is tangerine"); kept by word class: a time word ("the password is Monday"), an infinitive or
  a clause that goes on after "to" ("set the password to expire in 90 days"), a noun the label qualifies ("the
  password's length", "with password manager"), a possessive ("is Bob's");
* a PIN-like code: 4–8 digits after a code word qualified by what it opens (gate, garage, lockbox, voicemail, card,
  "Garagentor-Code"), never an error/status/zip/area code;
* a card's verification value: 3–4 digits after a CVV cue in any language, in a text that holds a card number;
* security-question answers: the text after an answer marker in a line that names a security question; round 12:
  after a marker prose also writes ("It is …"), lower-case words holding a function word or a predicate ("a long
  story", "hard to say", "complicated") are a reply about the question, not its answer;
* one-time-password seeds and backup-code lists after their cue (base32 in one run or in groups; digit pairs);
* secret columns by header name in CSV and in SQL ``INSERT (cols) VALUES (vals)``;
* name/value structures whose name is a secret name: ``define('DB_PASSWORD', 'x')``, a plist ``<key>…Password</key>
  <string>x</string>``, a HAR/cookie ``{"name": "PHPSESSID", "value": "x"}``, a camelCase or snake key bound to a quoted
  value whatever its characters; ``{PLAIN}x`` password schemes; credential constructors' positional password;
* passwords handed to a command through stdin or an archiver flag (``echo X | sudo -S``, ``--password <(echo X)``,
  ``zip -P X``); ``"user" "password"`` lines of a userlist;
* values split across messages after split cues ("starts with", "first half"); a seed phrase split over lines; a key
  wrapped over the lines below its label;
* checksummed numbers: an IBAN with a valid mod-97 and its country's length, an ABA routing number after its label;
  a card number whose groups are split by several spaces;
* URL positions: a credential query parameter (``code=``, ``token=``) in an auth link, a URL userinfo whose user is
  itself a key (legacy Sentry DSN), a Telegram bot token with its bot id.

Sparing (:func:`public_value`): a digest named by its algorithm (``sha256-…``), the body of a signature or certificate
(PGP signature armour, ``x5c``), a ``data:`` URI of a font or image, an id header (``x-amz-id-2``), an id in a share
URL's path (``/document/d/<id>``), a byte-counting test vector, a documentation key (``…EXAMPLE…``), a call
expression (``base64(…)``), a prefix with an ellipsis (``sk-...``), a URL password that is the word "pass", an expected
digest in a test assertion.

The vocabularies (``PASSWORD_LABELS``, ``CODE_CUES``, ``TRIGGERS``) are module constants a prefilter can import.
"""

from __future__ import annotations

import base64
import functools
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator

from agent_memory.redaction.base import I, Lazy, token_like
from agent_memory.redaction.bip39 import WORDS as BIP39_WORDS
from agent_memory.redaction.general import pw_like
from agent_memory.redaction.keyvalue import placeholder_value

Span = tuple[int, int, str]

# --- vocabularies (importable by a prefilter) -------------------------------------------------------------------
PASSWORD_LABELS = (
    r"passwor[dt]\w{0,6}|passcode|passphrase|kennwort\w{0,4}|mot\s+de\s+passe|contrase(?:ñ|n)a|senha|has(?:ł|l)o|heslo|"
    r"wachtwoord|l(?:ö|o)senord\w{0,3}|passord\w{0,3}|adgangskode\w{0,3}|kata\s+laluan|পাসওয়ার্ড|salasana\w{0,3}|jelszó|jelsza\w{1,4}|parol[aăe]?|(?:ş|s)ifre\w{0,3}|"
    r"lozinka|geslo|парол\w{0,2}|κωδικός(?:\s+πρόσβασης)?|συνθηματικό|كلمة\s+(?:المرور|السر)|رمز\s+عبور|סיסמ[הא]|"
    r"पासवर्ड|कूटशब्द|パスワード|密码|密碼|口令|비밀번호|암호|m[aậ]t\s+kh[aẩ]u|kata\s+sandi\w{0,3}|รหัสผ่าน|nenosiri|jelszo|"
    r"\bpw\b|\bpwd\b|memorable\s+(?:word|phrase|answer)|secret\s+word|mot\s+m(?:é|e)morable|palabra\s+secreta"
)
CODE_CUES = (
    r"gate|door|garage|garagentor|tor|tür|lockbox|lock|locker|keypad|alarm|safe|entry|access|building|voicemail|"
    r"mailbox|digicode|portail|porte|puerta|portão|cadenas|padlock|combination|carte\s+bleue|carte|card|tarjeta|cartão|"
    r"karte|bank|atm|sim|phone|handy|security|sicherheits|zugangs|pin"
)
CVV_CUES = (
    r"cvv2?|cvc2?|csc|cv2|security\s+code|code\s+on\s+the\s+back|card\s+code|prüfziffer|prüfnummer|kartenprüfnummer|"
    r"sicherheitscode|c(?:ó|o)digo|\bcodice\b|\bcode\b|\bkod\b|код|código\s+de\s+segurança|código\s+de\s+seguridad|cryptogramme|code\s+de\s+sécurité|"
    r"codice\s+di\s+sicurezza|セキュリティコード|セキュリティーコード|安全码|보안\s*코드|код\s+безопасности|"
    # the value printed on the back of the card, named by where it is ("the back says 791", "au dos : 123")
    r"(?:on|at)\s+the\s+back|the\s+back\s+(?:says|reads|shows|has|is)|back\s+of\s+the\s+card|r(?:ü|u)ckseite|au\s+dos|"
    r"(?:de\s+)?atr(?:á|a)s\s+de\s+la\s+tarjeta|reverso|no\s+verso|sul\s+retro|на\s+обороте|सीवीवी|सीवीसी|"
    r"رمز\s+(?:الأمان|التحقق)|背面|裏面|뒷면"
)

_PW_LABEL = Lazy(rf"(?<![A-Za-z0-9_:$@/.%{{<])(?:{PASSWORD_LABELS})(?![A-Za-z0-9_@%}}>])", I)
_PW_LABEL_LOW = Lazy(rf"(?<![a-z0-9_:$@/.%{{<])(?:{PASSWORD_LABELS})(?![a-z0-9_@%}}>])")
_PW_NAMED = Lazy(r"passw|kennw|contrase|senha|keepass|bitwarden|lastpass|vault", I)
# a label, up to four filler words ("ot pochty", "είναι", ", it's"), then a value holding a digit or a symbol; or a bare
# label line with the value alone on the next line ("Password:\nSunny.1710pm")
_FILLER = r"[^\s\d!-/:-@\[-`{-~]{1,12}+(?:['’][a-z]{1,2})?"
_PW_VALUE = Lazy(
    rf"(?<![A-Za-z0-9_:$@/.%{{<])(?:{PASSWORD_LABELS})(?![A-Za-z0-9_@%}}>])"
    rf"(?:[ \t]*+[,:：=\-—–>]?[ \t]*+(?:{_FILLER}(?:[ \t]++[,:：=\-—–>]?[ \t]*+|[,:：=\-—–>][ \t]*+)){{0,4}}?[\"'“‘«]?"
    r"(?P<v>(?=[^\s\"'“”‘’«»`<>()\[\]{}]{0,80}[\d!#$%&*+.?@^_~\-])[^\s\"'“”‘’«»`<>()\[\]{}]{5,80}+)"
    r"|[ \t]*+[:：]?[ \t]*+\n[ \t]*+(?P<w>[^\s]{5,64}+)[ \t]*+(?=\n|$))",
    I,
)
_PW_VALUE_LOW = Lazy(
    rf"(?<![A-Za-z0-9_:$@/.%{{<])(?:{PASSWORD_LABELS})(?![A-Za-z0-9_@%}}>])"
    rf"(?:[ \t]*+[,:：=\-—–>]?[ \t]*+(?:{_FILLER}(?:[ \t]++[,:：=\-—–>]?[ \t]*+|[,:：=\-—–>][ \t]*+)){{0,4}}?[\"'“‘«]?"
    r"(?P<v>(?=[^\s\"'“”‘’«»`<>()\[\]{}]{0,80}[\d!#$%&*+.?@^_~\-])[^\s\"'“”‘’«»`<>()\[\]{}]{5,80}+)"
    r"|[ \t]*+[:：]?[ \t]*+\n[ \t]*+(?P<w>[^\s]{5,64}+)[ \t]*+(?=\n|$))",
)
_CJK = Lazy(r"[\u2e80-\u9fff\uac00-\ud7af\u3000-\u303f\uff00-\uffef]")
_DOTTED_ID = Lazy(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(?\)?")
# a passphrase of Capitalised words joined by dots, with digits ("Opinion.Badge.Gentle.Orchard57"), not a dotted name
_DOTTED_PHRASE = Lazy(
    r"[A-Z][a-z]{2,12}(?:\.[A-Z][a-z]{2,12}){2,7}\d{1,6}[!?#*]?"
    # short segments switching case, an upper one among lower ones ("ecto.QGYRA.ugbp", "yelp.E7SPW.woez"): no code name
    r"|[a-z]{3,8}(?:\.(?=[A-Z0-9]*[A-Z])[A-Z0-9]{3,8}\.[a-z]{3,8})+"
)
_ASSIGNMENT = Lazy(r"=|.*==|(?:.*[;&,?])?(?:[a-z_][a-z0-9_.-]{0,40}|[A-Z_][A-Z0-9_.-]{0,40})=")
_FILE = Lazy(r".*\.(?:txt|json|ya?ml|env|conf|cfg|ini|pem|key|csv|log|md|py|js|sh|kdbx|gpg|zip|pdf|docx?)$", I)
_PASSPHRASE = Lazy(r"[a-z]{3,10}(?:[-_.][a-z]{3,10}){3,7}")
_NOT_VALUE_WORDS = frozenset(
    "required optional incorrect correct invalid wrong expired reset changed stored saved hashed encrypted empty blank "
    "missing same different strong weak long short unknown none null secret hidden protected set updated with in using "
    "via by into en dans im mit through".split()
)


# --- round 8: a passphrase of plain words after a password label ---------------------------------------------------
# "Lösenordet till routern är napkin rabbit wealth visual slab", "A jelszó: upset volume sauce drink",
# "ルーターのパスワードはjazz marble drip million feedです", "Пароль до Wi-Fi — yellow.fiscal.wide.shell.edit": four to
# eight words of a passphrase word list (BIP-39's English list stands for them: diceware-style generators draw common
# words), one separator throughout, ending its clause. Prose after a label ("password: must contain mixed case") is
# told apart by its function and instruction words, which no generator list holds (_PROSE_WORDS: the ones BIP-39 does).
_WORD_RUN = Lazy(r"(?<![A-Za-z0-9.\-_])(?P<v>[A-Za-z]{3,9}(?P<sep>[ .\-_])[A-Za-z]{3,9}(?:(?P=sep)[A-Za-z]{3,9}){2,7})")
# the last token of the label's clause, after up to three short words ("Kata sandi akun saya 日本語パス99!")
_WORD_AFTER = Lazy(r"(?:(?:[ \t]*[:：][ \t]*|[ \t]+)[^\s\d]{1,10}){0,3}(?:[ \t]*[:：][ \t]*|[ \t]+)(?P<v>\S{4,24})[ \t]*(?=\n|$)")
_ANY_DIGIT = Lazy(r"\d")
_WORD_ANY = Lazy(r"[A-Za-z]{3,9}")
_WORD_START = Lazy(r"(?<![A-Za-z])[A-Za-z]")
_RUN_END = Lazy(r"[ \t]*(?:$|\n|[.,;!?)\]\"'”’»」』）。、，]|[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]| [(\-—–])")
_PROSE_WORDS = frozenset(
    """about above across after again against all almost alone also always among another any anyone around ask away
    because before behind below between both but can change check come could dash day debate describe else enough
    ever every exact except exist few find first follow for found from future give good have help here
    hidden how into just keep kind know later leave less like make many matter may mean more most much must near need
    never next not now off often okay once only open order other over own please point rather ready real really reason
    require same say second see seek select shall share should show similar since some soon still such sure take
    than that then there these they thing this those together too try under until upon use usual very wait want
    what when where which while why will with within without would wrong you your""".split()
)


def _word_phrase(v: str, sep: str) -> bool:
    words = v.split(sep)
    if not (all(w.islower() for w in words) or all(w[0].isupper() and w[1:].islower() for w in words)):
        return False
    low = [w.lower() for w in words]
    return len(set(low)) == len(low) and all(w in BIP39_WORDS and w not in _PROSE_WORDS for w in low)


@functools.lru_cache(maxsize=8)
def _label_bounds(text: str) -> tuple[tuple[int, int], ...]:
    """Where each password label of ``text`` starts and ends (on the lower-cased, accent-folded text when that keeps
    offsets: an order faster than matching the lexicon ignoring case)."""
    low = text.lower()
    if len(low) == len(text):
        folded = fold_accents(low)
        if len(folded) == len(text):
            return tuple(m.span() for m in _PW_LABEL_LOW.get().finditer(folded))
    return tuple(m.span() for m in _PW_LABEL.get().finditer(text))


def word_passphrase_spans(text: str) -> Iterator[Span]:
    """Passphrases of plain words after a password label of any language (see above): the first run of such words
    within 48 characters of the label, on its line, that ends its clause."""
    digits = _ANY_DIGIT.get().search(text) is not None
    ascii_only = text.isascii()
    for _, end in _label_bounds(text):
        if digits:
            yield from _bare_digits(text, end)
        after = None if ascii_only or not digits else _WORD_AFTER.get().match(text, end)
        if (
            after is not None
            and _SCRIPT_VALUE.get().fullmatch(after.group("v").rstrip(".,;"))
            and not any(c in "。、，！？" for c in after.group("v"))
        ):
            v = after.group("v").rstrip(".,;")
            yield after.start("v"), after.start("v") + len(v), "password"
        stop = text.find("\n", end, end + 48)
        stop = stop if stop >= 0 else end + 48
        if sum(w.lower() in BIP39_WORDS for w in _WORD_ANY.get().findall(text, end, stop + 40)) < 4:
            continue  # fewer than four list words near the label: no passphrase here
        for w in _WORD_START.get().finditer(text, end, stop):
            m = _WORD_RUN.get().match(text, w.start())
            if m is None:
                continue
            v = m.group("v")
            if _RUN_END.get().match(text, m.end()) is not None and _word_phrase(v, m.group("sep")):
                yield m.start("v"), m.end("v"), "password"
                break


# --- round 11: a password of plain words stated in prose ------------------------------------------------------------
# "my wifi password is tangerine", "the password for the router is swordfish", "mon mot de passe est tournesol": a
# possessive or article, up to three words holding a password label, an optional "for X", a copula ("is", "est",
# "ist", "es", "é", "è", "är"; "is set to", "is now") or ":"/"=", then one to four ordinary words ending the clause.
# The same frame holds what is said *about* the password ("the password is wrong", "is stored in the vault", "is too
# short", "is case-sensitive", "est trop court", "ist abgelaufen"), told apart by the words themselves:
# * a function word (article, pronoun, preposition, conjunction, adverb, auxiliary, quantifier) ends the value; a value
#   that opens with one ("is the same", "is in 1Password", "is too short", "is still the same") is none;
# * the value's last word must not be a predicate: an adjective or participle of a list, or of a predicate suffix
#   (English -ed/-ive/-able/-ous/-ful/-less/-ly..., and those of the copula's language: French -é/-ée, German
#   ge-...-t/-lich/-ig, Spanish/Portuguese/Italian -ado/-ada/-ato/-ita/-vel/-bile ...): "correct horse" is a value,
#   "case sensitive" and "expired" are not;
# * more than four words without a function word is a sentence, not a value;
# * a quoted value is a value whatever its words ("the password is 'wrong'"), unless it is a placeholder.
_DETERMINERS = (
    r"my|our|the|his|her|their|your|its|this|that|a|mon|ma|notre|votre|son|sa|leur|le|la|ton|ta|mein|meine|dein|deine|"
    r"sein|seine|ihr|ihre|unser|unsere|das|der|die|mi|tu|su|nuestra|nuestro|el|minha|meu|sua|seu|nossa|nosso|o|mia|mio|"
    r"tua|tuo|il|mijn|jouw|zijn|haar|onze|ons|het|je|mitt|min|ditt|din|hans|hennes|vårt|v[aå]r"
)
_STATED_BEFORE = Lazy(rf"(?<![^\W\d_])(?:{_DETERMINERS})(?:[ \t]+[^\s,.;:!?]+){{1,4}}$", I)
_STATED_AFTER = Lazy(
    r"(?:(?:[ \t]+(?:for|to|of|on|at|für|fürs|zum|zur|vom|pour|du|de|del|da|do|di|della|per|van|voor|till|för)"
    r"(?:[ \t]+[^\s,.;:!?=\"']+){1,3}?)?"
    r"(?:[ \t]+(?P<c>is|was|remains|est|était|etait|ist|war|lautet|es|era|é|è|är|var"
    # round 13: the copula in another tense ("the password will be tangerine", "das Passwort wird …")
    r"|will[ \t]+be|would[ \t]+be|has[ \t]+been|wird|sera|será|sarà|wordt|blir)"
    r"(?:[ \t]+(?:now|still|(?P<set>set[ \t]+to|changed[ \t]+to)))?(?:[ \t]*[:=])?|[ \t]*(?P<colon>[:：])|[ \t]*="
    # round 12: "my password's tangerine"; "I set the password to tangerine" (a verb of setting before the label);
    # "with password Tangerine" (nothing between the label and the value: a preposition before the label)
    r"|(?P<s>['’]s)|[ \t]+(?P<to>to|till|a|à|para|por|in|en|auf|op|naar|su))|(?P<bare>))[ \t]+"
    r"(?P<q>[\"'“‘«„])?(?P<v>[^\W\d_]+(?:[-'’][^\W\d_]+)*(?:[ \t]+[^\W\d_]+(?:[-'’][^\W\d_]+)*){0,5})(?![\w@/\\])"
    r"(?!\.\w)",
    I,
)
_FUNCTION_WORDS = frozenset(
    # English
    """a an the this that these those it its it's i me my you your he him his she her we us our they them their mine
    yours hers ours theirs is are was were be been being am not no nor never now still just only also too very so quite
    rather pretty really always already again yet ever even then there here where when what which who whom whose how
    why if than as and or but because though although while until unless since for from to of in on at by with without
    within into onto through over under about against between among after before above below behind beside near like
    unlike per via across along around upon off out up down all any some every each both either neither none nothing
    something anything everything someone anyone everyone somewhere anywhere everywhere nowhere same other another such
    own more most less least much many few several enough one two three four five six seven eight nine ten twelve
    first last next set get got has have had do does did can could will would shall should may might must need needs
    usually probably definitely actually literally basically simply whatever whichever whoever however
    soon later today tomorrow yesterday daily weekly monthly yearly nightly twice once again""".split()
    # French, German, Spanish, Portuguese, Italian, Dutch, Swedish
    + """le la les l un une des du de d au aux en dans sur sous avec sans pour par chez et ou mais ne pas plus trop très
    tres aussi encore toujours déjà deja jamais bien même meme ton ta tes son sa ses notre votre leur ce cet cette ces qui
    que quoi dont où si comme tout toute tous toutes rien il elle on je nous vous ils elles est était été être""".split()
    + """der die das den dem des ein eine einen einem einer eines im am an auf aus bei mit ohne für von vom zum zur nach
    vor über unter und oder aber nicht kein keine noch schon sehr zu auch immer nie gleich genau wie als wenn dass ist
    war sind sein mein meine dein es er sie wir ihr hier dort jetzt bereits nur""".split()
    + """el los las lo unos unas del con sin por para y pero muy demasiado también siempre todavía ya igual mismo misma
    mi tu su como era está esta hay aquí""".split()
    + """o os as um uma no na nos nas do da dos das com sem e não nao muito demais também sempre ainda já igual mesmo
    mesma meu minha é""".split()
    + """lo gli i nel nella di della da senza non molto troppo anche ancora già uguale stesso stessa mio mia che è
    qui""".split()
    + """het een op met zonder voor van niet geen nog al te ook altijd zeer heel erg hetzelfde dezelfde mijn""".split()
    + """ett den det på av och eller men inte ingen också alltid redan samma mitt är var här""".split()
)
_PREDICATE_WORDS = frozenset(
    """wrong right correct incorrect invalid valid expired old new weak strong short long good bad fine ok okay great
    secure insecure unsafe safe required optional mandatory necessary needed empty blank null nil missing unknown known
    different simple easy hard difficult complex obvious guessable unique random temporary permanent default standard
    generic common secret private public personal confidential lost forgotten outdated stale current active inactive due
    overdue ready fixed pending broken important useless fake real true false free unset elsewhere attached enclosed
    included written inside outside lowercase uppercase numeric alphanumeric letters digits characters chars symbols
    numbers words sensitive insensitive case-sensitive case-insensitive identical similar unchanged mandatory ignored
    expiring working changing rotating failing loading matching existing remaining outstanding lacking
    shown given sent kept taken stolen chosen done seen made told spoken frozen hidden known written overwritten
    rewritten gotten broken proven gone reset compliant noncompliant plain plaintext cleartext text string hash nonsense
    onbekend bekend
    easier harder longer shorter stronger weaker safer better worse simpler best worst fewer newer older
    faux fausse bon bonne mauvais mauvaise correcte incorrecte invalide valide requis requise obligatoire facultatif court
    courte longue nouveau nouvelle ancien ancienne vide identique différent différente sensible fort forte faible sûr
    sûre secrète perdu perdue
    falsch richtig korrekt ungültig gültig abgelaufen erforderlich nötig notwendig leer kurz lang neu alt anders sicher
    pflicht pflichtfeld
    unsicher stark schwach einfach geheim vergessen verloren bekannt unbekannt
    incorrecta incorrecto correcta correcto falsa falso inválida válida obligatoria opcional vacía corta larga nueva
    nuevo vieja viejo distinta diferente segura seguro débil fuerte secreta
    incorreta errada certa correta obrigatória vazia curta longa nova velha fraca
    sbagliata giusta corretta errata valida opzionale vuota lunga vecchia diversa sicura debole segreta
    fout juist onjuist ongeldig geldig verlopen verplicht optioneel leeg kort nieuw oud veilig onveilig sterk zwak
    fel rätt ogiltigt giltigt obligatoriskt valfritt tomt långt nytt gammalt annorlunda säkert osäkert starkt svagt
    hemligt""".split()
)
_PREDICATE_SUFFIX = Lazy(
    r".{2,}(?:[^e]ed|ive|able|ible|ous|ful|less|ly|ical|ional)|.{3,}-(?:based|only|protected|sensitive|like|free|"
    r"style|length|encoded|formatted|generated|managed)"
)
_ING = Lazy(r".{3,}ing")
# the copula tells the language; each language's participle and adjective endings
_LANGUAGE_SUFFIX = {
    "est": Lazy(r".{2,}(?:é|ée|és|ées|if|ive|eux|euse|ible|able|ique)"),
    "était": Lazy(r".{2,}(?:é|ée|és|ées|if|ive|eux|euse|ible|able|ique)"),
    "ist": Lazy(r"(?:ge|ver|be|er|ent|zer|abge|ausge|eingge|umge)\w{2,}(?:t|en)|.{2,}(?:lich|ig|bar|los|isch|iert|sam)"),
    "war": Lazy(r"(?:ge|ver|be|er|ent|zer|abge|ausge|umge)\w{2,}(?:t|en)|.{2,}(?:lich|ig|bar|los|isch|iert|sam)"),
    "es": Lazy(r".{2,}(?:ada|ado|ida|ido|ble|iva|ivo|ente)"),
    "era": Lazy(r".{2,}(?:ada|ado|ida|ido|ble|iva|ivo|ente|ata|ato|ita|ito|uta|uto|bile|vel)"),
    "é": Lazy(r".{2,}(?:ada|ado|ida|ido|vel|iva|ivo|ente)"),
    "è": Lazy(r".{2,}(?:ata|ato|ita|ito|uta|uto|bile|iva|ivo|ente)"),
    "is": Lazy(r"(?:ge|ver|be|ont)\w{2,}(?:d|t|en)|.{2,}(?:lijk|ig|baar|loos|isch)"),
    "är": Lazy(r".{2,}(?:at|igt|ligt|iskt|bart)"),
    # round 13: Russian, told by its label after a colon ("пароль: неверный"): adjectives and short participles
    "ru": Lazy(r".{2,}(?:ый|ий|ой|ая|яя|ое|ее|ые|ие|ен|ён|ена|ёна|ено|ан|ана|ано|ны)"),
}


def _predicate(word: str, copula: str) -> bool:
    w = word.lower().strip("'’")
    if w in _PREDICATE_WORDS or _PREDICATE_SUFFIX.get().fullmatch(w):
        return True
    lang = _LANGUAGE_SUFFIX.get(copula)
    return lang is not None and lang.get().fullmatch(w) is not None


# --- round 12: the same frame without an owner, with "'s", after a verb of setting or a preposition ----------------
# Misses of round 11: "Password is tangerine" (a label opening its clause needs no owner: at most three words before
# it since the clause began, none a function word), "my password's tangerine", "I set the password to tangerine" (a
# verb of setting before the label, "to"/"till"/"a"/"para"/"in"/"auf" after it; German and Dutch may put the
# participle after the value: "das Passwort auf sonnenblume geändert"), "with password Tangerine" (a preposition
# before the label, the value right after it), "the wifi pass is tangerine" ("pass" named by what it opens).
# Look-alikes in these frames, by word class:
# * a time expression (a day, a month, "tonight", "midnight", "weekend" in the eight languages): "the password is
#   Monday" says when it changes;
# * after "to": an infinitive ("set the password to expire", "para caducar", "a scadere"), or a value the sentence goes
#   on after ("to expire in 90 days", "to match the old one"): a stated value ends its clause;
# * after "'s" or a bare label: a noun the label qualifies ("the password's length", "with password manager",
#   "password reset", "password authentication"): a list of such heads, and the suffixes of abstract and agent nouns;
# * a possessive ("the password is Bob's") names an owner, not a value.
_CLAUSE_MARKS = "\n.!?;:,(•*>"
_CONJUNCTIONS = frozenset("and but so then und aber et mais y pero e mas ma en maar och men og".split())
# what may follow a value that ends its clause: a conjunction, or when ("… to butterscotch yesterday")
_VALUE_ENDS = _CONJUNCTIONS | frozenset("yesterday today tonight tomorrow again now too also last earlier recently".split())
_SET_BEFORE = Lazy(
    r"(?<![^\W\d_])(?:(?P<en>set|sets|setting|reset|resets|resetting|change|changes|changed|changing|update|updates|"
    r"updated|updating|switch|switched|switching|made|make|makes|making|chose|choose|chosen|picked|pick|rotated|rotate)|"
    r"cambi[ée]|cambiad[oa]|cambiar|establec[ií]|establecid[oa]|configur[ée]|configurad[oa]|puse|puesto|fij[ée]|"
    r"mudei|mudou|mudar|mudad[oa]|alterei|alterou|alterar|alterad[oa]|troquei|trocou|trocar|definiu|defini|coloquei|"
    r"configurei|cambiat[oa]|impostat[oa]|modificat[oa]|changé|changée|changer|mis|mise|modifié|modifiée|modifier|"
    r"défini|définie|réglé|ändrade|ändrat|ändra|ändrar|bytte|bytt|byta|byter|satte|satt|sätta|ändere|änderte|setze|"
    r"setzte|stelle|stellte|veranderd|gewijzigd|ingesteld|veranderde|wijzigde|zette|stelde)"
    r"(?:[ \t]+[^\s,.;:!?]+){1,5}$",
    I,
)
# a participle of setting after the value ("das Passwort auf sonnenblume geändert", "het wachtwoord op X gezet")
_SET_AFTER = frozenset("geändert gesetzt gestellt umgestellt gezet veranderd gewijzigd ingesteld".split())
_TO_VERBS = frozenset(
    """expire expires lapse change rotate reset renew update refresh work fail match sync apply default persist
    remain stay be become include contain require reflect comply follow meet pass unlock open protect secure log
    login sign access something anything nothing""".split()
)
_INFINITIVE = Lazy(r".{3,}(?:ar|er|ir|re)")  # "para caducar", "a scadere", "à expirer"
_INFINITIVE_EN = Lazy(r".{2,}(?:ize|ise|ify)")  # "to randomize"
_WITH_BEFORE = Lazy(
    r"(?<![^\W\d_])(?:with|using|via|avec|mit|con|com|met|med)"
    r"(?:[ \t]+(?:the|a|an|le|la|les|das|dem|den|der|einem|el|o|il|het|de|lo|un|una|um|uma))?[ \t]+$",
    I,
)
_LABEL_HEADS = frozenset(
    """manager managers reset resets protection auth authentication login logon signin prompt prompts policy policies
    rule rules requirement requirements hint hints hash hashes hashing salt change changes rotation expiry expiration
    strength length complexity recovery file files store storage vault entry entries input box dialog form page screen
    option options flag flags mode setting settings history generator checker validator encryption security
    credentials credential field fields owner holder value format age lifetime quality score character characters
    digits letters words reuse sharing leak leaks breach list lists database table column key keys text string only
    less free based protected prompted spray spraying cracking guessing sync self entropy type kind size name label
    scope status state origin source purpose meaning fallback backup support access use usage prompt timeout lockout
    lock unlock retry aging instead alone anyway either otherwise please""".split()
)
_HEAD_SUFFIX = Lazy(r".{3,}(?:tion|sion|ment|ity|ness|ance|ence|ship|ings|ers|ors|ies|ing)")
# days, months and time words: "the password is Monday" says when, not what
_TIME_WORDS = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun
    january february march april june july august september october november december jan feb mar apr jun jul aug
    sep sept oct nov dec today tonight tomorrow yesterday midnight noon midday weekend weekends weekday weekdays
    morning mornings evening evenings afternoon afternoons night nights overnight week month year quarter hour
    lundi mardi mercredi jeudi vendredi samedi dimanche janvier février fevrier mars avril mai juin juillet août aout
    septembre octobre novembre décembre decembre demain aujourd'hui hier ce soir minuit midi matin semaine mois an
    montag dienstag mittwoch donnerstag freitag samstag sonnabend sonntag januar jänner februar märz april mai juni
    juli august oktober dezember morgen heute gestern mitternacht mittag abend wochenende woche monat jahr
    lunes martes miércoles miercoles jueves viernes sábado sabado domingo enero febrero marzo abril mayo junio julio
    agosto septiembre setiembre octubre noviembre diciembre mañana manana hoy ayer medianoche mediodía semana mes año
    segunda terça terca quarta quinta sexta sábado janeiro fevereiro março marco maio junho julho setembro outubro
    novembro dezembro amanhã amanha hoje ontem meia-noite meio-dia
    lunedì lunedi martedì martedi mercoledì mercoledi giovedì giovedi venerdì venerdi sabato domenica gennaio
    febbraio aprile maggio giugno luglio settembre ottobre dicembre domani oggi ieri mezzanotte mezzogiorno settimana
    maandag dinsdag woensdag donderdag vrijdag zaterdag zondag januari februari maart mei augustus oktober
    morgen vandaag gisteren middernacht weekend
    måndag tisdag onsdag torsdag fredag lördag söndag mars maj augusti imorgon idag igår midnatt helgen""".split()
)
_QUALIFIED_PASS = Lazy(
    r"(?<![^\W\d_])(?:wi-?fi|wlan|router|network|hotspot|modem|vpn|ssh|admin|root|db|database|e-?mail|login|ftp|"
    r"server|laptop|computer)[ \t-]?pass(?![\w'’-])",
    I,
)


def _clause_opens(text: str, start: int) -> bool:
    """Does the label at ``start`` open its clause: at most three words since the clause began (the text's start,
    a mark of _CLAUSE_MARKS, a dash or a conjunction), none a function word ("Password is …", "WiFi password is …",
    "login is bob, password is …")?"""
    lo = max(0, start - 60)
    cut = max(text.rfind(c, lo, start) for c in _CLAUSE_MARKS)
    if cut < 0:
        if lo > 0:
            return False
        cut = -1
    words = text[cut + 1 : start].split()
    for i in range(len(words) - 1, -1, -1):
        if words[i].lower() in _CONJUNCTIONS or words[i] in "-–—":
            words = words[i + 1 :]
            break
    # round 13: a number or time phrase may open the clause ("Room 12 password is …", "As of 2026-11-28 password
    # is …", "From today password is …"): at most three words up to its number or time word
    for i in range(min(len(words), 4) - 1, -1, -1):
        w = words[i].lower().strip("'’#")
        if w in _TIME_WORDS or w[:1].isdigit():
            words = words[i + 1 :]
            break
    return len(words) <= 3 and not any(w.lower().strip("'’") in _FUNCTION_WORDS or not w.replace("-", "").isalpha() for w in words)


# a bare label's value read in the language of the preposition before it ("mit Passwort geschützt", "avec mot de
# passe oublié"); German writes nouns capitalised, so a lower-case word after "mit Passwort" is a verb ("anmelden")
_WITH_COPULA = {"mit": "ist", "avec": "est", "con": "es", "com": "é", "met": "is", "med": "är"}
_GERMAN_VERB = Lazy(r"[a-zäöüß]{2,}(?:en|ern|eln|t)")


def _label_noun(word: str, english: bool) -> bool:
    """A noun the label qualifies ("password manager", "the password's length", "with password attempts"), or an
    adverb ("with password instead"), not a value."""
    w = word.lower()
    if "-" in w or english and word.islower() and w.endswith("s") and not w.endswith("ss"):
        return True  # "with password re-use", "password attempts": a compound or a plural head
    return w in _LABEL_HEADS or _HEAD_SUFFIX.get().fullmatch(w) is not None


# round 13: a colon after a label of any language opens a value as "Password:" does in English ("Passwort: mandarine",
# "Mot de passe: mandarine", "пароль: tangerine"); its language, told by the label, gives the predicate endings
_LABEL_COPULA = (
    ("passwort", "ist"), ("kennwort", "ist"), ("mot", "est"), ("contrase", "es"), ("senha", "é"), ("wachtwoord", "is"),
    ("lösenord", "är"), ("losenord", "är"), ("парол", "ru"), ("passw", "is"),
)  # fmt: skip
_COPULA_LANGUAGE = {
    "will be": "is", "would be": "is", "has been": "is", "wird": "ist", "sera": "est", "será": "es", "sarà": "è",
    "wordt": "is", "blir": "är",
}  # fmt: skip
# what a value stated after a colon is followed by: the end of its clause
_COLON_END = Lazy(r"[ \t]*+(?:[.,;!?)\n]|$)")
# a form's action after a colon label: a German separable or prefixed infinitive, a French infinitive in -er
_COLON_VERB = {
    "ist": Lazy(r"(?:zurück|an|ab|auf|ein|aus|um|ver|be|er|ent|zer|ge|nach|fest|ä|ü)[a-zäöüß]{2,}(?:en|ern|eln)"),
    "est": Lazy(r"[a-zéèêàâîôûç]{3,}(?:er|ir)"),
}
# words an owner's password is set to by default, a value whatever their word class ("the password is changeme")
_DEFAULT_VALUES = frozenset("secret changeme changeit letmein".split())
# words that point elsewhere ("Passwort: siehe unten")
_POINTERS = frozenset("siehe unten oben voir ci-dessous ci-dessus ver abajo arriba zie hieronder hierboven se nedan ovan".split())


def _label_copula(label: str) -> str:
    low = label.lower()
    return next((c for head, c in _LABEL_COPULA if low.startswith(head)), "")


def stated_word_spans(text: str) -> Iterator[Span]:
    """Passwords of plain words stated in prose after a password label (see above)."""
    labels = _label_bounds(text)
    if "pass" in text.lower() and _QUALIFIED_PASS.get().search(text) is not None:
        labels = tuple(sorted({*labels, *(m.span() for m in _QUALIFIED_PASS.get().finditer(text))}))
    for lstart, end in labels:
        m = _STATED_AFTER.get().match(text, end)
        if m is None:
            continue
        frame = "s" if m.group("s") else "to" if m.group("to") else "bare" if m.group("bare") is not None else ""
        if frame == "bare":
            # "with password Tangerine": the value right after the label, a preposition before it
            if text[end : m.start("v")].strip() or _WITH_BEFORE.get().search(text, max(0, lstart - 30), lstart) is None:
                continue
        elif frame == "s":
            if m.start("s") != end:
                continue
        elif frame == "to":
            sm = _SET_BEFORE.get().search(text, max(0, end - 70), end)
            if sm is None or (m.group("to").lower() == "to") != bool(sm.group("en")):
                if not _SET_AFTER.intersection(w.lower() for w in m.group("v").split()[1:3]):
                    continue
        colon = m.group("colon") is not None
        opened = False  # no owner: the label opens its clause ("Password is tangerine")
        if not m.group("set") and frame not in ("bare", "to") and _STATED_BEFORE.get().search(text, max(0, end - 60), end) is None:
            if not ((m.group("c") or frame == "s" or colon) and _clause_opens(text, lstart)):
                continue
            opened = True
        copula = " ".join((m.group("c") or "").lower().split())
        copula = _COPULA_LANGUAGE.get(copula, copula)
        if colon:
            copula = _label_copula(text[lstart:end])
            if _CJK.get().search(m.group("v")) or any(w.lower() in _POINTERS for w in m.group("v").split()):
                continue  # "密码: 错误" (no spaced words), "Passwort: siehe unten" (a pointer)
            verb = _COLON_VERB.get(copula)
            if verb is not None and verb.get().fullmatch(m.group("v").lower()):
                continue  # "Passwort: Zurücksetzen", "Mot de passe: modifier": an action of a form
        words = m.group("v").split()
        start = m.start("v")
        if frame == "bare":
            prep = _WITH_BEFORE.get().search(text, max(0, lstart - 30), lstart)
            copula = _WITH_COPULA.get(prep.group().split()[0].lower(), "") if prep is not None else ""
            if copula == "ist" and _GERMAN_VERB.get().fullmatch(words[0]):
                continue  # "mit Passwort anmelden", "mit Passwort geschützt"
        if m.group("q"):
            close = m.end("v")
            if text[close : close + 1] in "\"'”’»“" and close < len(text) and len(m.group("v")) >= 4:
                if not placeholder_value(m.group("v")):
                    yield start, close, "password"
            continue
        run: list[str] = []
        for w in words:
            if w.lower().strip("'’") in _FUNCTION_WORDS:
                break
            run.append(w)
        if frame == "to" and len(run) > 1 and run[-1].lower() in _SET_AFTER:
            run.pop()  # "auf sonnenblume geändert": the participle after the value
            words = run
        default = len(run) == 1 and run[0].lower() in _DEFAULT_VALUES and bool(copula) and not colon
        if default and _COLON_END.get().match(text, start + len(run[0])) is None:
            continue  # "the password is secret and …": said about it
        if not run or len(run) > 4 or len(run) == len(words) == 6 or _predicate(run[-1], copula) and not default:
            continue
        if len(run) > 1 and (
            _PREDICATE_SUFFIX.get().fullmatch(run[0].lower()) or run[0].lower() in _PREDICATE_WORDS and _ING.get().fullmatch(run[0].lower())
        ):
            continue  # "is pending approval", "is rotated weekly": a verb form opens it ("correct horse": an adjective may)
        if any(w.lower() in _TIME_WORDS for w in run) and all(w.lower() in _TIME_WORDS or _predicate(w, copula) for w in run):
            continue  # "the password is Monday", "is due Friday" (when)
        if any(w.lower().endswith(("'s", "’s")) for w in run):
            continue  # "the password is Bob's" (whose)
        if frame in ("s", "bare") and (len(run) > 2 or any(_label_noun(w, copula in ("", "is")) for w in run)):
            continue  # "the password's length", "with password manager": a noun the label qualifies
        if (opened or frame in ("s", "bare", "to")) and len(run) < len(words) and words[len(run)].lower() not in _VALUE_ENDS:
            continue  # "to expire in 90 days", "'s hash is stored", "Password is king when …": a stated value ends its clause
        if frame == "to" and (
            run[0].lower() in _TO_VERBS
            or m.group("to").lower() != "to"
            and _INFINITIVE.get().fullmatch(run[0].lower())
            or m.group("to").lower() == "to"
            and _INFINITIVE_EN.get().fullmatch(run[0].lower())
        ):
            continue  # "set the password to expire", "para caducar": an infinitive
        value = " ".join(run)
        if colon and _COLON_END.get().match(text, start + len(value)) is None:
            continue  # "Passwort: mindestens 8 Zeichen": a value after a colon ends its clause
        # round 13: a capitalised word of three letters is a name ("The password is Rex."), not a time word ("Sun")
        short = len(value) == 3 and value.istitle() and value.lower() not in _TIME_WORDS and bool(m.group("c"))
        if len(value) < 4 and not short or any(w.isupper() and len(w) > 1 for w in run) or placeholder_value(value) and not default:
            continue
        yield start, start + len(value), "password"


# a number right after a password label, or after the particle that makes it a subject ("비밀번호 12049",
# "现관 비밀번호는 482913", "门禁密码 4821", "password 12049"): a PIN-style password given bare
_DIGIT_AFTER = Lazy(r"[ \t]*+(?:[는은이가]|は|が|是|为|為|:|：)?[ \t]*+(?P<d>\d{4,10})(?![\d.,:/-]*\d)")
ADO_GATE = ("devops", "dev.azure", "visualstudio.com")
_ADO_PAT = Lazy(r"(?<![A-Za-z0-9])[a-z2-7]{52}(?![A-Za-z0-9])")
# a value after a service name that says it is the one reused ("Netflix: same as always, X", "Hulu — the usual: X")
SAME_GATE = ("same", "usual", "old one")
_SAME_AS = Lazy(
    r"\b(?:(?:the\s+)?same(?:\s+one)?\s+as\s+(?:always|usual|before|ever|last\s+time|everywhere)|(?:the|as)\s+usual(?:\s+one)?"
    r"|still\s+the\s+(?:old|same)\s+one)\b[ \t]*[,:;—–-][ \t]*[\"'“‘«]?(?P<v>[^\s\"'“”‘’«»`]{6,64})",
    I,
)
# a value mixing a script written without spaces with digits and a symbol at its end ("日本語パス99!", "Пароль77#")
_SCRIPT_VALUE = Lazy(r"[^\W\d_A-Za-z]{1,12}\d{2,6}[!-/:-@\[-`{-~]{0,3}")  # letters of another script than Latin


def _bare_digits(text: str, end: int) -> Iterator[Span]:
    m = _DIGIT_AFTER.get().match(text, end)
    if m is None or _RUN_END.get().match(text, m.end()) is None:
        return
    d = m.group("d")
    if len(set(d)) > 1 and not (len(d) == 4 and d[:2] in ("19", "20")):  # not "0000", not a year
        yield m.start("d"), m.end("d"), "password"


def _seed_groups(v: str) -> bool:
    """A base32 seed in six or more groups of four with few digits ("uvsx hdld ikms ujwh mwdb vszo …"): random letters,
    hence few vowels, unlike words of four letters."""
    groups = v.split()
    core = "".join(groups).lower()
    return len(groups) >= 6 and sum(c in "aeiou" for c in core) * 4 <= len(core)


def cjk_clause(v: str) -> bool:
    """Is ``v`` a clause in a script written without spaces (5+ CJK characters, or CJK punctuation) rather than a value?"""
    return len(_CJK.get().findall(v)) > 4 or any(c in "。、，！？" for c in v)


# round 8: a length in a password rule ("8文字以上", "12자 이상", "8位"), not a value
_LENGTH_RULE = Lazy(r"\d{1,3}(?:文字|字符|字|位|個|个|자|桁)")


def _password_like(v: str) -> bool:
    """A password written in prose: letters mixed with digits or symbols, not a path, URL, file, version or id."""
    if not 5 <= len(v) <= 64 or "://" in v or _ASSIGNMENT.get().match(v) or "@" in v[1:-1] and "." in v.split("@")[-1]:
        return False  # "=" inside a password ("Rtd92*=Hz…") is a symbol; "name=value" is an assignment
    if _CJK.get().search(v) and (cjk_clause(v) or not any(c.isdigit() for c in v) or _LENGTH_RULE.get().match(v)):
        return False  # "密码长度至少为8位": a sentence in a script without spaces, not a value ("パス6748#" is one)
    if (
        v[0] in "/~$%{.#@"
        or _PW_LABEL.get().search(v)
        or _PW_NAMED.get().search(v)
        or _DOTTED_ID.get().fullmatch(v)
        and not _DOTTED_PHRASE.get().fullmatch(v)
        or _FILE.get().fullmatch(v)
    ):
        return False
    if re.fullmatch(r"v?\d+(?:[.\-]\d+)+[a-z]?|\d+|\d{1,2}:\d{2}(?::\d{2})?|[a-z]+[-_]\d{1,4}", v, I):
        return False
    letters = sum(c.isalpha() for c in v)
    digits = sum(c.isdigit() for c in v)
    symbols = len(v) - letters - digits
    if letters == 0:
        return False
    return digits > 0 or symbols > 0 and any(c.isupper() for c in v)


_FOLD_EXTRA = {"đ": "d", "ł": "l", "ø": "o", "ı": "i", "ß": "s"}


@functools.lru_cache(maxsize=4096)
def _fold_char(c: str) -> str:
    d = unicodedata.normalize("NFD", c)
    if len(d) > 1 and d[0].isascii() and all(unicodedata.combining(x) for x in d[1:]):
        return d[0]
    return _FOLD_EXTRA.get(c, c)


def fold_accents(text: str) -> str:
    """``text`` with each accented Latin letter replaced by its base letter, one character for one (offsets hold)."""
    return text if text.isascii() else "".join(map(_fold_char, text))


def _after_label(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    g = "v" if m.group("v") is not None else "w"
    if any(w.strip(",:：'’") in _NOT_VALUE_WORDS for w in text[m.start() : m.start(g)].lower().split()):
        return None  # "the password is stored hashed with argon2id": the words say where or how, not what
    raw = text[m.start(g) : m.end(g)]
    value = raw.rstrip(".,;!?:")
    if _password_like(value) or _PASSPHRASE.get().fullmatch(value):
        # a "!" typed right after the value is part of it ("Girasole42!"); a "." or "?" after it ends the sentence
        tail = raw[len(value) :]
        return m.start(g), m.start(g) + len(value) + len(tail) - len(tail.lstrip("!"))
    return None


_CONNECTS = Lazy(r"\s(?:is|was|=|are|be|est|ist|es|é)\s", I)
_BEFORE_LABEL = Lazy(
    rf"(?<![\w])(?P<v>[^\s\"'`<>()\[\]{{}}]{{5,64}})[\"']?[ \t]+(?:is|was|=|are|will\s+be|est|ist|es|é)[ \t]+(?:the|my|our|your|his|her|le|la|das|mein|el|o|a)?[ \t]*(?:[a-z]{{2,12}}[ \t]+){{0,2}}(?:{PASSWORD_LABELS})(?!\w)",
    I,
)
_SPLIT_CUE = Lazy(
    r"(?:starts?\s+with|begins?\s+with|ends?\s+with|first\s+(?:half|part)|second\s+(?:half|part)|last\s+(?:half|part)|"
    r"rest\s+is|part\s+\d)[ \t]*[:：]?[ \t]*(?P<v>[^\s\"'`<>()\[\]{}]{4,64})",
    I,
)
_SPLIT_LABEL = Lazy(rf"(?:{PASSWORD_LABELS}|\bpin\b|passphrase|card\s+number|\bseed\b)", I)
_RESET_TO = Lazy(
    r"\b(?:reset|changed?|set)\s+(?:it|the\s+password|(?:his|her|their|your|my)\s+password|the\s+pw|pw)\s+to\s+(?P<v>[^\s\"'`<>()\[\]{}]{6,64})",
    I,
)
_USER_SLASH = Lazy(
    r"(?:\buse|\bwith|\blogin|\bcreds?|\bcredentials)[ \t:]+[\w.@+-]{2,40}[ \t]*/[ \t]*(?P<v>[^\s\"'`<>()\[\]{}/]{6,64})",
    I,
)
_CODE = Lazy(
    rf"(?:(?:\b(?:{CODE_CUES})\w{{0,8}}[ \t-]?(?:code|pin|kod|código|codice|код|combination)\b)|\b(?:{CODE_CUES})\b[^\n.;]{{0,30}}?\b(?:code|pin|kod|código|codice|combination)\b|\b(?:pin|code)\s+(?:de\s+la\s+|du\s+|der\s+|da\s+|del\s+)?(?:{CODE_CUES})\w*(?:\s+(?:est|is|ist|é|es))?)"
    r"[ \t]*[:：=#]?[ \t]*(?:is|est|ist|é|es|lautet)?[ \t]*[*#]?(?P<v>\d{4,8})(?![\d.,:/-]\d)",
    I,
)
_NOT_CODE = Lazy(
    r"\b(?:error|status|zip|postal|post|area|country|http|exit|return|response|reason|promo|discount|coupon|"
    r"iso|sort|swift|branch|source|line|op|char|color|hs|tariff|dial|airport|station|course|class|country)\W{0,3}$",
    I,
)
_CVV = Lazy(rf"(?:{CVV_CUES})[^\d\n]{{0,30}}?(?P<v>\d{{3,4}})(?!\d)", I)
_CARD_MARK = Lazy(r"\[REDACTED:card_number\]|(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_SECQ = Lazy(
    r"security\s+(?:question|answer)|secret\s+question|question\s+secrète|sicherheitsfrage|pregunta\s+(?:de\s+seguridad|secreta)|"
    r"pergunta\s+de\s+segurança|maiden\s+name|nom\s+de\s+jeune\s+fille|first\s+(?:pet|school|car|teacher)|"
    r"(?:city|town)\s+(?:where\s+)?you\s+were\s+born|street\s+you\s+grew\s+up|favou?rite\s+(?:teacher|food|book)|"
    # a question about the asker's past: "what street did you grow up on?", "which school did you first attend?"
    r"\b(?:what|which|where|who)\b[^\n?]{0,40}?\byou(?:r)?\b[^\n?]{0,40}?(?:gr[eo]w(?:n)?\s+up|born|first|childhood|maiden|"
    r"pet|school|street|teacher|best\s+friend|honeymoon|met\s+your)[^\n?]{0,30}\?|"
    r"memorable\s+(?:word|phrase|information|answer|place|date|name)|nom\s+de\s+(?:votre|ton|ta)\s+(?:premi|école|ecole|mère|animal|rue)|"
    r"nombre\s+de\s+tu\s+(?:primer|primera|escuela|madre|calle)|name\s+(?:deines|Ihres|deiner|Ihrer|des|der)\s+(?:ersten|Grundschule|Mutter)|"
    r"erste[sn]?\s+haustier\w*|mädchenname\w*",
    I,
)
_ANSWER = Lazy(
    r"(?:\bA\s*[:：]|\banswer\s*[:：]|\bréponse\s*[:：]|\brespuesta\s*[:：]|\bantwort\s*[:：]|\bresposta\s*[:：]|[—–]|"
    r"\bI\s+(?:put|used|wrote|chose)|\bis|[)?'’\"”]\s*[:：]|(?<=\s)=|→|->|=>|⇒)[ \t]*",
    I,
)
_OTP_CUE = Lazy(r"\b(?:2fa|mfa|totp|otp|authenticator|two[- ]factor|zwei-faktor|setup[ -]key)\b", I)
_BASE32 = Lazy(r"(?<![\w])(?P<v>[A-Z2-7]{16,64}=*|[a-z2-7]{4}(?:[ ][a-z2-7]{4}){3,15}|[A-Z2-7]{4}(?:[ ][A-Z2-7]{4}){3,15})(?![\w])")
_LINE_COLON = Lazy(r"[^\n:：]{1,80}[:：]")
_BACKUP = Lazy(r"\b(?:backup|recovery|wiederherstellungs|secours|respaldo|recuperação)[ \t-]?(?:codes?|kódy|codici)\b[ \t]*[:：]?", I)
_CODE_ITEM = Lazy(
    r"[ \t,;\n•*-]*(?P<v>\d{4}[ -]?\d{4}|[a-z0-9]{4,5}(?:-[a-z0-9]{4,5}){1,3}|\d{6,10})(?![\w-])", I
)  # round 8: three or four groups too ("TUPJ-9I4I-I2JY", Bitwarden/Proton style)
_HEADER_SECRET = Lazy(
    rf"(?:{PASSWORD_LABELS}|mot_de_passe|contrasena|cvv2?|cvc|csc|secret\w*|token|api_?key|pin|\w*_password|\w*_passwd|plain_?password)",
    I,
)
_INSERT = Lazy(r"INSERT\s+INTO\s+\S+\s*\((?P<cols>[^()\n]{1,500})\)\s*VALUES\s*\((?P<vals>[^()\n]{1,2000})\)", I)
_NAMED_PAIR = Lazy(
    r"(?:define|setenv|putenv|set|config\.set|ini_set)\s*\(\s*['\"](?P<k>[\w.-]{2,60})['\"]\s*,\s*['\"](?P<v>[^'\"\n]{4,200})['\"]"
    r"|<key>(?P<k2>[^<]{2,60})</key>\s*<string>(?P<v2>[^<\n]{4,200})</string>"
    r"|[\"']name[\"']\s*:\s*[\"'](?P<k3>[^\"'\n]{2,60})[\"']\s*,\s*[\"']value[\"']\s*:\s*[\"'](?P<v3>[^\"'\n]{4,400})[\"']",
    I,
)
_SECRET_NAME = Lazy(
    r"pass(?:word|wd)?|pwd|secret|token|api_?key|apikey|private_?key|auth|sess(?:ion)?_?id|sessid|sid\b|credential|access_?key", I
)
_QUOTED_KV = Lazy(
    r"(?<![\w])(?P<k>[A-Za-z_][A-Za-z0-9_]{0,40}(?:Token|Secret|Password|Passwd|ApiKey|AccessKey|PrivateKey|_token|_secret|_password|_api_key))"
    r"[\"']?[ \t]*[:=][ \t]*(?P<q>[\"'])(?P<v>[^\"'\n\\]{8,200})(?P=q)"
)
_SCHEME = Lazy(r"\{(?:PLAIN|CLEAR|CLEARTEXT|PLAINTEXT)\}(?P<v>[^\s:]{4,128})", I)
_CRED_CALL = Lazy(
    r"\b\w*(?:Credential|Credentials|BasicAuth|Login|Auth|Password)\w*\s*\((?P<args>[^()\n]{4,400})\)",
)
_QUOTED = Lazy(r"[\"']([^\"'\n]{1,200})[\"']")
_STDIN = Lazy(
    r"\b(?:echo|printf)[ \t]+(?:-[ne][ \t]+)?(?P<q>['\"]?)(?P<v>[^\s'\"|;<>()]{4,128})(?P=q)[ \t]*(?:\|[ \t]*(?:sudo[ \t]+-S|\S{1,40}[^\n|]{0,200}?(?:--password-stdin|--stdin|-S\b|chpasswd|passwd)))",
)
_PASS_SUBST = Lazy(r"(?:pass\w{0,12}|\s-p)[= \t]+<\((?:echo|printf)[ \t]+['\"]?(?P<v>[^\s'\"|;<>()]{4,128})", I)
_ARCHIVE_FLAG = Lazy(r"\b(?:zip|unzip|7za?|rar|unrar|zipcloak)\b[^\n|;]{0,200}?[ \t](?:-P[ \t]+|-p)(?P<v>[^\s'\"-][^\s'\"]{3,127})")
_USERLIST = Lazy(r"(?m)^\"[\w.@-]{1,64}\"[ \t]+\"(?P<v>[^\"\n]{6,200})\"[ \t]*$")
_WRAPPED = Lazy(
    r"(?m)^[ \t]*[A-Za-z_][\w.-]{0,60}(?:KEY|TOKEN|SECRET|key|token|secret)[\"']?[ \t]*[:=][ \t]*\n(?P<v>(?:[ \t]*[A-Za-z0-9+/_=-]{30,}[ \t]*(?:\n|$)){2,8})"
)
_IBAN_START = Lazy(r"[A-Z]{2}\d\d")
_IBAN = Lazy(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?(?![A-Za-z0-9])")
_ROUTING = Lazy(r"\b(?:routing|aba|rtn|transit)\b[^\n\d]{0,30}?(?P<v>\d{9})(?!\d)", I)
_ACCOUNT = Lazy(r"\baccount\s*(?:number|no\.?|#|nr)|\bacct\b|kontonummer|numéro\s+de\s+compte", I)
# a value quoted in a report that it leaked and must be revoked or rotated ("someone pasted `…` in the channel; please
# revoke and rotate"): whatever its shape, the report says it is a live credential
LEAK_GATE = ("revok", "rotate", "leak", "compromis", "exposed")
_LEAK = Lazy(
    r"\b(?:revok\w*|rotat\w*|leak\w*|compromised|exposed)\b[^\n]{0,300}?\b(?:token|key|secret|password|credential|pat)s?\b|"
    r"\b(?:token|key|secret|password|credential|pat)s?\b[^\n]{0,300}?\b(?:revok\w*|rotat\w*|leak\w*|compromised|exposed)\b",
    I,
)
_BACKTICKED = Lazy(r"`(?P<v>[^`\s/]{16,200})`")


def _leaked_spans(text: str) -> Iterator[Span]:
    for m in _BACKTICKED.get().finditer(text):
        v = m.group("v")
        if "@" in v and "." in v.split("@")[-1] or not any(c.isdigit() for c in v) or not any(c.isalpha() for c in v):
            continue  # an e-mail address, a name, a number: not the credential
        if _VERSIONISH.get().fullmatch(v) or v.startswith(("$", "{", "<")) or _NAMED_KEY.get().search(v):
            continue  # a version, ticket, file or reference; the credential's name ("billing-api-key-2024"), not its value
        yield m.start("v"), m.end("v"), "secret"


_VERSIONISH = Lazy(r"v?\d+(?:\.\d+)+\S*|[A-Z][A-Z0-9]*-\d+|[\w.-]+\.(?:py|js|ts|go|rs|json|ya?ml|env|txt|md)(?::\d+)?", I)
_NAMED_KEY = Lazy(r"key|token|secret|pass|cred|api|prod|staging|\bdev|test|name|user|admin|service|account", I)
_DASHED_HINT = Lazy(r"\d-\d\d[ \t]*[/,|;][ \t]*\d{8}|\d{6}-\d{6}-\d{6}")
_DASHED_NUMBER = Lazy(r"(?<![\w-])(?:(?P<r>\d{6}(?:-\d{6}){7})|\d{2}-\d{2}-\d{2}[ \t]*[/,|;][ \t]*(?P<a>\d{8}))(?![\w-])")
_WIDE_CARD = Lazy(r"(?<!\d)\d{4}(?:[ ]{2,3}\d{4}){3}(?!\d)")
_URL_CODE = Lazy(
    r"[?&](?:code|token|auth|otp|key|magic|login_token|access_token|ticket|signature|sig)=(?P<v>[A-Za-z0-9_\-.~%]{16,400})",
    I,
)
_USERINFO = Lazy(r"://(?P<v>[0-9a-f]{24,64}|[A-Za-z0-9_-]{32,64}):[^@\s/]{4,}@", I)
_TELEGRAM = Lazy(r"(?<![A-Za-z0-9])(?:bot)?(?P<v>\d{6,12}:AA[A-Za-z0-9_-]{30,40})(?![A-Za-z0-9_-])")
_BIP39_LINE = Lazy(r"(?m)^[^\n:]{0,20}[:：][ \t]*(?P<v>[a-z]{3,8}(?:[ \t]+[a-z]{3,8}){2,23})[ \t]*$")

# every country that issues IBANs (a failed check spares an IBAN-shaped value only when its country is one of these)
IBAN_COUNTRIES = frozenset(
    "AD AE AL AT AZ BA BE BG BH BI BR BY CH CR CY CZ DE DJ DK DO EE EG ES FI FK FO FR GB GE GI GL GR GT HN HR HU IE IL "
    "IQ IS IT JO KW KZ LB LC LI LT LU LV LY MC MD ME MK MN MR MT MU NI NL NO OM PK PL PS PT QA RO RS RU SA SC SD SE SI "
    "SK SM SO ST SV TL TN TR UA VA VG XK YE".split()
)
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "EE": 20,
    "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GR": 27, "HR": 21, "HU": 28, "IE": 22, "IS": 26, "IT": 27, "LI": 21,
    "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18, "NO": 15, "PL": 28, "PT": 25, "RO": 24, "SA": 24,
    "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TR": 26,
}  # fmt: skip


def iban_shaped(v: str) -> bool:
    """Could ``v`` be an IBAN at all: a country that issues them and (where known here) that country's length."""
    s = v.replace(" ", "")
    return s[:2] in IBAN_COUNTRIES and (len(s) == _IBAN_LENGTHS[s[:2]] if s[:2] in _IBAN_LENGTHS else 15 <= len(s) <= 34)


def _iban_valid(v: str) -> bool:
    s = v.replace(" ", "")
    if _IBAN_LENGTHS.get(s[:2]) != len(s):
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _aba_ok(d: str) -> bool:
    n = [int(c) for c in d]
    return sum(w * x for w, x in zip((3, 7, 1) * 3, n, strict=True)) % 10 == 0 and len(set(d)) > 2


def _luhn(d: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(d)):
        x = int(c) * (2 if i % 2 else 1)
        total += x - 9 if x > 9 else x
    return total % 10 == 0


_HEADER_SECRET_IN = Lazy(r"pass|mot_de|contras|senha|cvv|cvc|csc|secret|token|key|pin", I)
_HEADER_LINE = Lazy(r"(?m)^[ \t\"'`|]*+[A-Za-z_][\w.-]{0,39}+(?:[ \t\"'`]*+[,;\t|][ \t\"'`]*+[A-Za-z_][\w.-]{0,39}+){1,30}+[ \t\"'`|]*+$")


def _header_cells(line: str) -> tuple[str, list[str]] | None:
    for sep in (",", ";", "\t", "|"):
        if line.count(sep) >= 1:
            return sep, [c.strip().strip("\"'`").strip() for c in line.split(sep)]
    return None


def _table_spans(text: str) -> Iterator[Span]:
    heads = [h for h in _HEADER_LINE.get().finditer(text) if _HEADER_SECRET_IN.get().search(h.group())]
    if not heads:
        return  # a header: short names and separators only, one of them naming a secret
    lines = text.split("\n")
    offs = [0]
    for ln in lines:
        offs.append(offs[-1] + len(ln) + 1)
    for h in heads:
        i = bisect_right(offs, h.start()) - 1
        head = lines[i]
        cells = _header_cells(head)
        if cells is None:
            continue
        sep, names = cells
        cols = [j for j, n in enumerate(names) if n and _HEADER_SECRET.get().fullmatch(n.replace(" ", "_"))]
        if not cols or len(names) < 2 or any(len(n) > 40 for n in names):
            continue
        for k in range(i + 1, min(len(lines), i + 200)):
            row = lines[k]
            if row.count(sep) != head.count(sep):
                break
            pos = offs[k]
            for j, cell in enumerate(row.split(sep)):
                c = cell.strip().strip("\"'`")
                ok = _password_like(c) or c.isdigit() and 3 <= len(c) <= 8
                if j in cols and ok and " " not in c and not re.fullmatch(r"[*x•.#-]+|null|none|n/a", c, I):
                    s = pos + cell.index(c)
                    yield s, s + len(c), "password"
                pos += len(cell) + 1


def _insert_spans(text: str) -> Iterator[Span]:
    for m in _INSERT.get().finditer(text):
        cols = [c.strip().strip("`\"[]' ") for c in m.group("cols").split(",")]
        vals = list(re.finditer(r"'((?:[^'\\]|\\.|'')*)'|[^,\s]+", m.group("vals")))
        if len(vals) != len(cols):
            continue
        base = m.start("vals")
        for c, v in zip(cols, vals, strict=True):
            if _HEADER_SECRET.get().fullmatch(c) and v.group(1) and len(v.group(1)) >= 3:
                yield base + v.start(1), base + v.end(1), "password"


# round 12: an answer to a security question is a name or a noun ("Rex", "Maple Avenue", "a Honda Civic", "pizza");
# after a marker that prose also writes ("It is …", "—"), words of no capital holding a function word ("a long
# story", "hard to say", "the same place") or a predicate ("complicated") are a reply about the question instead.
_EXPLICIT_ANSWER = Lazy(r"\bA\s*[:：]|\banswer\s*[:：]|\bréponse\s*[:：]|\brespuesta\s*[:：]|\bantwort\s*[:：]|\bresposta\s*[:：]", I)


def _narrative(answer: str) -> bool:
    words = answer.split()
    if any(w[:1].isupper() and w != "I" for w in words):
        return False
    low = [w.lower().strip("'’") for w in words]
    return (
        any(w in _FUNCTION_WORDS for w in low) or len(low) == 1 and (_predicate(low[0], "is") or _ING.get().fullmatch(low[0]) is not None)
    )


def _secq_spans(text: str) -> Iterator[Span]:
    for q in _SECQ.get().finditer(text):
        line_end = text.find("\n", q.end())
        line_end = len(text) if line_end < 0 else line_end
        seg = text[q.end() : line_end]
        last = None
        for a in _ANSWER.get().finditer(seg):
            last = a
        if last is None:
            continue
        rest = seg[last.end() :]
        qm = re.match(r"[\"“«]([^\"”»\n]{2,60})[\"”»]", rest) or re.match(r"['‘]([^'’\n]{2,60})['’]", rest)
        if qm is not None:
            s = q.end() + last.end() + qm.start(1)
            yield s, s + len(qm.group(1)), "password"
            continue
        am = re.match(r"((?:(?:Mr|Mrs|Ms|Dr|St|Sr|Jr)\.[ \t]*)?[^\W\d][^\n,;!?\"]{1,40}?)[ \t]*(?:[.,;!?]|$)", rest)
        if am is not None and len(am.group(1).split()) <= 4:
            if _EXPLICIT_ANSWER.get().match(last.group()) is None and _narrative(am.group(1)):
                continue  # "Where did you first meet? It is a long story.": a reply, not an answer
            s = q.end() + last.end()
            yield s, s + len(am.group(1).rstrip()), "password"


# --- round 6: codes by what they open, relayed one-time codes, values re-set, spelt out, or split ---------------------
# a code noun that needs no qualifier: a PIN, a verification / one-time code, in many languages
_STRONG_CODE = (
    r"\bpin(?:[\s-]?(?:code|nummer|number|no))?\b|पिन|\bпин(?:[\s-]?код)?|الرقم\s+السري|رمز\s+(?:pin|التحقق|الدخول)|暗証番号|"
    r"验证码|驗證碼|認証コード|確認コード|인증\s*번호|verification\s+code|confirmation\s+code|login\s+code|sign[\s-]?in\s+code|"
    r"one[\s-]time\s+(?:code|pass(?:word|code)?|pin)|\botp\b|\b2fa\s+code|auth(?:entication)?\s+code|bestätigungscode|"
    r"verifizierungscode|einmal(?:code|passwort)|anmeldecode|sicherheitscode|código\s+(?:de\s+)?(?:verificación|verificação|"
    r"confirmación|confirmação|acceso|acesso|seguridad|segurança)|code\s+de\s+(?:vérification|confirmation|validation|"
    r"connexion|sécurité)|codice\s+(?:di\s+)?(?:verifica|conferma|accesso|sicurezza|otp)|код\s+(?:подтверждения|из\s+смс|"
    r"доступа|входа)|kod\s+(?:weryfikacyjny|potwierdzenia|sms|dostępu)|doğrulama\s+kodu|verificatiecode|"
    r"mã\s+(?:xác\s+(?:minh|nhận)|otp|pin)|\bkeypad\b|\block\s?box\b|\bkey\s?safe\b|\bcombo\b|"
    r"رمز\s+(?:ال)?(?:باب|بوابة|البوابة|خزنة|الخزنة|إنذار|الإنذار|قفل|القفل)"
)
# what a code opens, in many languages (a door, a gate, an alarm, a safe, a phone, a card …)
CODE_QUALIFIERS = (
    r"gate|door|garage|lockbox|lock|locker|keypad|alarm|safe|entry|entrance|access|building|apartment|flat|house|front|"
    r"voicemail|mailbox|padlock|intercom|buzzer|storage|atm|debit|bank|card|sim|phone|tür|tuer|tor|garagen|tresor|"
    r"schließfach|schliessfach|zugang\w*|haus|wohnung|briefkasten|porta|portone|cancello|allarme|cassaforte|lucchetto|"
    r"citofono|bancomat|carta|porte|portail|alarme|coffre|cadenas|interphone|digicode|boîte|carte|puerta|portón|alarma|"
    r"caja\s+fuerte|candado|buzón|tarjeta|cajero|portão|cofre|cadeado|cartão|сейф\w*|двер\w*|домофон\w*|подъезд\w*|"
    r"калитк\w*|ворот\w*|сигнализаци\w*|замк\w*|ячейк\w*|банкомат\w*|карт\w*|sejf\w*|drzwi|alarm\w*|kapı|kasa|deur|kluis|poort|bram\w*|portal|furtk\w*|garaż\w*|"
    # round 9: Polish for intercom, locker, padlock
    r"domofon\w*|skrytk\w*|kłódk\w*"
)
_CODE_NOUN = Lazy(
    rf"(?P<strong>{_STRONG_CODE})|(?P<compound>\b(?:{CODE_QUALIFIERS}|port|dörr|grind|larm)\w{{0,6}}(?:code|kod|kode)(?:n|en|u|e)?\b)|"
    # round 9: "clave" (Spanish: the code of a gate, "clave del portón: 598059") with what it opens on its line
    r"(?P<bare>\b(?:code|codes|kod|kode|código|codigo|codice|код|combination|combo|clave|(?:ş|s)ifre(?:si)?)\b)",
    I,
)
_QUALIFIER = Lazy(rf"\b(?:{CODE_QUALIFIERS})\b", I)
# the words between a code noun and its digits that make the digits something else (a count, a time, a suffix …)
_CODE_GAP_NOT = Lazy(
    r"\b(?:ending|ends|last|final|digits?|minutes?|mins?|seconds?|hours?|days?|characters?|chars?|long|length|attempts?|"
    r"tries|error|status|expires?|valid|every|room|page|line|step|version|order|ticket|invoice|zip|postal|area|http|"
    r"until|year|number\s+ending|sent\s+to|reference|ref|ticket|extension|ext|model|part)\b",
    I,
)
# round 9: or a dial combination in pairs ("bike lock combo 33-32-26")
_CODE_DIGITS = Lazy(r"(?<![\w.,/-])(?P<v>\d{4,8}|\d{1,2}(?:-\d{1,2}){2,3})(?!\d|[.,:/-]\d)")
_AFTER_UNIT = Lazy(
    r"[ \t]*(?:digits?|characters?|chars|minutes?|mins?|seconds?|secs?|hours?|days?|times|bytes|px|ms|%|€|\$|km|kg|users|"
    r"people|points|dollars|euros|rupees|files|photos|messages|items|rows|lines|records|words|steps|mal|fois|veces)\b",
    I,
)
_POSTAL_LINE = Lazy(r"postal|post[ \t]+office|pincode|\bzip\b|address|district|courier|delivery", I)
_YEAR_GAP = Lazy(r"\b(?:in|for|since|of|from|until|by|to|around|circa|seit|depuis|desde|dal|с)\W*$", I)
# a one-time code relayed by whoever received it ("the bank just texted me 547953")
_RELAY = Lazy(
    r"\b(?:texted|text(?:ed)?[ \t]+me|sms(?:'?d|ed)?|messaged|sent[ \t]+(?:me|us)|gave[ \t]+me)\b"
    r"[^\d\n]{0,30}?(?<![\w.,/-])(?P<v>\d{4,8})(?!\d|[.,:/-]\d)"
    r"(?=[ \t]*(?:$|[\n.,;:!?)\]\"'—–-]|(?:and|or|but|so|then|to|please|type|enter|use|for|now|quick|quickly|asap|if|which|that)\b))",
    I,
)
CODE_NOUN_GATE = ("code", "pin", "kod", "código", "codice", "код", "combination", "पिन", "пин", "الرقم", "رمز", "暗証", "验证", "驗證", "認証", "確認", "인증", "keypad", "lockbox", "lock box", "keysafe",
                  "key safe", "combo", "şifre", "sifre", "clave")  # fmt: skip
RELAY_GATE = ("texted", "text me", "sms", "messaged", "sent me", "sent us", "gave me")


def code_spans(text: str, low: str) -> Iterator[Span]:
    """4–8 digits after a code noun that needs no qualifier (PIN, verification code, Bestätigungscode, पिन, الرقم السري),
    or after a code noun with what it opens within a few words on its line ("Codice allarme: 97302", "код от сейфа —
    3007", "Türcode für die Ferienwohnung ist 9319"), the words between saying nothing else; a relayed one-time code."""
    if _CODE_DIGITS.get().search(text) is None:
        return
    for m in _CODE_NOUN.get().finditer(text):
        if m.group("bare") is not None:
            line_start = text.rfind("\n", 0, m.start()) + 1
            line_end = text.find("\n", m.end())
            line_end = len(text) if line_end < 0 else line_end
            q = _QUALIFIER.get().search(text, max(line_start, m.start() - 30), min(line_end, m.end() + 30))
            if q is None or _NOT_CODE.get().search(text, max(0, m.start() - 12), m.start()):
                continue
        gap_end = min(len(text), m.end() + 48)
        nl = text.find("\n", m.end(), gap_end)
        d = _CODE_DIGITS.get().search(text, m.end(), nl if nl >= 0 else gap_end)
        if d is None:
            continue
        gap = text[m.end() : d.start()]
        if any(c.isdigit() for c in gap) or _CODE_GAP_NOT.get().search(gap) or _AFTER_UNIT.get().match(text, d.end()):
            continue
        v = d.group("v")
        if len(v) == 6 and m.group().lower().startswith("pin") and _POSTAL_LINE.get().search(text, max(0, m.start() - 60), d.end() + 60):
            continue  # India's "PIN code" of a post office or an address is a postal code
        if len(v) == 4 and v[:2] in ("19", "20") and _YEAR_GAP.get().search(gap):
            continue  # "the PIN policy since 2019": a year
        yield d.start("v"), d.end("v"), "pin"
    if _any(low, RELAY_GATE):
        for m in _RELAY.get().finditer(text):
            if not _AFTER_UNIT.get().match(text, m.end("v")):
                yield m.start("v"), m.end("v"), "pin"


# a password (or PIN) re-set to a new value, in several languages, with its label earlier on the line
_RESET_ANY = Lazy(
    r"\b(?:reset|changed?|set|updated|restablec\w*|cambi\w*|actualiz\w*|zurückgesetzt|geändert|gesetzt|réinitialis\w*|"
    r"modifi\w*|chang[ée]\w*|redefinid\w*|alterad\w*|reimpostat\w*|сброшен\w*|измен[её]н\w*|установлен\w*|ustawion\w*|"
    r"zmienion\w*|gewijzigd|ingesteld|sıfırlandı|değiştirildi)[ \t]+(?:it[ \t]+)?(?:to|a|auf|in|à|en|pour|para|на|als|na|op)"
    r"[ \t]*[:：]?[ \t]*[\"'“‘«]?(?P<v>[^\s\"'`<>()\[\]{}“”«»]{4,64})",
    I,
)
_RESET_LABEL = Lazy(rf"(?:{PASSWORD_LABELS})|\bpin\b|\bcode\b|\bpasscode\b", I)
RESET_GATE = ("reset", "chang", "set ", "updated", "restabl", "cambi", "actualiz", "zurück", "geänder", "gesetzt", "réinit",
              "modifi", "redefin", "alterad", "reimpost", "сброш", "измен", "установ", "ustawion", "zmienion", "gewijzigd",
              "ingesteld", "sıfırla", "değiştir")  # fmt: skip


def reset_spans(text: str) -> Iterator[Span]:
    for m in _RESET_ANY.get().finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        labels = list(_RESET_LABEL.get().finditer(text, max(line_start, m.start() - 100), m.start()))
        if not labels:
            continue
        label = labels[-1]
        v = m.group("v").rstrip(".,;!?:\"'”»")
        pin = label.group().lower() in ("pin", "code", "passcode")
        if pin and v.isdigit() and 4 <= len(v) <= 8 or not pin and _password_like(v) and v.lower() not in _NOT_VALUE_WORDS:
            yield m.start("v"), m.start("v") + len(v), "password"


# a value spelt out one character at a time after a password cue ("it's _ 8 q o 3 A N t 6 c 6 N z")
_SPELT = Lazy(r"(?<!\S)\S(?:[ ]\S){5,63}(?!\S)")


def spelt_spans(text: str, labels: list[re.Match[str]]) -> Iterator[Span]:
    for lab in labels:
        line_end = text.find("\n", lab.end())
        line_end = len(text) if line_end < 0 else line_end
        m = _SPELT.get().search(text, lab.end(), min(line_end, lab.end() + 160))
        if m is None:
            continue
        joined = m.group().replace(" ", "")
        if any(c.isdigit() for c in joined) and any(c.isalpha() for c in joined) or _password_like(joined):
            yield m.start(), m.end(), "password"


# a card number given in parts (over two or three messages): runs of 4+ digits whose joined digits are a card
_DIGIT_RUN = Lazy(r"(?<![\w.,/-])\d{4}(?:[ -]?\d{2,4}){0,3}(?![\w]|[.,/-]\d)")
_CARD_WORD = Lazy(r"\b(?:card|karte|tarjeta|carte|cartão|carta|kart\w*|карт\w*)\b|カード|卡", I)
_CARD_IIN = Lazy(r"4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|6(?:011|5|4[4-9]|2)|35(?:2[89]|[3-8])|3(?:0[0-5]|[689])")


CARD_GATE = ("card", "kart", "tarjeta", "carte", "cartão", "carta", "карт", "カード", "卡")


def split_card_spans(text: str) -> Iterator[Span]:
    if _CARD_WORD.get().search(text) is None:
        return
    runs = [m for m in _DIGIT_RUN.get().finditer(text)]
    for i, first in enumerate(runs):
        parts = [first]
        digits = re.sub(r"\D", "", first.group())
        for nxt in runs[i + 1 : i + 3]:
            if nxt.start() - parts[-1].end() > 300 or len(digits) >= 13:
                break
            parts.append(nxt)
            digits += re.sub(r"\D", "", nxt.group())
            if 13 <= len(digits) <= 19 and len(set(digits)) > 2 and _CARD_IIN.get().match(digits) and _luhn(digits):
                for p in parts:
                    yield p.start(), p.end(), "card_number"
                break


# identity numbers named by a label whose value has few digits: a passport (German "CKFJ0FVCY"), India's PAN
_PASSPORT = Lazy(
    r"(?:passport|reisepass\w*|passnummer|passeport|pasaporte|passaporto|paspoort|pasaport\w*|paszport\w*|паспорт\w*|"
    r"旅券|护照|護照|여권|पासपोर्ट|جواز\s+السفر|f(?:ü|u)hrerschein\w*|driv(?:er|ing)['’]?s?\s+licen[cs]e|"
    # round 10: identity cards by their names in their languages ("Personalausweis-Nr.", "Carta d'identità n.")
    r"personalausweis\w*|ausweisnummer|carta\s+d['’]identit(?:à|a)|carte\s+d['’]identit(?:é|e)|"
    r"documento\s+de\s+identidad|identiteitskaart|dow(?:ó|o)d\s+osobist\w*)"
    r"(?:\s*(?:number|no\.?|nr\.?|#|nummer|num(?:é|e)ro|n(?:ú|u)mero|номер))?"
    r"[^\n\d]{0,30}?(?<![A-Za-z0-9])(?-i:(?P<v>(?=[A-Z0-9]{6,12}(?![A-Za-z0-9]))(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6,12}))"
    r"(?![A-Za-z0-9])",
    I,
)
_PAN = Lazy(
    r"(?:\bPAN\b|\bpan\s+(?:card|number|no)|permanent\s+account\s+number|पैन)[^\n]{0,30}?"
    r"(?<![A-Za-z0-9])(?P<v>[A-Z]{3}[ABCFGHLJPT][A-Z]\d{4}[A-Z])(?![A-Za-z0-9])"
)
ID_GATE = ("passport", "reisepass", "passnummer", "passeport", "pasaporte", "passaporto", "paspoort", "pasaport", "paszport",
           "паспорт", "旅券", "护照", "護照", "여권", "पासपोर्ट", "جواز", "führerschein", "fuhrerschein", "licen", "pan", "पैन",
           "ausweis", "identit", "identidad", "dowód", "dowod")  # fmt: skip


def id_spans(text: str, low: str) -> Iterator[Span]:
    for m in _PASSPORT.get().finditer(text):
        v = m.group("v")
        if not _DOC_WORD.get().search(v) and len(set(v)) > 3 and not v.isdigit() or v.isdigit() and len(v) >= 8:
            yield m.start("v"), m.end("v"), "national_id"
    if "pan" in low or "पैन" in low or "permanent" in low:
        for m in _PAN.get().finditer(text):
            yield m.start("v"), m.end("v"), "national_id"


# a password hash bound to its user wherever the line is quoted ("ops:$2y$10$…", "bob:$apr1$…", "root:$6$…"):
# an htpasswd or shadow entry, offline-crackable
_USER_HASH = Lazy(
    r"(?<![\w$./-])[\w.@-]{1,64}:(?P<v>\$2[abxy]?\$\d\d\$[./A-Za-z0-9]{53}|\$apr1\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}|"
    r"\$[156y]\$[./A-Za-z0-9=]{1,32}\$[./A-Za-z0-9]{22,86}|"
    # round 8: LDAP/htpasswd schemes, salted or not ("{SHA}" was missed: the old pattern read "{SSH}" or "{SSHA}")
    r"\{(?:S?SHA(?:256|384|512)?|S?MD5|CRYPT)\}[A-Za-z0-9+/.$]{22,120}={0,2})"
)


# a value after an arrow on a line that names a secret ("AZURE_OPENAI_API_KEY found in src/x.py:41 -> ca73…")
_ARROW_VALUE = Lazy(r"(?:->|=>|→|⟶|⇒)[ \t]*[\"'`]?(?P<v>[^\s\"'`<>()\[\]{}]{12,200})")
_SECRET_IDENT = Lazy(
    r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)*[_.-]?(?:API[_-]?KEY|SECRET(?:[_-]?KEY)?|TOKEN|PASSWORD|PASSWD|"
    r"ACCESS[_-]?KEY|PRIVATE[_-]?KEY|api[_-]?key|secret|token|password|apiKey|Secret|Token|Password)(?![A-Za-z0-9])"
)


def arrow_spans(text: str) -> Iterator[Span]:
    for m in _ARROW_VALUE.get().finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if _SECRET_IDENT.get().search(text, max(line_start, m.start() - 300), m.start()) is None:
            continue
        v = m.group("v").rstrip(".,;:")
        digits = sum(c.isdigit() for c in v)
        letters = sum(c.isalpha() for c in v)
        if len(v) >= 16 and digits >= 3 and letters >= 3 and "/" not in v and "." not in v.strip("."):
            yield m.start("v"), m.start("v") + len(v), "secret"


def _bip39_split(text: str) -> Iterator[Span]:
    from agent_memory.redaction.bip39 import WORDS

    found = [m for m in _BIP39_LINE.get().finditer(text) if all(w in WORDS for w in m.group("v").split())]
    if sum(len(m.group("v").split()) for m in found) >= 12 and len(found) >= 2:
        for m in found:
            yield m.start("v"), m.end("v"), "seed_phrase"


def _any(low: str, words: tuple[str, ...]) -> bool:
    for w in words:
        if w in low:
            return True
    return False


# per-rule literal gates (lower-case): a rule runs only on a text holding one of its words
PW_GATE = (
    "pass", "parol", "пар", "κωδικ", "סיסמ", "पासवर्ड", "sandi", "รหัส", "رمز", "كلمة", "nenosiri", "senha", "contrase",
    "kennwort", "wachtwoord", "senord", "sord", "salasana", "heslo", "hasl", "hasło", "sifre", "şifre", "jelsz", "lozink",
    "geslo", "密", "口令", "パスワード", "비밀", "암호", "mật", "khau", "pw", "laluan", "adgang", "পাসওয়ার্ড",
    "memorable", "secret word", "mot mémorable", "mot memorable", "palabra secreta",
)  # fmt: skip
CODE_GATE = ("code", "pin", "kod", "código", "codice", "код", "combination")
CVV_GATE = (
    "cvv", "cvc", "csc", "cv2", "code", "código", "codigo", "codice", "kod", "код", "prüf", "segur", "sécur", "crypto", "sicurezza", "コード", "码", "코드", "безопас",
    "back", "rück", "ruck", "dos", "atr", "reverso", "verso", "retro", "оборот", "सीवी", "رمز", "背面", "裏面", "뒷면",
)  # fmt: skip
SECQ_GATE = (
    "memorable",
    "nom de",
    "nombre de",
    "name deines",
    "name ihres",
    "name des",
    "haustier",
    "mädchenname",
    "security",
    "secret",
    "secrète",
    "maiden",
    "jeune fille",
    "first pet",
    "first school",
    "first car",
    "first teacher",
    "born",
    "grew up",
    "favo",
    "frage",
    "pregunta",
    "pergunta",
)
OTP_GATE = ("2fa", "mfa", "otp", "authenticator", "two", "zwei", "setup key", "setup-key")
BACKUP_GATE = ("backup", "recovery", "wiederherstell", "secours", "respaldo", "recupera")
SPLIT_GATE = ("with", "half", "part", "rest is")
HEADER_GATE = ("pass", "mot_de", "contras", "senha", "cvv", "cvc", "csc", "secret", "token", "key", "pin")
NAMED_GATE = ("define", "setenv", "putenv", "set(", "<key>", "name", "ini_set")
KV_GATE = ("token", "secret", "passw", "apikey", "api_key", "accesskey", "privatekey")
CLI_GATE = ("{plain}", "{clear", "echo", "printf", "zip", "7z", "rar", '" "')
CRED_GATE = ("credential", "auth", "login", "password")
# the union: a text holding none of these (and no checksummed number) gets nothing from this module
TRIGGERS = tuple(
    dict.fromkeys(
        PW_GATE
        + CODE_GATE
        + CVV_GATE
        + SECQ_GATE
        + OTP_GATE
        + BACKUP_GATE
        + SPLIT_GATE
        + HEADER_GATE
        + NAMED_GATE
        + KV_GATE
        + CLI_GATE
        + LEAK_GATE
        + CRED_GATE
        + ("reset", "chang", "set ", " / ", "insert", "account", "acct", "?", "&")
        + CODE_NOUN_GATE
        + RELAY_GATE
        + RESET_GATE
        + SAME_GATE
        + ADO_GATE
    )
)


@functools.lru_cache(maxsize=8)
def _pw_gated(text: str) -> bool:
    return _any(text.lower(), PW_GATE)


@functools.lru_cache(maxsize=8)
def _label_values(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each value after a password label (computed once per text: the merge pass reads it again)."""
    low = text.lower()
    # matched on the lower-cased text when case folding keeps offsets (faster than IGNORECASE), its accents folded
    # ("mật khẩu" -> "mat khau", "contraseña" -> "contrasena"): a label typed with or without them is one label
    same = len(low) == len(text)
    low = fold_accents(low)
    out = []
    for m in (_PW_VALUE_LOW.get() if same else _PW_VALUE.get()).finditer(low if same else text):
        found = _after_label(text, m)
        if found is not None:
            out.append(found)
    return tuple(out)


def cue_spans(text: str) -> Iterator[Span]:
    """Secret spans found by the cue families and structural positions of this module (see the module docstring)."""
    # checksummed numbers need no cue
    if _IBAN_START.get().search(text):
        for m in _IBAN.get().finditer(text):
            if _iban_valid(m.group()):
                yield m.start(), m.end(), "iban"
    if "-" in text:
        # shapes no public number has: a BitLocker recovery key (eight groups of six digits); a UK sort code with the
        # account number after it ("62-64-79 / 10026623")
        for m in _DASHED_NUMBER.get().finditer(text) if _DASHED_HINT.get().search(text) else ():
            yield (m.start("r"), m.end("r"), "password") if m.group("r") else (m.start("a"), m.end("a"), "national_id")
    if "  " in text:
        for m in _WIDE_CARD.get().finditer(text):
            if _luhn(re.sub(r"\D", "", m.group())):
                yield m.start(), m.end(), "card_number"
    low = text.lower()
    if "`" in text and _any(low, LEAK_GATE) and _LEAK.get().search(text) is not None:
        yield from _leaked_spans(text)
    if _any(low, CARD_GATE):
        yield from split_card_spans(text)
    if _any(low, ID_GATE):
        yield from id_spans(text, low)
    if ":$" in text or ":{" in text:
        for m in _USER_HASH.get().finditer(text):
            yield m.start("v"), m.end("v"), "password"
    if ("->" in text or "=>" in text or "→" in text or "⇒" in text or "⟶" in text) and _any(low, KV_GATE + ("key",)):
        yield from arrow_spans(text)
    if _pw_gated(text):
        for s, e in _label_values(text):
            yield s, e, "password"
        yield from word_passphrase_spans(text)
        yield from stated_word_spans(text)
        if " " in text and _SPELT.get().search(text) is not None:
            yield from spelt_spans(text, list(_PW_LABEL.get().finditer(text)))
        for m in _PW_LABEL.get().finditer(text) if _CONNECTS.get().search(text) else ():
            if not _CONNECTS.get().search(text, max(0, m.start() - 40), m.start()):
                continue
            bm = _BEFORE_LABEL.get().search(text, max(0, m.start() - 120), m.end())
            if bm is not None:
                v = bm.group("v").rstrip(".,;!?:\"'")
                if _password_like(v) and v.lower() not in _NOT_VALUE_WORDS:
                    yield bm.start("v"), bm.start("v") + len(v), "password"
    if _any(low, ADO_GATE):
        # round 8: an Azure DevOps PAT (52 characters of lower-case base32) anywhere in a text that names Azure DevOps
        # (a table row "| Azure DevOps | `…` |", a git remote, a pipeline log), whatever labels it
        for m in _ADO_PAT.get().finditer(text):
            if sum(c.isdigit() for c in m.group()) >= 3:
                yield m.start(), m.end(), "token"
    if _any(low, SAME_GATE):
        for m in _SAME_AS.get().finditer(text):
            v = m.group("v").rstrip(".,;:!?)")
            if pw_like(v) and "://" not in v and not v.startswith(("/", "~", "$", "{", "<")):
                yield m.start("v"), m.start("v") + len(v), "password"
    for gate, pattern in (((" to ",), _RESET_TO), ((" / ", "/ "), _USER_SLASH)):
        if _any(low, gate):
            for m in pattern.get().finditer(text):
                v = m.group("v").rstrip(".,;!?:\"'")
                if _password_like(v) and v.lower() not in _NOT_VALUE_WORDS:
                    yield m.start("v"), m.start("v") + len(v), "password"
    if _any(low, SPLIT_GATE):
        splits = list(_SPLIT_CUE.get().finditer(text))
        if len(splits) >= 2 or splits and _SPLIT_LABEL.get().search(text):
            for m in splits:
                v = m.group("v").rstrip(".,;!?:")
                if text[m.end() : m.end() + 1] == "…" or text[m.end() : m.end() + 3] == "..." or v.endswith("…"):
                    continue  # "starts with eyJhbGciOi…": a shown prefix, not a part
                if _password_like(v) or v.isdigit() and len(v) >= 4:
                    yield m.start("v"), m.start("v") + len(v), "password"
    if _any(low, RESET_GATE):
        yield from reset_spans(text)
    if _any(low, CODE_NOUN_GATE) or _any(low, RELAY_GATE):
        yield from code_spans(text, low)
    if _any(low, CODE_GATE):
        for m in _CODE.get().finditer(text):
            if not _NOT_CODE.get().search(text, max(0, m.start() - 12), m.start() + 1 + m.group().find(" ")):
                yield m.start("v"), m.end("v"), "pin"
    if _any(low, CVV_GATE) and _CARD_MARK.get().search(text):
        for m in _CVV.get().finditer(text):
            yield m.start("v"), m.end("v"), "card_number"
    if _any(low, SECQ_GATE) or "?" in text and "you" in low:
        yield from _secq_spans(text)
    if _any(low, OTP_GATE):
        for b in _BASE32.get().finditer(text):
            line_start = text.rfind("\n", 0, b.start()) + 1
            cue = _OTP_CUE.get().search(text, max(line_start, b.start() - 60), b.start())
            if placeholder_value(b.group("v")):
                continue  # "secret=BASE32SECRET" in a how-to
            if cue and (sum(c.isdigit() for c in b.group("v")) >= 2 or _seed_groups(b.group("v"))):
                yield b.start("v"), b.end("v"), "secret"
    if _any(low, BACKUP_GATE):
        for m in _BACKUP.get().finditer(text):
            pos = m.end()
            if _CODE_ITEM.get().match(text, pos) is None:
                # round 8: the cue goes on before its colon ("Recovery codes for the Bitwarden account (keep offline): …")
                colon = _LINE_COLON.get().match(text, pos)
                if colon is not None and _CODE_ITEM.get().match(text, colon.end()) is not None:
                    pos = colon.end()
            if _CODE_ITEM.get().match(text, pos) is None:
                # the cue is a heading or a file name: the list starts on the next non-empty line
                nl = text.find("\n", pos, pos + 60)
                pos = nl if nl >= 0 else pos
            for _ in range(20):
                c = _CODE_ITEM.get().match(text, pos)
                if c is None:
                    break
                yield c.start("v"), c.end("v"), "secret"
                pos = c.end()
    if "\n" in text and _any(low, HEADER_GATE):
        yield from _table_spans(text)
    if "insert" in low:
        yield from _insert_spans(text)
    if _any(low, NAMED_GATE):
        for m in _NAMED_PAIR.get().finditer(text):
            k = m.group("k") or m.group("k2") or m.group("k3") or ""
            g = "v" if m.group("k") else ("v2" if m.group("k2") else "v3")
            if _SECRET_NAME.get().search(k) and not re.fullmatch(r"[*x•.#]+|\$\{?\w+\}?|<[^>]*>", m.group(g)):
                yield m.start(g), m.end(g), "secret"
    if ('"' in text or "'" in text) and _any(low, KV_GATE):
        for m in _QUOTED_KV.get().finditer(text):
            v = m.group("v")
            if " " not in v.strip() and any(c.isdigit() for c in v) and not re.fullmatch(r"\$\{?\w+\}?|<[^>]*>|\{\{.*\}\}", v):
                yield m.start("v"), m.end("v"), "secret"
    if _any(low, CLI_GATE):
        for pattern in (_SCHEME, _STDIN, _PASS_SUBST, _ARCHIVE_FLAG, _USERLIST):
            for m in pattern.get().finditer(text):
                if not m.group("v").startswith("$"):
                    yield m.start("v"), m.end("v"), "password"
    if "(" in text and _any(low, CRED_GATE):
        for m in _CRED_CALL.get().finditer(text):
            args = list(_QUOTED.get().finditer(m.group("args")))
            if len(args) >= 2:
                last = args[-1]
                if _password_like(last.group(1)) and " " not in last.group(1):
                    s = m.start("args") + last.start(1)
                    yield s, s + len(last.group(1)), "password"
    if ("routing" in low or "aba" in low or "rtn" in low or "transit" in low) and _ACCOUNT.get().search(text):
        # a routing number alone is public (it names the bank); beside an account number, it is not
        for m in _ROUTING.get().finditer(text):
            if _aba_ok(m.group("v")):
                yield m.start("v"), m.end("v"), "national_id"
    if "=" in text and ("?" in text or "&" in text):
        for m in _URL_CODE.get().finditer(text):
            v = m.group("v")
            if any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
                yield m.start("v"), m.end("v"), "token"
    if "\n" in text and (": " in text or ":\t" in text):
        yield from _bip39_split(text)


# a prefixed token wrapped over the lines below it ("hf_VXAtl…\nHNLPSdK…\nRXYtIq…"): its continuation lines
_WRAPPED_TOKEN = Lazy(
    r"(?m)^[ \t]*(?P<head>[a-z]{2,8}[_-][A-Za-z0-9_-]{6,80})[ \t]*\n(?P<rest>(?:[ \t]*[A-Za-z0-9_-]{6,80}[ \t]*(?:\n|$)){1,6})"
)


_WRAPPED_GATE = Lazy(r"[a-z][_-][A-Za-z0-9_-]{6,80}[ \t]*\n[ \t]*[A-Za-z0-9_-]{6,80}[ \t]*(?:\n|$)")


def _wrapped_token_spans(text: str) -> Iterator[Span]:
    for m in _WRAPPED_TOKEN.get().finditer(text):
        lines = m.group("rest").split("\n")
        pieces = [ln.strip() for ln in lines if ln.strip()]
        if not pieces or not all(token_like(p) and not p.isdigit() for p in pieces) or not token_like(m.group("head")):
            continue
        if any(re.fullmatch(r"[a-z]{2,8}[_-]\S+", p) for p in pieces):
            continue  # a list of several prefixed tokens, each whole
        end = m.start("rest") + len(m.group("rest").rstrip("\n"))
        yield m.start("head"), end, "token"


CHUNK_GATE = ("chunk", "piece", "part", "split", "bits", "line", "teil", "morceau", "trozo")
_CHUNK_WORD = Lazy(r"chunk|piece|part|split|bits|per\s+line|each\s+line|line\s+by\s+line|Teil|morceau|trozo|partes", I)
_LINE_TOKEN = Lazy(r"[ \t]*(\S{1,40})[ \t]*(?=\n|$)")


def _chunked_spans(text: str) -> Iterator[Span]:
    """A password typed in chunks, one per line, below its label line ("password, one chunk per line:\\naAvSk\\nML0KZ\\n…
    \\nF"): the first line's token absorbs the lines below while they are chunks of its length (the last may be shorter)."""
    for lab in _PW_LABEL.get().finditer(text):
        pos = text.find("\n", lab.end())
        if pos < 0 or not text[lab.end() : pos].rstrip().endswith((":", "：")):
            continue
        if _CHUNK_WORD.get().search(text, lab.start(), pos) is None:
            continue  # the line says it is split ("one chunk per line"); a list of names below a label is not
        first = _LINE_TOKEN.get().match(text, pos + 1)
        if first is None or not 3 <= len(first.group(1)) <= 16:
            continue
        size, start, end, chunks, pos = len(first.group(1)), first.start(1), first.end(1), 0, first.end()
        while pos < len(text) and text[pos] == "\n":
            m = _LINE_TOKEN.get().match(text, pos + 1)
            if m is None or len(m.group(1)) > size or m.group(1).endswith((":", "：")):
                break
            end, chunks, pos = m.end(1), chunks + 1, m.end()
            if len(m.group(1)) < size:
                break  # the short last chunk
        if chunks >= 2:
            yield start, end, "password"


def extend_spans(text: str) -> Iterator[Span]:
    """Whole secrets of which other rules find a part: a key wrapped over the lines below its label, a URL userinfo whose
    user is itself a key, a Telegram bot token with its bot id, a password after its label of which another rule took
    the head up to a symbol ("AVCv" of "AVCv*pIh4WBNUc") (the engine merges these with what they overlap)."""
    if ("*" in text or "=" in text or "|" in text) and _pw_gated(text):
        for s, e in _label_values(text):
            if any(c in "*=|" for c in text[s:e]):
                yield s, e, "password"
    if "\n" in text and _pw_gated(text) and _any(text.lower(), CHUNK_GATE):
        yield from _chunked_spans(text)
    if "\n" in text and _WRAPPED_GATE.get().search(text) is not None:
        yield from _wrapped_token_spans(text)
    if "=\n" in text or ":\n" in text:
        for m in _WRAPPED.get().finditer(text):
            yield m.start("v"), m.end("v") - (1 if m.group("v").endswith("\n") else 0), "secret"
    for gate, pattern in (("@", _USERINFO), (":AA", _TELEGRAM)):
        if gate in text:
            for m in pattern.get().finditer(text):
                v = m.group("v")
                if any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
                    yield m.start("v"), m.end("v"), "token"


# --- sparing by cause -----------------------------------------------------------------------------------------------
_DIGEST_TOKEN = Lazy(r"(?:sha(?:1|224|256|384|512)|md5|blake2[bs]?|sha3-\d{3})[-:=][A-Za-z0-9+/=_-]{16,}", I)
_ARMOUR = Lazy(r"-{3,}[ \t]*BEGIN[ \t]+PGP[ \t]+(?:SIGNATURE|PUBLIC KEY BLOCK|SIGNED MESSAGE)-{3,}[\s\S]*?(?:-{3,}[ \t]*END[^\n]*|$)")
_DATA_URI = Lazy(r"data:(?:font|image|audio|video)/[\w.+-]+(?:;[\w=.-]+)*;base64,[A-Za-z0-9+/=]+", I)
_CERT_KEY = Lazy(
    r"[\"'](?:x5c|x5t(?:#S256)?|certificate|cert|certs|x509\w*|ca_?cert\w*|chain)[\"']\s*:\s*\[?\s*(?:[\"'][A-Za-z0-9+/=]*[\"']\s*,\s*)*[\"']?$",
    I,
)
_THUMB_KEY = Lazy(r"[\"'](?:x5t(?:#S256)?|x5u|kid|jku|thumbprint|fingerprint)[\"']\s*:\s*[\"']$", I)
_ID_HEADER = Lazy(
    r"(?m)^[ \t]*(?:x-[\w-]*?)?(?:id(?:-\d)?|request-?id|requestid|trace-?id|span-?id|correlation-?id|cf-ray|ray|etag|traceparent|x-amz-id-2|x-amz-cf-id|"
    # a webhook's signature header signs one payload ("X-Twilio-Signature", "X-Shopify-Hmac-Sha256")
    r"[\w-]*-signature(?:-\d+)?|[\w-]*-hmac(?:-sha\d+)?)[ \t]*:[ \t]*$",
    I,
)
_SHARE_PATH = Lazy(
    r"/(?:d|document|file|files|folders|spreadsheets|presentation|forms|commit|commits|blob|tree|gist|watch|video|videos|p|post|posts|status|item|items|dp|issues|pull|pages|board|boards)/$",
    I,
)
_CALL = Lazy(r"[a-z_][A-Za-z0-9_.]{1,30}\(\s*[A-Za-z_][\w:., ]{0,60}\)")
_DOC_HOST = Lazy(r"(?:[\w-]+\.)*example(?:\.(?:com|org|net))?(?![\w.-]*\.[a-z])|[\w.-]+\.(?:test|invalid|example)\b", I)
_DOC_WORD = Lazy(r"(?:EXAMPLE|EXAMPLEKEY|example|SAMPLE|DUMMY|PLACEHOLDER)$")
_ASSERT = Lazy(
    r"\b(?:assert\w*|expect|should|assertEqual|assert_eq!?)\b[^\n]*\b(?:sign|hmac|digest|hash|sha\d*|md5|checksum|hexdigest)\w*\s*\(", I
)


# round 6: public by role or by what the value is
# a public id named by its label right before it (Twilio's Account SID, an OAuth client id, a tenant id …)
_PUBLIC_LABEL = Lazy(
    r"(?:\b(?:account|acct)[\s_-]*sid|\bclient[\s_-]?id|\btenant[\s_-]?id|\bsubscription[\s_-]?id|"
    r"\bproject[\s_-]?(?:id|number)|\bpublishable[\s_-]?key|\bpublic[\s_-]?key|\bsite[\s_-]?key)[\s\"'`]{0,3}[:=]?[\s\"'`]{0,3}$",
    I,
)
# keys that name no credential: a cache/row/partition key, an idempotency key, a translation key …
_NOT_SECRET_KEY = Lazy(
    r"\b(?:cache|primary|partition|sort|foreign|composite|row|range|hash|shard|routing|lookup|dedup(?:e|lication)?|"
    r"idempotency|i18n|translation|object|map|dict(?:ionary)?|registry|unique|index|redis|s3|bucket|react|list|json|"
    r"musical|keyboard|hot|short(?:cut)?)[\s_-]key\s*[:=]\s*[\"'`]?$",
    I,
)
# a type in an annotation or a schema (``password: SecretStr``, ``token: Optional[str]``)
_TYPE_NAME = Lazy(
    r"Secret(?:Str|Bytes|String)?|SecureString|Optional\[\w+\]|str|bytes|string|String|char\[\]|byte\[\]|text|varchar(?:\(\d+\))?",
)
# a call on a path: ``std::env::var(…)``, ``os.environ.get(…)``, ``config.get(…)``
_PATH_CALL = Lazy(r"[A-Za-z_]\w*(?:(?:::|\.)[A-Za-z_]\w*)+\(?")
_SIZE_AFTER = Lazy(r"[ \t]*(?:bytes?|chars?|characters|digits|letters|symbols|B|KB|KiB)\b")
_B64_JSON = Lazy(r"eyJ[A-Za-z0-9+/_-]{8,}={0,2}|W3[A-Za-z0-9+/_-]{8,}={0,2}")
_SECRET_WORDS = r"pass|secret|token|key|auth|cred|\bpin\b|signature|\bsig\b|session|cookie|pwd|private|bearer"
_SECRET_WORD = Lazy(_SECRET_WORDS, I)


_PUBLIC_PEM = Lazy(r"-----BEGIN (?:CERTIFICATE|TRUSTED CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|X509 CRL|CERTIFICATE REQUEST)-----")


def _public_pem_b64(v: str) -> bool:
    """Does base64 ``v`` decode to PEM blocks that are all public (certificates, public keys), with no private key?"""
    body = v.rstrip("=")
    try:
        pem = base64.b64decode(body + "=" * (-len(body) % 4)).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return False
    return _PUBLIC_PEM.get().match(pem) is not None and "PRIVATE" not in pem and "SECRET" not in pem


def _payload_json(v: str) -> bool:
    """Base64 of a JSON object or array that names no credential: an event payload, not a key (a JWT has dots)."""
    import base64
    import binascii
    import json

    try:
        raw = base64.urlsafe_b64decode(v.replace("+", "-").replace("/", "_").rstrip("=") + "=" * (-len(v.rstrip("=")) % 4))
        decoded = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(decoded, (dict, list)) and not _SECRET_WORD.get().search(json.dumps(decoded))


def _counting_bytes(v: str) -> bool:
    if not re.fullmatch(r"[0-9a-fA-F]{16,128}", v) or len(v) % 2:
        return False
    b = bytes.fromhex(v)
    step = (b[1] - b[0]) % 256
    return b[0] == 0 and step in (1, 0x11) and all((b[i + 1] - b[i]) % 256 == step for i in range(len(b) - 1))


_CUED = Lazy(
    rf"{_SECRET_WORDS}|api|bearer|login|cookie|credential|seed|mnemonic|otp|2fa|leak|revoke|rotate|paste|"
    rf"(?:{PASSWORD_LABELS})|[=:：]",
    I,
)


@functools.lru_cache(maxsize=8)
def secret_cued(text: str) -> bool:
    """Does anything in ``text`` call a value a secret (a secret word, a password label) or bind it to a name?"""
    return _CUED.get().search(text) is not None


def public_value(text: str, start: int, end: int) -> bool:
    """A span that is public by what it is (see the module docstring); called from ``generic.spared``."""
    v = text[start:end]
    lo = max(0, start - 80)
    before = text[lo:start]
    # the whole whitespace/quote-delimited token holding the span
    ts = start
    while ts > 0 and start - ts < 200 and text[ts - 1] not in " \t\n\"'`(":
        ts -= 1
    if _DIGEST_TOKEN.get().match(text, ts) or _DIGEST_TOKEN.get().search(v):
        return True  # "'sha256-hsWJ…='": a digest named by its algorithm (CSP, SRI, checksums)
    if "BEGIN PGP" in text[max(0, start - 20000) : start]:
        for m in _ARMOUR.get().finditer(text):
            if m.start() <= start and end <= m.end():
                return True
    if "data:" in text[max(0, start - 200) : start + 1]:
        for m in _DATA_URI.get().finditer(text, max(0, start - 200)):
            if m.start() <= start and end <= m.end():
                return True
            if m.start() > start:
                break
    if v.startswith("LS0tLS1CRUdJTi") and _public_pem_b64(v):
        return True  # base64 of a PEM certificate or public key (a ConfigMap's "ca.crt", kubeconfig's "…-certificate-data")
    if v.startswith("MII") and _CERT_KEY.get().search(text[max(0, start - 4000) : start]):
        return True  # a certificate in a JWK's x5c chain
    if _THUMB_KEY.get().search(before):
        return True  # a thumbprint or key id: public names of a key
    line_start = text.rfind("\n", max(0, start - 500), start) + 1 or max(0, start - 500)
    head = text[line_start:start]
    if ":" in head and _ID_HEADER.get().search(head) and not re.search(r"session|auth|token|csrf|key", head, I):
        return True
    if "/" in v or "/" in before[-3:]:
        url = re.search(r"https?://[^\s/]+(/[^\s?#@]*)?$", text[max(0, start - 300) : start])
        core = v.lstrip("/")
        if url is not None or v.startswith("//"):
            path = (url.group(1) or "") if url is not None else ""
            full = path + v if url is not None else v[2:]
            if "@" not in full and "?" not in text[start : end + 1]:
                segs = full.split("/")
                ok = False
                for i, seg in enumerate(segs):
                    if len(seg) >= 16 and i > 0:
                        ok = _SHARE_PATH.get().search("/" + segs[i - 1] + "/") is not None
                        if not ok:
                            break
                if ok and core:
                    return True
    if re.match(r"pk\.[A-Za-z0-9]|pk_(?:live|test)_", v):
        return True  # a publishable key (Mapbox "pk.", Stripe "pk_live_"): public by design
    if _counting_bytes(v.removeprefix("0x")):
        return True
    if _PUBLIC_LABEL.get().search(text[line_start:start]) or re.fullmatch(r"AC[0-9a-f]{32}", v):
        return True  # a public id by its label, a Twilio Account SID by its shape
    if _NOT_SECRET_KEY.get().search(text[line_start:start]):
        return True
    if _TYPE_NAME.get().fullmatch(v) and re.search(r"[:]\s*$", before) and re.match(r"\s*(?:$|[=,)\n])", text[end:]):
        return True  # "database_password: SecretStr": a type annotation
    if _PATH_CALL.get().fullmatch(v) and (v.endswith("(") or text[end : end + 1] == "("):
        return True  # "let token = std::env::var(…)": a call that reads the secret, not the secret
    if v.isdigit() and len(v) <= 6 and _SIZE_AFTER.get().match(text, end):
        return True  # "password:  24 bytes": a size
    if _B64_JSON.get().fullmatch(v) and _payload_json(v):
        return True
    if _DOC_WORD.get().search(v):
        return True
    if text[end : end + 1] == "(" and re.fullmatch(r"[a-z_][A-Za-z0-9_.]{1,30}", v) and re.match(r"\(\s*[A-Za-z_]", text[end:]):
        return True  # "Basic base64(username:password)": a call, not a value
    if _CALL.get().fullmatch(v):
        return True  # "btoa(user:pass)": a call on names, not a value
    if len(v.strip(".-_")) <= 6 and text[end : end + 3] in ("...", "…") or text[end : end + 1] == "…":
        return True  # "sk-...": a prefix with an ellipsis
    literal = v.lower() in ("pass", "pwd", "pw", "passw", "secret")
    if literal and before.endswith(":") and text[end : end + 1] == "@" and _DOC_HOST.get().match(text, end + 1):
        return True  # "https://user:pass@example.com": the literal word, at a documentation host
    if re.fullmatch(r"[0-9a-fA-F]{32,128}", v) and _ASSERT.get().search(text[line_start:start]):
        return True  # an expected digest in a test assertion
    return False
