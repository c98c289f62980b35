"""Round 13 of redaction (issue 27, the last probe): a plain-word password after a colon label of any language
("Passwort: mandarine"), after a number or time phrase that opens the clause ("Room 12 password is tangerine"), in
another tense ("will be"), a capitalised name of three letters ("The password is Rex.") and an owner's default word
("the password is changeme") are redacted; a value's span takes no sentence punctuation ("tangerine!") and a grouped
value no copula ("is 12-34-56"). What the same frames say about a password is kept."""

from __future__ import annotations

import pytest
from _redact_rounds import never_plain, only_the_value_goes

from agent_memory.redaction import engine
from agent_memory.redaction.api import redact

# (text, the secret): the secret must be gone, the words around it kept
SECRETS = [
    # the probe's cases
    ("Passwort: mandarine", "mandarine"),
    ("Kennwort: Mandarine", "Mandarine"),
    ("Mot de passe: mandarine", "mandarine"),
    ("пароль: tangerine", "tangerine"),
    ("Room 12 password is tangerine", "tangerine"),
    ("Step 3 password is tangerine", "tangerine"),
    ("From today password is tangerine", "tangerine"),
    ("As of 2026-11-28 password is tangerine", "tangerine"),
    ("The password is Rex.", "Rex"),
    ("my password is Rex", "Rex"),
    ("the password is changeme", "changeme"),
    ("the password is secret", "secret"),
    ("The password will be tangerine.", "tangerine"),
    # the same rules, written for this round
    ("Contraseña: mariposa", "mariposa"),
    ("Senha: borboleta", "borboleta"),
    ("Wachtwoord: zonnebloem", "zonnebloem"),
    ("Lösenord: kanelbulle", "kanelbulle"),
    ("Пароль: мандарин", "мандарин"),
    ("WLAN-Passwort: apfelkuchen.", "apfelkuchen"),
    ("Kennwort: sonnenblume, bitte nicht weitergeben", "sonnenblume"),
    ("Floor 4 password is marmalade", "marmalade"),
    ("Since Monday password is pancake", "pancake"),
    ("Ab heute Passwort ist kirschbaum", "kirschbaum"),
    ("Desde hoy contraseña es girasol", "girasol"),
    ("Our wifi password is Max", "Max"),
    ("the router password is Zoe.", "Zoe"),
    ("The password would be lemonade", "lemonade"),
    ("The admin password has been popcorn", "popcorn"),
    ("Das Passwort wird sonnenblume", "sonnenblume"),
    ("Le mot de passe sera tournesol", "tournesol"),
    ("La contraseña será mariposa", "mariposa"),
    ("my password is letmein", "letmein"),
    ("The router password is changeit.", "changeit"),
]

# look-alikes: each must come out unchanged
PUBLIC = [
    "Passwort: vergessen",
    "Passwort: falsch",
    "Passwort: abgelaufen",
    "Kennwort: geändert",
    "Mot de passe: oublié",
    "Mot de passe: incorrect",
    "Contraseña: incorrecta",
    "Senha: inválida",
    "Wachtwoord: verlopen",
    "Lösenord: fel",
    "пароль: неверный",
    "Passwort: siehe unten",
    "Passwort: Zurücksetzen",
    "Kennwort: ändern",
    "Mot de passe: modifier",
    "Passwort: mindestens 8 Zeichen",
    "Mot de passe: voir ci-dessous",
    "密码: 错误",
    "Room 12 password is expired",
    "Step 3 password is required",
    "From today password is optional",
    "As of 2026-11-28 password is stored in the vault",
    "The password is Sun.",
    "The password is Jan",
    "The password is Monday.",
    "The password will be reset.",
    "The password will be sent by email",
    "The password will be different",
    "Das Passwort wird geändert",
    "Le mot de passe sera changé",
    "the password is secret and must not be shared",
    "the password is kept secret",
    "password: changeme",
]

# the value's span: the whole text after redaction
SPANS = [
    ("the safe combination is 12-34-56", "the safe combination is [REDACTED:password]"),
    ("the gate code is 4821", "the gate code is [REDACTED:pin]"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_a_plain_word_password_the_last_probe_saw_kept_is_redacted(text: str, secret: str) -> None:
    only_the_value_goes(text, secret)


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_the_prefilter_never_calls_such_a_text_plain(text: str, secret: str) -> None:
    never_plain(text)


@pytest.mark.parametrize("text", PUBLIC)
def test_what_is_said_about_a_password_is_kept(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(("text", "expected"), SPANS)
def test_a_grouped_value_span_takes_no_copula(text: str, expected: str) -> None:
    assert redact(text).text == expected
    assert redact(expected).text == expected


def test_round_13_cases_are_found_whatever_the_gating() -> None:
    for text, secret in SECRETS:
        found = engine.find_spans(text, gated=False)
        assert any(text[s:e] == secret for s, e, _ in found), text
