"""Secret families written as general structure rather than as one tool's or one country's format.

* the password flag of command lines: a user flag then a password flag (``-u bob -p X``), a ``login``
  subcommand's ``-p``, and the password flags of many tools (``zip -P``, ``ldapsearch -w``, ``plink -pw``,
  ``smbclient -U user%X``, ``sqlplus user/X@db``, ``net use … /user:d\\u X``, ``htpasswd -b f u X``, Windows
  ``/p:X``, Java ``-storepass X`` …);
* a key that names a secret followed by its value in any config syntax (``#define WIFI_PASS "X"``,
  ``storePassword "X"``, ``requirepass X``, ``Password1 X``) and name/value pairs (``key="SmtpPassword"
  value="X"``, Kubernetes ``- name: DB_PASSWORD`` / ``value: X``);
* SQL credential clauses (``IDENTIFIED BY``, ``WITH PASSWORD``, ``PASSWORD('X')``);
* passwords in chat in many languages ("Das Passwort … lautet X", "contraseña: X", "mot de passe est « X »",
  "password → X");
* identity and account numbers next to a label in many languages (CPF, Aadhaar, BSN, NINO, PESEL, TFN, NRIC,
  주민등록번호, 身份证 …), and some by their check digits alone (CPF, Chinese resident id);
* session cookies and secrets in URL queries (``sessionid=``, ``appid=``), bot tokens, Salesforce sessions,
  Lightning macaroons, Solana key pairs (the public half derived from the secret half), Nostr ``nsec`` keys
  (bech32 checked), and text hidden as hex.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator

from agent_memory.redaction.base import A, I, Lazy
from agent_memory.redaction.keyvalue import NOT_A_VALUE, PLACEHOLDER_RE, placeholder_value
from agent_memory.redaction.providers import entropy

Span = tuple[int, int, str]

# A value on a command line: quoted, or bare (a "&" inside it is part of it, "&&" / " & " are not).
_BARE = r"[^\s'\"|;<>`&](?:[^\s'\"|;<>`&]|&(?![&\s]|$))*+"
_VAL = r"""(?:'(?P<sq>[^'\r\n]{1,200})'|"(?P<dq>[^"\r\n]{1,200})"|(?P<bare>""" + _BARE + r"))"
_LINE = r"[^\r\n|;]{0,400}?"  # the rest of one command (bounded: the search starts at many places)

# --- command lines ---------------------------------------------------------------------------------------------
_CLI = Lazy(
    # a user flag, then a password flag in the same command: "-u bob -p X", "-U sa -P X", "--user x -w X"
    r"(?:(?<![\w-])(?-i:-u|-U|-l|-D|--user(?:name)?|--login)(?:[ \t]+|=)(?:'[^'\r\n]*'|\"[^\"\r\n]*\"|\S+)"
    + _LINE
    + r"[ \t](?-i:-p|-P|-w|-pw|-pass|--pass(?:word)?)(?:[ \t]+|=)"
    # a login subcommand's password flag: "docker login -u x -p X", "helm registry login … -p X"
    + r"|\blogin\b"
    + _LINE
    + r"[ \t](?-i:-p)[ \t]+"
    # the password flags of particular tools
    + r"|\b(?:zip|unzip|zipcloak|funzip|mosquitto_(?:pub|sub|rr|passwd)|ipmitool|ncftp\w*|fetchmail)\b"
    + _LINE
    + r"[ \t](?-i:-P)[ \t]*+"
    + r"|\b(?:7z|7za|7zr|rar|unrar|winrar)\b"
    + _LINE
    + r"[ \t](?-i:-h?p)(?=\S)"
    + r"|\bldap\w*\b"
    + _LINE
    + r"[ \t](?-i:-w)[ \t]+"
    + r"|\b(?:plink|pscp|psftp|putty|kitty)\b"
    + _LINE
    + r"[ \t]-pw[ \t]+"
    + r"|\b(?:psexec|psexec\.exe|paexec|rdesktop|hydra|crackmapexec|nxc|netexec|evil-winrm|smbmap)\b"
    + _LINE
    + r"[ \t](?-i:-p)[ \t]+"
    + r"|\binflux\b"
    + _LINE
    + r"[ \t](?-i:-t|-p|--token|--password)[ \t]+"
    # net-snmp v3 auth/privacy passphrases and v1/v2c communities: snmpwalk -A X -X Y, snmpget -c X
    + r"|\bsnmp\w*\b"
    + _LINE
    + r"[ \t](?-i:-A|-X|-c)[ \t]+"
    + r"|\b(?:smbclient|rpcclient|smbcacls|smbget|smbtree|net|mount\.cifs|winexe|wmic)\b"
    + _LINE
    + r"[ \t](?:-U|--user)[ \t=]*+['\"]?[^\s%'\"]{1,64}%"
    + r"|\b(?:lftp)\b"
    + _LINE
    + r"[ \t]-u[ \t]+[^\s,]{1,64},"
    + r"|\bab\b"
    + _LINE
    + r"[ \t]-[AP][ \t]+[^\s:]{1,64}:"
    + r"|(?<![\w-])-(?:src|dest)?(?:store|key)pass(?:word)?[ \t]+"
    + r"|(?<![\w-])-pass(?:in|out)?[ \t]+(?:pass:)?"
    + r"|(?<![\w-])-(?:pass(?:word|wd|phrase)?|pwd)[ \t]+(?!-)"
    + r"|(?<![\w])/(?:p|pw|pass|password|rp)[:=][ \t]*+"
    + r"|(?<![\w-])-p:(?=\S)"
    + r"|\bhtpasswd\b(?:[ \t]+-(?-i:[cBmdspiDv]*)b(?-i:[cBmdspiDv]*))[ \t]+(?:-\w+[ \t]+)*[^\s-]\S*[ \t]+[^\s-]\S*[ \t]+"
    + r"|\bhtpasswd\b[ \t]+-(?-i:[cBmdspiDv]*)nb(?-i:[cBmdspiDv]*)[ \t]+[^\s-]\S*[ \t]+"
    + r"|\bnet[ \t]+use\b"
    + _LINE
    + r"[ \t]/user:\S+[ \t]+(?!/)"
    + r"|\bnet[ \t]+user[ \t]+\S+[ \t]+(?=[^\s/*])"
    + r"|\brabbitmqctl\b[ \t]+(?:add_user|change_password)[ \t]+\S+[ \t]+"
    + r"|\bwpa_passphrase[ \t]+(?:\"[^\"\r\n]+\"|'[^'\r\n]+'|\S+)[ \t]+"
    + r"|\bnmcli\b"
    + _LINE
    + r"[ \t](?:password|wifi-sec\.psk|802-11-wireless-security\.psk)[ \t]+"
    + r"|\bvault[ \t]+login[ \t]+(?:-\S+[ \t]+)*"
    + r"|\b(?:redis-server|keydb-server|valkey-server)\b"
    + _LINE
    + r"[ \t]--(?:requirepass|masterauth)[ \t]+"
    + r"|\bcurl\b"
    + _LINE
    + r"[ \t](?:-(?-i:[a-zA-Z]*u)|--user|--proxy-user|-(?-i:U))[ \t=]*['\"]?[^\s:'\"@]{1,64}:(?=[^\s@'\"])"
    + r")"
    + _VAL,
    A | I,
)
# Every alternative of _CLI starts with a flag (one of _CLI_FLAGS) or a command word (one of _CLI_WORDS, as a
# whole word or a path's last part): it is tried only there.
_CLI_FLAGS = ("-u", "-l", "-d", "--user", "--login", "-src", "-dest", "-store", "-key", "-pass", "-pwd", "/p", "/rp", "-p:")
_CLI_WORDS = frozenset(
    """login zip unzip zipcloak funzip mosquitto_pub mosquitto_sub mosquitto_rr mosquitto_passwd ipmitool ncftp ncftpget
    ncftpput fetchmail 7z 7za 7zr rar unrar winrar ldapsearch ldapadd ldapmodify ldapdelete ldapwhoami ldappasswd
    ldapcompare ldapmodrdn ldapexop plink pscp psftp putty kitty psexec psexec.exe paexec rdesktop hydra crackmapexec
    nxc netexec evil-winrm smbmap influx smbclient snmpwalk snmpget snmpset snmpbulkwalk snmpbulkget snmpgetnext snmptrap
    snmptable snmpinform snmpdelta snmpstatus snmpdf snmpnetstat snmpusm snmpvacm snmptranslate rpcclient smbcacls smbget smbtree net mount.cifs winexe wmic lftp ab
    htpasswd rabbitmqctl wpa_passphrase nmcli vault redis-server keydb-server valkey-server curl""".split()
)
_WORD_CHARS = Lazy(r"[a-z0-9_.+-]+")


def _numberish(v: str) -> bool:
    """A port, port mapping, range, id or address ("3306", "8080:80", "1-1024", "10.0.0.1"): not a password."""
    return all(c.isdigit() or c in ":,-./" for c in v) and not (v.isdigit() and len(v) >= 6)


_MYSQL_PROMPT = Lazy(r"\b(?:mysql\w*|mariadb\w*)\b[^\r\n|;&]*[ \t]-p[ \t]", A)


def _cli_value_ok(v: str) -> bool:
    return (
        any(c.isalnum() for c in v)
        and not v.isalpha()
        and not _numberish(v)
        and not PLACEHOLDER_RE.get().match(v)
        and v.lower() not in NOT_A_VALUE
        and not placeholder_value(v)
        and not v.startswith("@")
        # a value may start with "-" when it cannot be a flag: "-p -szC5TRavkCW2Q1q"
        and (not v.startswith("-") or (len(v) >= 10 and any(c.isdigit() for c in v) and any(c.isupper() for c in v[1:])))
    )


# --- key followed by its value in any config syntax ---------------------------------------------------------------
# "#define WIFI_PASS "X"", "storePassword "X"", "requirepass X", "Backlog SSID1 x; Password1 X", "set password X"
_KEY_SPACE = Lazy(
    r"[ \t]*+(?:\#define[ \t]+|set[ \t]+|Backlog[ \t]+)?"
    r"(?P<key>(?:[A-Za-z_][\w.-]{0,40}?)?(?:pass(?:word|wd|phrase|code)?|pwd|secret|token|psk|masterauth|api_?key)\d{0,2})"
    r"[ \t]++(?!=|:)" + _VAL + r"(?=[ \t]*+(?:[;\r\n]|$))",
    A | I,
)
_DIGIT = Lazy(r"\d")
_KEY_LINE = Lazy(r"(?<![^\n;{])[^\n;{]*?(?:pass|pw|secret|token|psk|masterauth|key)")
_KEY_SPACE_TRIGGERS = ("pass", "pw", "secret", "token", "psk", "masterauth", "key")
# name/value pairs: key="SmtpPassword" value="X", - name: DB_PASSWORD / value: X, {"Name": "x_token", "Value": "X"}
_NAME_VALUE = Lazy(
    r"(?<![\w-])[\"']?(?:key|name|id|parameterkey|variable)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?P<key>[\w./-]{0,40}?(?:pass(?:word|wd|phrase)?|pwd|secret|token|api_?key|credential|psk)[\w.-]{0,20})[\"']?"
    r"[ \t]*,?[ \t]*(?:\r?\n[ \t]*(?:-[ \t]+)?)?[\"']?(?:value|parametervalue)[\"']?[ \t]*[:=][ \t]*" + _VAL,
    A | I,
)

# --- SQL credential clauses ----------------------------------------------------------------------------------------
_SQL = Lazy(
    r"(?:\bidentified[ \t]+(?:with[ \t]+['\"]?\w+['\"]?[ \t]+)?by(?:[ \t]+password)?[ \t]+"
    r"|(?<![\"'\w])password(?:[ \t]*=[ \t]*|[ \t]+)(?=N?')"
    r"|(?<![\"'\w])password[ \t]*\([ \t]*)N?" + _VAL,
    A | I,
)
# Oracle's user/password@db on the command line of its tools, and CONNECT user/password@db
_ORACLE = Lazy(
    r"(?:\b(?:sqlplus|sqlldr|expdp|impdp|exp|imp|rman|dgmgrl|sql|tkprof|conn(?:ect)?)\b(?:[ \t]+-\w+)*[ \t]+"
    r"(?:target[ \t]*=?[ \t]*)?"
    # round 8: the same pair in an Oracle JDBC URL ("jdbc:oracle:thin:scott/X@//host:1521/svc")
    r"|\bjdbc:oracle:\w{1,8}:)['\"]?[\w$#.]{1,64}/(?P<v>[^\s/@'\"]{1,128})(?=@|[ \t]+as[ \t]+sys|['\"]?(?:\s|$))",
    A | I,
)
# Terraform state: the result of a random_password resource
_TF_RESULT = Lazy(r"\"result\"[ \t]*:[ \t]*\"(?P<v>(?:[^\"\\\r\n]|\\.){4,200})\"", A)

# --- passwords in chat, in many languages ---------------------------------------------------------------------------
_PW_WORDS = (
    r"(?:pass(?:word|wd|phrase|code)?|pwd|pw|passwort|kennwort|contrase(?:ñ|n)a|clave|senha|mot[ \t]+de[ \t]+passe|mdp"
    r"|wachtwoord|l(?:ö|o)senord|adgangskode|passord|salasana|has(?:ł|l)o|heslo|parol(?:a|ă)|jelsz(?:ó|o)|(?:ş|s)ifre(?:m|miz|n|niz|si|sı)?"
    r"|geslo|lozinka|пароль|mật[ \t]+khẩu|kata[ \t]+sandi|κωδικός)(?![\w-])"
    # words of scripts without spaces between words: no boundary after them ("密码是X", "パスワードは「X」")
    r"|密码|密碼|口令|パスワード|暗証番号|비밀번호|암호|סיסמה|كلمة[ \t]+المرور|รหัสผ่าน"
)
# a value ends at a space, a quote, or where Chinese, Japanese or Korean text (or its punctuation) resumes
# (the look-ahead: a password word is followed by a digit or a symbol, so "password to the server is X" reads on past "the")
_PW_VALUE = r"(?=[^\s\"'«»“”„「」]{0,79}[0-9!#$%&*+./:;<=>?@\\^_`|~-])(?P<v>[^\s\"'«»“”„「」『』‹›‘’\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uff01-\uff0f\uff1a-\uff20]{4,80})"
_CHAT = Lazy(
    r"(?:" + _PW_WORDS + r")[^\r\n:=→]{0,40}?"
    r"(?:[ \t]*(?:[:：=→⇒]|->|=>|[是为為は는은]|이에요|가)|[ \t](?:is|ist|lautet|lauten|es|est|è|é|är|er|on|jest|je|to|was|now|wird|sera|será|это|—)(?=[ \t]))"
    r"[ \t]*+(?:[«“„\"'「『‹‘]|&quot;)?[ \t]*+" + _PW_VALUE,
    I,
)
# the value right after the word: "şifrem Vientokobalt99_" (tried where _CHAT found nothing)
_CHAT_BARE = Lazy(r"(?:" + _PW_WORDS + r")[ \t]+(?:[«“„\"'「『‹‘][ \t]*)?" + _PW_VALUE, I)
# Every password word starts with one of these (lower-cased): _CHAT is tried only where one occurs.
_CHAT_TRIGGERS = (
    "pass",
    "pw",
    "kennwort",
    "contrase",
    "clave",
    "senha",
    "mot",
    "mdp",
    "wachtwoord",
    "losenord",
    "adgangskode",
    "salasana",
    "haslo",
    "heslo",
    "parol",
    "jelsz",
    "sifre",
    "geslo",
    "lozinka",
    "kata",
)
_CHAT_TRIGGERS_UNICODE = _CHAT_TRIGGERS + (
    "lösenord",
    "hasło",
    "şifre",
    "пароль",
    "密",
    "口令",
    "パスワード",
    "暗証",
    "비밀번호",
    "암호",
    "סיסמה",
    "كلمة",
    "mật",
    "รหัส",
    "κωδικ",
)


_MANAGERS = frozenset(("1password", "1password8", "keepassxc", "keepass2", "bitwarden", "lastpass", "dashlane"))


_PATTERN_PIECES = ("(?=", ".*", "\\d", "[A-Z]", "[a-z]", "[0-9]", "{8,", "{12,")


def pw_like(v: str) -> bool:
    """Does ``v`` look like a chosen password rather than a word, number, path or reference?"""
    if len(v) < 6 or "/" in v or "://" in v or placeholder_value(v) or PLACEHOLDER_RE.get().match(v) or v.lower() in _MANAGERS:
        return False
    if any(p in v for p in _PATTERN_PIECES):  # a rule for passwords ("^(?=.*[A-Z])(?=.*\d).{12,}$"), not one
        return False
    classes = any(c.islower() for c in v) + any(c.isupper() for c in v) + any(c.isdigit() for c in v) + any(not c.isalnum() for c in v[:-1])
    return classes >= 3 or (classes == 2 and any(c.isdigit() for c in v) and any(c.isalpha() for c in v) and len(v) >= 8)


# --- identity and account numbers next to a label --------------------------------------------------------------------
_ID_WORDS = (
    r"ssn|itin|sin|tfn|nino|ni[ \t]+(?:number|no)|national[ \t]+insurance|bsn|burgerservicenummer|sofi-?nummer"
    r"|cpf|cnpj|aadhaa?r|pan[ \t]+(?:card|number|no)|pesel|nric|fin[ \t]+(?:number|no)|hkid|mykad|nik|ktp|curp"
    r"|rut|cuit|cuil|dni|nie|nif|nir|insee|s(?:é|e)curit(?:é|e)[ \t]+sociale|codice[ \t]+fiscale"
    r"|steuer-?id|steuer-?identifikationsnummer|sozialversicherungsnummer|svnr|ahv|avs|personnummer|personnr"
    r"|f(?:ø|o)dselsnummer(?:et)?|cpr(?:-?nummer(?:et)?)?|henkil(?:ö|o)tunnu(?:s|kse)\w{0,4}|hetu|isikukood|asmens[ \t]+kodas|personas[ \t]+kods|egn|cnp|oib"
    r"|jmbg|emšo|emso|amka|ppsn?|tc[ \t]+kimlik|kimlik[ \t]+no|teudat[ \t]+zehut|my[ \t]*number|個人番号|マイナンバー"
    r"|身份证(?:号码|号)?|身分證(?:字號)?|居民身份证|주민등록번호|주민번호|rrn|resident[ \t]+registration"
    r"|passport|id[ \t]+(?:number|no|card)|identity[ \t]+(?:number|card)|identification[ \t]+number|national[ \t]+id"
    r"|personal[ \t]+(?:id|number|code)|social[ \t]+security|tax[ \t]+(?:id|number|file[ \t]+number|code)|taxpayer"
    r"|(?:bank[ \t]+)?account[ \t]+(?:number|no|#)|acct[ \t]*(?:number|no|#)?|kontonummer|numéro[ \t]+de[ \t]+compte"
    r"|a/c[ \t]*(?:number|no|#)?|acc[ \t]*(?:number|no|#)|konto-?nr|rekeningnummer|numer[ \t]+konta|hesap[ \t]+(?:no|numarası)"
    r"|número[ \t]+da[ \t]+conta|номер[ \t]+сч(?:е|ё)та|खाता[ \t]+(?:संख्या|नंबर)"
    r"|n(?:ú|u)mero[ \t]+de[ \t]+cuenta|nhs[ \t]+number|medicare|driver'?s?[ \t]+licen[cs]e|licen[cs]e[ \t]+number"
    r"|health[ \t]+(?:card|insurance)[ \t]+number|insurance[ \t]+number|versichertennummer|sécu"
    r"|rijksregister(?:nummer)?|num(?:é|e)ro[ \t]+national|insz|niss|rodn(?:é|e)[ \t]+(?:č|c)(?:í|i)slo|r\.?č\.?|rfc|nip|regon"
    r"|kennitala|ird[ \t]+number|itin|ein|nin|bvn|c(?:é|e)dula|snils|снилс|инн|паспорт|pasaporte|passeport|reisepass"
    r"|personalausweis(?:nummer)?|ausweisnummer|iqama|emirates[ \t]+id|npwp|sss|cccd|cmnd|tessera[ \t]+sanitaria"
    r"|תעודת[ \t]+ה?זהות|מספר[ \t]+ה?זהות|ת\"ז|ת\.ז\.?|clabe"
    # round 8: the inflected forms a sentence uses (Norwegian/Danish definite "fødselsnummeret", Swedish "personnumret",
    # Finnish possessive "henkilötunnukseni", Hebrew "תעודת הזהות") and the short forms ("fnr", "pnr", "sotu")
    r"|personnumm?ret|personnummeret|fnr|f\.nr\.?|pnr|sotu|sosiaaliturvatunnus\w{0,4}|kennitalan?"
    # round 7: the forms and words that ask for one (a W-9 asks for the SSN, Québec's NAS, Singapore's IC, Turkish
    # "kimlik numaram", Romanian CNP in full, Portuguese NIF as "número de contribuinte", a driving licence "DL"/"licence
    # no."), and bank-account labels in Japanese, Korean and Chinese
    r"|w-?9|nas|ic|kimlik[ \t]+numar\w*|cod(?:ul)?[ \t]+numeric[ \t]+personal|n(?:ú|u)mero[ \t]+de[ \t]+contribuinte"
    r"|contribuinte|dl|licen[cs]e[ \t]+(?:no|nr|#)|口座番号|口座|계좌\s*번호|계좌|银行账号|銀行帳號|账号|帳號"
)
# A value is found first (its digits), then a label is looked for just before it.
_ID_DIGITS = Lazy(r"\d(?:\d|[ .\-/](?=\d)){4,24}")
_ID_PREFIX = Lazy(r"(?:(?<![A-Za-z0-9])[A-Za-z]{1,3}[ .-]?|(?<![A-Za-z0-9])[A-Z]{4,6}|(?<![A-Za-z0-9]))$", A)
_ID_SUFFIX = Lazy(r"(?:[ .-]?[A-Za-z]{1,2}|[A-Z0-9]{1,10})?(?![\w])", A)
# an upper-case id with letters and digits mixed: PAN "EXUPN5921A", CURP, codice fiscale, PPS "0684592WA"
_ID_LABEL = Lazy(
    r"(?<![\w])(?:" + _ID_WORDS + r")(?![a-z])(?:-?(?:nummer|number|no\.?|nr\.?|num\.?|#|n°|º))?[^\d\r\n]{0,24}?$",
    I,
)
_WORD_BEFORE = Lazy(r"[a-z]{2,3} ")
_DATE = Lazy(r"\d{4}[-./]\d{1,2}(?:[-./]\d{1,2})?|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}|\d{1,2}:\d{2}(?::\d{2})?")


def _id_spans(text: str) -> Iterator[Span]:
    for m in _ID_DIGITS.get().finditer(text):
        s, e = m.span()
        run = m.group()
        digits = len(run) - run.count(" ") - run.count(".") - run.count("-") - run.count("/")
        if s and text[s - 1].isdigit() or digits < 6 or _DATE.get().fullmatch(run):
            continue
        p = _ID_PREFIX.get().search(text, max(0, s - 4), s)
        q = _ID_SUFFIX.get().match(text, e)
        if p is None or q is None:
            continue
        ve = q.end()
        # "NRIC S4396463A": the letters belong to the value; "TFN 242 846 013": they are the label
        starts: tuple[int, ...] = (p.start(), s)
        if p.start() < s and (text[p.start() - 1 : p.start()].isalpha() or _WORD_BEFORE.get().fullmatch(text, p.start(), s)):
            starts = (s,)  # round 8: "er 0911…", "on 090779-085K", "är 811218-…": a word of the sentence, not the id's letters
        for vs in dict.fromkeys(starts):
            if _id_ok(text[vs:ve]) and _ID_LABEL.get().search(text, max(0, vs - 72), vs):
                yield vs, ve, "national_id"
                break


# a bank routing number is public; with the account number after it, the pair names an account
_ROUTING_ACCOUNT = Lazy(
    r"\b(?:routing|aba|rtn|transit|sort[ \t]+code|bsb)(?:[ \t]+(?:number|no\.?|#|code))?[ \t:#]*(?P<r>\d[\d -]{4,10}\d)"
    r"[^\r\n\d]{0,24}?\b(?:account|acct|konto|compte|cuenta|conta)(?:[ \t]+(?:number|no\.?|#))?[ \t:#]*(?P<a>\d[\d -]{3,20}\d)(?!\d)",
    I,
)


_UPPER_RUN = Lazy(r"[A-Z0-9]{8,}+")
_ROUTING_WORDS = ("routing", "aba", "rtn", "transit", "sort code", "bsb")


def _alnum_id_spans(text: str, low: str) -> Iterator[Span]:
    if any(w in low for w in _ROUTING_WORDS):
        for m in _ROUTING_ACCOUNT.get().finditer(text):
            yield m.start("r"), m.end("r"), "national_id"
            yield m.start("a"), m.end("a"), "national_id"
    for m in _UPPER_RUN.get().finditer(text):
        s, e = m.span()
        v = m.group()
        if e - s > 20 or v.isdigit() or v.isalpha() or s and (text[s - 1].isalnum() or text[s - 1] == "_"):
            continue
        if e < len(text) and (text[e].isalnum() or text[e] == "_"):
            continue
        if sum(c.isdigit() for c in v) >= 4 and _ID_LABEL.get().search(text, max(0, s - 72), s):
            yield s, e, "national_id"


# --- identity numbers written with their check characters, found without a label --------------------------------------
_CF = Lazy(r"(?<![A-Za-z0-9])[A-Z]{6}\d{2}[ABCDEHLMPRST]\d{2}[A-Z]\d{3}[A-Z](?![A-Za-z0-9])")
_CF_ODD = (1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23)
_CURP = Lazy(r"(?<![A-Za-z0-9])[A-Z][AEIOUX][A-Z]{2}\d{6}[HMX][A-Z]{2}[A-Z]{3}[A-Z0-9]\d(?![A-Za-z0-9])")
_CURP_ALPHA = "0123456789ABCDEFGHIJKLMN\u00d1OPQRSTUVWXYZ"
_BE_RRN = Lazy(r"(?<![\d.])\d{2}\.\d{2}\.\d{2}-\d{3}\.\d{2}(?![\d.])")


def _cf_ok(s: str) -> bool:
    """Italian codice fiscale: the last letter checks the other fifteen characters."""
    total = 0
    for i, ch in enumerate(s[:15]):
        v = int(ch) if ch.isdigit() else ord(ch) - 65
        total += _CF_ODD[v] if i % 2 == 0 else v
    return chr(65 + total % 26) == s[15]


def _curp_ok(s: str) -> bool:
    """Mexican CURP: the last digit checks the other seventeen characters."""
    total = sum(_CURP_ALPHA.index(c) * (18 - i) for i, c in enumerate(s[:17]))
    return (10 - total % 10) % 10 == int(s[17])


def _be_rrn_ok(s: str) -> bool:
    """Belgian national register number: 97 minus the first nine digits mod 97 (born after 1999: with a leading 2)."""
    d = "".join(c for c in s if c.isdigit())
    body, cc = int(d[:9]), int(d[9:])
    return cc in (97 - body % 97, 97 - int("2" + d[:9]) % 97)


_CHECKED_GATE = Lazy(r"[A-Z]{4}\d|\d\.\d\d\.\d\d-")


def checked_id_spans(text: str) -> Iterator[Span]:
    gate = _CHECKED_GATE.get().search(text)
    if gate is None:
        return
    patterns: list[tuple[Lazy, Callable[[str], bool]]] = [(_CF, _cf_ok), (_CURP, _curp_ok), (_BE_RRN, _be_rrn_ok)]
    for pattern, ok in patterns:
        for m in pattern.get().finditer(text):
            if ok(m.group()):
                yield m.start(), m.end(), "national_id"


def _id_ok(v: str) -> bool:
    digits = sum(c.isdigit() for c in v)
    if digits < 6 or _DATE.get().fullmatch(v):
        return False
    core = "".join(c for c in v if c.isalnum())
    return len(set(core)) > 2


# --- identity numbers by their check digits ---------------------------------------------------------------------------
_CPF = Lazy(r"(?<![\d.])\d{3}\.\d{3}\.\d{3}-\d{2}(?![\d])")
_CN_ID = Lazy(r"[1-8]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\dA-Za-z])")


def _cpf_ok(s: str) -> bool:
    d = [int(c) for c in s if c.isdigit()]
    if len(set(d)) == 1:
        return False
    for n in (9, 10):
        check = sum(d[i] * (n + 1 - i) for i in range(n)) * 10 % 11 % 10
        if check != d[n]:
            return False
    return True


def _cn_id_ok(s: str) -> bool:
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(s[:17], weights, strict=True))
    return "10X98765432"[total % 11] == s[17].upper()


# --- cookies, URL queries, bot tokens, sessions ---------------------------------------------------------------------
_SESSION = Lazy(r"(?:sess|sid|auth|remember|csrf|xsrf)[\w.-]{0,20}?=(?P<v>[A-Za-z0-9%+/_\-.~]{16,}+=*)", I | A)
_QUERY = Lazy(
    r"[?&;](?P<k>app_?id|app_?key|api_?key|api-key|key|auth|sig|signature|x-amz-signature|hapikey|license_?key"
    r"|subscription-key|access_?key|secret|private_?token|pass(?:word)?|pwd|apitoken|client_?secret)"
    r"=(?P<v>[A-Za-z0-9%+/_\-.~]{16,}+=*)",
    I | A,
)
# (no leading look-behinds: they turn off the regex engine's first-character scan; boundaries are checked in code)
_BOT_TOKEN = Lazy(r"\d{8,10}:[A-Za-z0-9_-]{35}(?![\w-])", A)
_SALESFORCE = Lazy(r"00D[A-Za-z0-9]{12,15}![A-Za-z0-9_.]{40,}+", A)
_MACAROON = Lazy(r"0201036c6e64[0-9a-fA-F]{40,}+|AgEDbG5k[A-Za-z0-9+/_\-]{40,}+={0,2}", A)
_HEX_RUN = Lazy(r"[0-9a-fA-F]{24,}+(?![0-9A-Za-z])", A)

# --- Solana key pairs and bech32 secret keys -------------------------------------------------------------------------
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58)}
_B58_LONG = Lazy(r"[1-9A-HJ-NP-Za-km-z]{85,}+(?![A-Za-z0-9])", A)  # a maximal run; its length is checked in code
# found by its data part (a "1" then 30+ bech32 characters), then its human-readable part is read backwards
_BECH32 = Lazy(r"1[02-9ac-hj-np-z]{30,}+(?![A-Za-z0-9])", A)
_BECH32_HRP = Lazy(r"(?<![A-Za-z0-9])[a-z]{0,12}(?:sec|priv|prv|secret|sk)$", A)
_SIGNATURE = Lazy(r"sig|tx|transaction|hash|explorer|solscan|block|slot|/|proof")
_BECH32_CHARS = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _b58_decode(s: str) -> bytes:
    n = 0
    for c in s:
        n = n * 58 + _B58_INDEX[c]
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return b"\0" * (len(s) - len(s.lstrip("1"))) + raw


_EP = 2**255 - 19
_ED = -121665 * pow(121666, _EP - 2, _EP) % _EP
_GX = 15112221349535400772501151409588531511454012693041857206046113283949847762202
_GY = 46316835694926478169428394003475163141307993866256225615783033603165251855960
_Point = tuple[int, int, int, int]


def _ed_add(p: _Point, q: _Point) -> _Point:
    a = (p[1] - p[0]) * (q[1] - q[0]) % _EP
    b = (p[1] + p[0]) * (q[1] + q[0]) % _EP
    c = 2 * p[3] * q[3] * _ED % _EP
    d = 2 * p[2] * q[2] % _EP
    e, f, g, h = b - a, d - c, d + c, b + a
    return e * f % _EP, g * h % _EP, f * g % _EP, e * h % _EP


def ed25519_public(seed: bytes) -> bytes:
    """The Ed25519 public key of a 32-byte secret seed (RFC 8032)."""
    h = hashlib.sha512(seed).digest()
    s = int.from_bytes(h[:32], "little") & ((1 << 254) - 8) | (1 << 254)
    q: _Point = (0, 1, 1, 0)
    p: _Point = (_GX, _GY, 1, _GX * _GY % _EP)
    while s:
        if s & 1:
            q = _ed_add(q, p)
        p = _ed_add(p, p)
        s >>= 1
    zi = pow(q[2], _EP - 2, _EP)
    x, y = q[0] * zi % _EP, q[1] * zi % _EP
    return (y | (x & 1) << 255).to_bytes(32, "little")


def _bech32_ok(s: str) -> bool:
    hrp, _, data = s.rpartition("1")
    values = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + [_BECH32_CHARS.index(c) for c in data]
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i, g in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            if top >> i & 1:
                chk ^= g
    return chk in (1, 0x2BC830A3)


def _hex_text(run: str) -> str | None:
    try:
        out = bytes.fromhex(run).decode("utf-8")
    except ValueError:
        return None
    return out if sum(c.isprintable() for c in out) >= 0.95 * len(out) else None


def _random(v: str) -> bool:
    digits = sum(c.isdigit() for c in v)
    letters = sum(c.isalpha() for c in v)
    return digits >= 2 and letters >= 4 and entropy(v) >= 3.3


def _value(m: re.Match[str]) -> tuple[int, int] | None:
    for name in ("sq", "dq", "bare"):
        if m.start(name) >= 0:
            end = m.end(name)
            if name == "bare":
                while end > m.start(name) + 1 and m.string[end - 1] in ",)":
                    end -= 1
            return m.start(name), end
    return None


def _cli_starts(low: str) -> set[int]:
    """Where a _CLI alternative may start: a flag, or a command word."""
    starts: set[int] = set()
    for ch in "-/":
        i = low.find(ch)
        while i >= 0:
            if low.startswith(_CLI_FLAGS, i):
                starts.add(i)
            i = low.find(ch, i + 1)
    words = {w.rpartition("/")[2].strip("`$(\"'") for w in low.split()}
    if not words.isdisjoint(_CLI_WORDS):
        for m in _WORD_CHARS.get().finditer(low):
            if m.group() in _CLI_WORDS:
                starts.add(m.start())
    return starts


def _at(lazy: Lazy, text: str, low: str, triggers: tuple[str, ...] | set[int], same: bool) -> Iterator[re.Match[str]]:
    """Matches of ``lazy`` that start where one of ``triggers`` occurs in ``low`` (in order; they may overlap).

    ``triggers`` may also be the set of start positions itself."""
    starts: set[int] = triggers if isinstance(triggers, set) else set()
    for t in () if isinstance(triggers, set) else triggers:
        i = low.find(t)
        while i >= 0:
            starts.add(i)
            i = low.find(t, i + 1)
    if not starts:
        return
    if not same:  # lower-casing changed the length: offsets differ, search the whole text
        yield from lazy.get().finditer(text)
        return
    match = lazy.get().match
    for p in sorted(starts):
        m = match(text, p)
        if m is not None:
            yield m


_SNMP_FLAG = Lazy(r"(?<![\w-])(?:-A|-X|-c)[ \t]+" + _VAL, A)


def cli_spans(text: str, low: str) -> Iterator[Span]:
    """Passwords on command lines (the password flags of many tools)."""
    if "snmp" in low:  # net-snmp takes two passphrases (-A auth, -X privacy) in one command
        for line in re.finditer(r"[^\r\n]*\bsnmp\w*\b[^\r\n]*", text):
            for m in _SNMP_FLAG.get().finditer(text, line.start(), line.end()):
                span = _value(m)
                if span is not None and _cli_value_ok(text[span[0] : span[1]]):
                    yield span[0], span[1], "password"
    for m in _at(_CLI, text, low, _cli_starts(low), len(low) == len(text)):
        span = _value(m)
        if span is None or not _cli_value_ok(text[span[0] : span[1]]):
            continue
        # "mysql -u root -p shop": a bare -p prompts for the password, "shop" is the database
        if ("mysql" in low or "mariadb" in low) and _MYSQL_PROMPT.get().search(
            text, low.rfind("\n", max(0, span[0] - 2000), span[0]) + 1, span[0] + 1
        ):
            continue
        yield span[0], span[1], "password"


def _context_spans(text: str, low: str) -> Iterator[Span]:
    """Values named by their context: command lines, config keys, SQL, chat, labelled identity numbers."""
    same = len(low) == len(text)
    yield from cli_spans(text, low)
    if any(t in low for t in _KEY_SPACE_TRIGGERS):
        match = _KEY_SPACE.get().match
        # the start of each line (or ";"-separated command) that holds a key word
        line_starts = [m.start() for m in _KEY_LINE.get().finditer(low)]
        for p in line_starts:
            km = match(text, p)
            if km is None:
                continue
            span = _value(km)
            if span is None:
                continue
            v = text[span[0] : span[1]]
            if pw_like(v) if km.start("bare") >= 0 else _cli_value_ok(v) and len(v) >= 4:
                yield span[0], span[1], "password"
    if "value" in low:
        for m in _NAME_VALUE.get().finditer(text):
            span = _value(m)
            if span and _cli_value_ok(text[span[0] : span[1]]) and len(text[span[0] : span[1]]) >= 4:
                yield span[0], span[1], "password"
    if "identified" in low or "password" in low:
        for m in _SQL.get().finditer(text):
            span = _value(m)
            if span and _cli_value_ok(text[span[0] : span[1]]) and (m.start("bare") < 0 or pw_like(m.group("bare"))):
                yield span[0], span[1], "password"
    if "/" in text and any(t in low for t in ("sql", "exp", "imp", "rman", "dgmgrl", "tkprof", "conn", "jdbc:oracle")):
        for m in _ORACLE.get().finditer(text):
            if _cli_value_ok(m.group("v")):
                yield m.start("v"), m.end("v"), "password"
    if "random_password" in low or "random_string" in low:
        for m in _TF_RESULT.get().finditer(text):
            yield m.start("v"), m.end("v"), "password"
    triggers = _CHAT_TRIGGERS if low.isascii() else _CHAT_TRIGGERS_UNICODE
    seen: set[int] = set()
    for m in _at(_CHAT, text, low, triggers, same):
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_-") and text[m.start()].isascii():
            continue
        v = m.group("v").rstrip(".,;)»”’")
        if pw_like(v):
            seen.add(m.start())
            yield m.start("v"), m.start("v") + len(v), "password"
    for m in _at(_CHAT_BARE, text, low, triggers, same):
        if m.start() in seen or m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_-"):
            continue
        v = m.group("v").rstrip(".,;)»”’")
        if pw_like(v) and any(c.isdigit() for c in v):
            yield m.start("v"), m.start("v") + len(v), "password"
    if _DIGIT.get().search(text):
        yield from _id_spans(text)
        yield from _alnum_id_spans(text, low)
        yield from checked_id_spans(text)


def general_spans(text: str, low: str, detect: Callable[[str], bool], decode: bool) -> Iterator[Span]:
    """Spans of ``text`` (``low`` its lower-cased form) that hold a secret of one of these families.

    ``decode`` is False when ``text`` is itself a decoded or joined fragment being checked for a token (the
    context rules are then skipped: they cost the most and such fragments are tokens, not command lines)."""
    if decode:
        yield from _context_spans(text, low)
    if _DIGIT.get().search(text):
        if "-" in text:
            for m in _CPF.get().finditer(text):
                if _cpf_ok(m.group()):
                    yield m.start(), m.end(), "national_id"
        for m in _CN_ID.get().finditer(text):
            if not (m.start() and text[m.start() - 1].isdigit()) and _cn_id_ok(m.group()):
                yield m.start(), m.end(), "national_id"
        if ":" in text:
            for m in _BOT_TOKEN.get().finditer(text):
                tail = m.group().partition(":")[2]
                if _random(tail) and not (m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_:")):
                    yield m.start(), m.end(), "telegram_token"
        if "!" in text:
            for m in _SALESFORCE.get().finditer(text):
                if not (m.start() and text[m.start() - 1].isalnum()):
                    yield m.start(), m.end(), "token"
        for m in _MACAROON.get().finditer(text):
            if not (m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "+/")):
                yield m.start(), m.end(), "token"
        for m in _B58_LONG.get().finditer(text):
            if len(m.group()) > 90 or m.start() and text[m.start() - 1].isalnum():
                continue
            raw = _b58_decode(m.group())
            if len(raw) != 64:
                continue
            # a key pair (its public half derived from the secret half), or 64 bytes not labelled as a signature
            if ed25519_public(raw[:32]) == raw[32:] or not _SIGNATURE.get().search(low, max(0, m.start() - 60), m.start()):
                yield m.start(), m.end(), "private_key"
        if "1" in text:
            for m in _BECH32.get().finditer(text):
                hrp = _BECH32_HRP.get().search(text, max(0, m.start() - 16), m.start())
                if hrp is not None and _bech32_ok(text[hrp.start() : m.end()]):
                    yield hrp.start(), m.end(), "private_key"
        if decode:
            for m in _HEX_RUN.get().finditer(text):
                if m.start() and text[m.start() - 1].isalnum() or len(m.group()) % 2:
                    continue
                decoded = _hex_text(m.group())
                if decoded is not None and detect(decoded):
                    yield m.start(), m.end(), "encoded_secret"
    if "=" in text:
        for m in _SESSION.get().finditer(text):
            v = m.group("v")
            if _random(v) and not placeholder_value(v):
                yield m.start("v"), m.end("v"), "token"
        if "?" in text or "&" in text:
            for m in _QUERY.get().finditer(text):
                v = m.group("v")
                if _random(v) and not placeholder_value(v):
                    yield m.start("v"), m.end("v"), "token"
