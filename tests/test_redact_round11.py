"""Round 11 of redaction (issue 27, probe round 6): a password of ordinary words stated in prose ("my wifi password is
tangerine") is redacted; what is said *about* a password in the same frame ("my password is expired") is not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _redact_rounds import never_plain, only_the_value_goes

from agent_memory.redaction.api import redact

# (text, the secret): the secret must be gone, the words around it kept
SECRETS = [
    # the probe's cases
    ("my password is swordfish", "swordfish"),
    ("my wifi password is tangerine", "tangerine"),
    ("my password is: swordfish", "swordfish"),
    ("Remember my password is swordfish.", "swordfish"),
    ("my password is correct horse", "correct horse"),
    ("the password for the router is swordfish", "swordfish"),
    ("password is set to swordfish", "swordfish"),
    # English, more owners, devices and copulas
    ("our router password is blue whale", "blue whale"),
    ("The wifi password is lemonade, ask Tom if it fails.", "lemonade"),
    ("her email password is marmalade", "marmalade"),
    ("His laptop password was pancake", "pancake"),
    ("their guest wi-fi password is sunflower", "sunflower"),
    ("your password is now butterscotch", "butterscotch"),
    ("My password is still gingerbread", "gingerbread"),
    ("the passphrase for the vault is purple monkey dishwasher", "purple monkey dishwasher"),
    ("my passphrase is correct horse battery staple", "correct horse battery staple"),
    ("the password for my bank account is avalanche", "avalanche"),
    ("Note to self: my netflix password is popcorn.", "popcorn"),
    ("the password = meadowlark", "meadowlark"),
    ("the admin password is set to riverbank", "riverbank"),
    ("Password is changed to thunderbolt", "thunderbolt"),
    ("the router's password is kangaroo; the network is HomeNet", "kangaroo"),
    ("I told Sam that my password is cinnamon", "cinnamon"),
    ("the password is Swordfish", "Swordfish"),
    ("the password is 'wrong'", "wrong"),
    ('my password is "expired"', "expired"),
    ("our alarm password is nightingale, don't share it", "nightingale"),
    ("the passcode for the office door is pineapple", "pineapple"),
    ("my password is hunter and my pin is 4821", "hunter"),  # the pin goes too
    ("the password of the shared drive is blueberry muffin", "blueberry muffin"),
    # French
    ("mon mot de passe est tournesol", "tournesol"),
    ("le mot de passe du wifi est framboise", "framboise"),
    ("Mon mot de passe est : papillon bleu", "papillon bleu"),
    ("notre mot de passe était citronnade", "citronnade"),
    # German
    ("mein Passwort ist sonnenblume", "sonnenblume"),
    ("Mein WLAN-Passwort ist Sonnenblume", "Sonnenblume"),
    ("das Passwort für den Router ist apfelkuchen", "apfelkuchen"),
    ("unser Kennwort ist schmetterling", "schmetterling"),
    # Spanish
    ("mi contraseña es girasol", "girasol"),
    ("la contraseña del wifi es mariposa", "mariposa"),
    ("mi contrasena es chocolate blanco", "chocolate blanco"),
    # Portuguese
    ("minha senha é girassol", "girassol"),
    ("a senha do wifi é borboleta", "borboleta"),
    # Italian
    ("la mia password è girasole", "girasole"),
    ("la password del router è farfalla", "farfalla"),
    # Dutch
    ("mijn wachtwoord is zonnebloem", "zonnebloem"),
    ("het wachtwoord voor de router is pannenkoek", "pannenkoek"),
    # Swedish
    ("mitt lösenord är solros", "solros"),
    ("vårt lösenord är kanelbulle", "kanelbulle"),
]

# said about a password, in the same frame: each must come out unchanged
PUBLIC = [
    # the probe's cases
    "the password is wrong",
    "my password is expired",
    "the password is stored in the vault",
    "password is required",
    "the password is the same as before",
    "my password is too short",
    "the password is case-sensitive",
    "password is incorrect",
    "the password is hashed with bcrypt",
    "her password is in 1Password",
    # English
    "my password is expired now",
    "the password is changed every 90 days",
    "the password is case sensitive",
    "the password is easy to guess",
    "my password is weak",
    "the password is still the same",
    "If the password is wrong, retry.",
    "Remember: the password is hashed with argon2.",
    "the password is optional for local accounts",
    "my password is not working",
    "the password is missing from the config",
    "your password is too long",
    "the password is encrypted at rest",
    "the password is visible in the logs",
    "the password is shown only once",
    "the password manager is Bitwarden",
    "my password is twelve characters long",
    "the password is available in the team vault",
    "the password is unchanged since March",
    "the password is mandatory",
    "the password is whatever you set during setup",
    "A passphrase of four random words is easier to remember than a short complex password.",
    "the password is below",
    "my password is forgotten again",
    "the password is randomly generated",
    "the password for the router is printed on the label",
    "the password is unique per device",
    "your password is invalid",
    "the password is secure enough",
    "the password is different for each environment",
    # French
    "mon mot de passe est trop court",
    "mon mot de passe est expiré",
    "le mot de passe est incorrect",
    "le mot de passe est stocké dans le coffre",
    # German
    "mein Passwort ist falsch",
    "mein Passwort ist abgelaufen",
    "das Passwort ist zu kurz",
    "das Passwort ist gespeichert",
    "das Passwort ist erforderlich",
    # Spanish
    "mi contraseña es incorrecta",
    "la contraseña es demasiado corta",
    "la contraseña es obligatoria",
    # Portuguese
    "minha senha é muito curta",
    "a senha é obrigatória",
    # Italian
    "la mia password è scaduta",
    "la password è troppo corta",
    # Dutch
    "mijn wachtwoord is verlopen",
    "het wachtwoord is te kort",
    # Swedish
    "mitt lösenord är fel",
    "lösenordet är för kort",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_a_password_of_plain_words_stated_in_prose_is_redacted(text: str, secret: str) -> None:
    only_the_value_goes(text, secret, marker="[REDACTED:", others=(("[REDACTED:pin]", "4821"),))


@pytest.mark.parametrize("text", PUBLIC)
def test_what_is_said_about_a_password_is_kept(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_the_prefilter_never_calls_a_stated_password_plain(text: str, secret: str) -> None:
    never_plain(text)


def test_a_stated_password_is_redacted_once_and_stays_redacted() -> None:
    once = redact("my wifi password is tangerine").text
    assert once == "my wifi password is [REDACTED:password]"
    assert redact(once).text == once


def test_a_bang_after_a_stated_word_goes_with_it() -> None:
    # the engine's standing rule: a "!" typed right after a password may be part of it ("Girasole42!")
    assert redact("my netflix password is popcorn!").text == "my netflix password is [REDACTED:password]"


def test_a_stated_password_reaches_neither_the_record_id_nor_any_file(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    cli = [sys.executable, "-m", "agent_memory.cli", "--root", str(root)]
    subprocess.run([*cli, "init", "-p"], check=True, capture_output=True, timeout=120)
    text = "my wifi password is tangerine"
    done = subprocess.run([*cli, "remember", "--title", text, text], check=True, capture_output=True, text=True, timeout=120)
    assert "tangerine" not in done.stdout and "redacted" in done.stdout
    for path in root.rglob("*"):
        assert "tangerine" not in path.name
        if path.is_file():
            assert b"tangerine" not in path.read_bytes(), path
