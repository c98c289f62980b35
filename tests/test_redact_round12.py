"""Round 12 of redaction (issue 27, probe of round 11): a password of plain words stated in prose is redacted in the
frames round 11 missed (no owner word, "'s", a verb of setting with "to", a preposition before a bare label, "the
wifi pass"), in eight languages; what the same frames say *when* or *about* a password is kept ("the password is
Monday", "set the password to expire", "the password's length", "with password manager"); and a narrative reply to
a security question ("It is a long story.") is no answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from _redact_rounds import never_plain, only_the_value_goes

from agent_memory.backends.files.store import MemoryStore
from agent_memory.redaction.api import redact

# (text, the secret): the secret must be gone, the words around it kept
SECRETS = [
    # the probe's cases
    ("Password is tangerine", "tangerine"),
    ("I set the password to tangerine", "tangerine"),
    ("my password's tangerine", "tangerine"),
    ("with password Tangerine", "Tangerine"),
    ("the wifi pass is tangerine", "tangerine"),
    # the same frames, written for this round: English, French, German, Spanish, Portuguese, Italian, Dutch, Swedish
    ("Password is marmalade.", "marmalade"),
    ("Wifi password is blue whale", "blue whale"),
    ("Guest WiFi password is sunflower, ask at the desk.", "sunflower"),
    ("Login is bob, password is cinnamon", "cinnamon"),
    ("Username admin and password is riverbank", "riverbank"),
    ("Note: password is lemonade", "lemonade"),
    ("Reminder - password is gingerbread", "gingerbread"),
    ("Router password was pancake", "pancake"),
    ("Admin password is nightingale; don't share it.", "nightingale"),
    ("We changed the password to butterscotch yesterday.", "butterscotch"),
    ("I reset my password to avalanche", "avalanche"),
    ("She updated the wifi password to meadowlark", "meadowlark"),
    ("Set the password for the router to kangaroo.", "kangaroo"),
    ("They switched the guest password to popcorn and the ssid to HomeNet", "popcorn"),
    ("I changed my netflix password to blueberry muffin.", "blueberry muffin"),
    ("Our wifi password's lemonade", "lemonade"),
    ("The router password's swordfish, by the way.", "swordfish"),
    ("Connect with password Meadowlark", "Meadowlark"),
    ("Log in with the password marmalade", "marmalade"),
    ("Join the network using password Kangaroo.", "Kangaroo"),
    ("sign in via password tangerine, then change it", "tangerine"),
    ("the router pass is sunflower", "sunflower"),
    ("my email pass is pancake", "pancake"),
    ("The admin pass is riverbank.", "riverbank"),
    ("vpn pass is popcorn", "popcorn"),
    ("Mot de passe est tournesol", "tournesol"),
    ("J'ai changé le mot de passe en framboise", "framboise"),
    ("avec le mot de passe papillon", "papillon"),
    ("Passwort ist sonnenblume", "sonnenblume"),
    ("WLAN-Passwort ist apfelkuchen", "apfelkuchen"),
    ("Ich habe das Passwort auf schmetterling geändert", "schmetterling"),
    ("Ich setze das Passwort auf kirschbaum", "kirschbaum"),
    ("mit dem Passwort Sonnenblume", "Sonnenblume"),
    ("Contraseña es girasol", "girasol"),
    ("Cambié la contraseña a mariposa", "mariposa"),
    ("con la contraseña girasol", "girasol"),
    ("Senha é girassol", "girassol"),
    ("Mudei a senha para borboleta", "borboleta"),
    ("com a senha borboleta", "borboleta"),
    ("Password è girasole", "girasole"),
    ("Ho cambiato la password in farfalla", "farfalla"),
    ("con la password farfalla", "farfalla"),
    ("Wachtwoord is zonnebloem", "zonnebloem"),
    ("Ik heb het wachtwoord op pannenkoek gezet", "pannenkoek"),
    ("met wachtwoord zonnebloem", "zonnebloem"),
    ("Lösenord är solros", "solros"),
    ("Jag ändrade lösenordet till kanelbulle", "kanelbulle"),
    ("med lösenordet solros", "solros"),
    ("Ändrade lösenordet till blåbär", "blåbär"),
    ("Wifi: HomeNet, password is tangerine", "tangerine"),
    ("User is root, password is toor", "toor"),
]

# what the same frames say about a password: each must come out unchanged
PUBLIC = [
    # the probe's case: when the password changes, not what it is
    "the password is Monday",
    "The password is Friday, when IT rotates it.",
    "the password is March",
    "the new password is tomorrow",
    "Password is midnight tonight",
    "my password is Sunday morning",
    "the password is weekend",
    "le mot de passe est lundi",
    "Le mot de passe est vendredi",
    "das Passwort ist Montag",
    "Passwort ist Freitag",
    "la contraseña es lunes",
    "A senha é segunda",
    "la password è lunedì",
    "het wachtwoord is maandag",
    "lösenordet är måndag",
    "Password is required",
    "Password is expired",
    "Password is case sensitive.",
    "Password is stored in the vault",
    "Password is too short",
    "Password is changed every 90 days",
    "Wifi password is printed on the router",
    "What password is it?",
    "Password is Bob's",
    "the password is Bob's, not mine",
    "Forgot password is broken again",
    "Reset password is disabled",
    "Password is optional",
    "I set the password to expire in 90 days",
    "I set the password to expire.",
    "We changed the password to comply with the policy",
    "I changed the password to something stronger",
    "They set the password to never expire",
    "I reset the password to the default",
    "Set the password to randomize on boot",
    "I changed the password to match the old one",
    "Change the password to unlock the vault",
    "I sent the password to Bob",
    "Send the password to Tom",
    "He gave the password to Alice",
    "I wrote the password to a file",
    "the password's length is 12",
    "Check the password's strength.",
    "the password's hash is stored",
    "my password's expired",
    "the password's complexity",
    "Log in with password authentication",
    "Sign in with password or passkey",
    "protected with password",
    "Connect with password manager autofill",
    "with password reset links",
    "using password hashing",
    "via password rotation",
    "with password protection.",
    "con la contraseña incorrecta",
    "avec le mot de passe par défaut",
    "Cambié la contraseña para caducar",
    "Mudei a senha para expirar",
    # a bare label's value read in its preposition's language; adverbs, plural heads, compounds, requirement nouns
    "Die Datei ist mit Passwort geschützt.",
    "Mit Passwort anmelden",
    "mit Passwort versehen",
    "avec mot de passe oublié",
    "met wachtwoord beveiligd",
    "Sign in with password instead",
    "Users sign in with password attempts limited",
    "with password re-use",
    "Check the password's entropy.",
    "the password's gone",
    "Set the password to blank",
    "Reset the password to default",
    "Passwort ist Pflicht",
    # without an owner a stated value ends its clause; a time word with a predicate is still when
    "Password is king when it comes to legacy systems.",
    "Password is due Friday",
    "the password is due Friday",
    "Note: password is reused across sites, which is bad.",
    "The password's length must be at least 12.",
    "the password's been rotated",
    "Password's fine, the username was wrong.",
    "I changed the password to Bitwarden's generated one.",
    "We set the password to rotate monthly.",
    "I updated the password to meet the new rules.",
    "Log in with password and OTP.",
    "Contact support with password issues.",
    "La contraseña es mañana",
    "Passwort ist morgen fällig",
    "the wifi pass is valid",
    "the wifi pass is printed on the back",
    "my season pass is expensive",
    "the boarding pass is in my bag",
]

# security questions: a narrative reply after "It is" is kept; an answer (a name, a noun) still goes
SECQ_REPLIES = [
    "Where did you first meet? It is a long story.",
    "Where did you grow up? It is hard to say.",
    "Where did you first meet? It is complicated.",
    "What street did you grow up on? It is the same place.",
    "What was your first car? It is a secret, of course.",
    "Who was your best friend in school? It is a funny story.",
    "Where were you born? It is a small town in the north.",
    "What was your childhood nickname? It is embarrassing.",
    "Security question? It is not set.",
    "Where did you go on your honeymoon? It is a blur now.",
]
SECQ_ANSWERS = [
    "What is your favorite food? It is pizza",
    "Where were you born? It is Porto.",
    "What was the name of your first pet? It is Rex.",
    "What street did you grow up on? It is Maple Avenue",
    "What was your first car? It is a Honda Civic.",
    "Where did you first meet your husband? It is the Bronx.",
    "What was your childhood nickname? It is Bubbles.",
    "Security question? It is Rex.",
    "Memorable word? It is lantern.",
    "Who was your favourite teacher? It is Mrs. Dalloway.",
    "Which school did you first attend? It is Lincoln High.",
    "What was your first pet? It is biscuit",
    "Where did you go on your honeymoon? It is Bali.",
    "Mother's maiden name? It is Abernathy.",
    "Q: where did you first meet? A: a long story",
    "Where did you grow up? Answer: in the woods",
    "Where did you grow up? It is Springfield.",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_a_password_stated_in_the_frames_round_11_missed_is_redacted(text: str, secret: str) -> None:
    only_the_value_goes(text, secret)


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_the_prefilter_never_calls_such_a_text_plain(text: str, secret: str) -> None:
    never_plain(text)


@pytest.mark.parametrize("text", PUBLIC + SECQ_REPLIES)
def test_what_is_said_about_a_password_or_a_question_is_kept(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize("text", SECQ_ANSWERS)
def test_an_answer_to_a_security_question_still_goes(text: str) -> None:
    out = redact(text).text
    assert out != text and "[REDACTED:password]" in out, out


def test_a_stated_password_is_redacted_once_and_stays_redacted() -> None:
    once = redact("Password is tangerine").text
    assert once == "Password is [REDACTED:password]"
    assert redact(once).text == once


@pytest.mark.parametrize(
    "text",
    ["Password is tangerine", "I set the password to tangerine", "my password's tangerine", "with password Tangerine"],
)
def test_a_stated_password_reaches_neither_the_record_id_nor_any_file(tmp_path: Path, text: str) -> None:
    store = MemoryStore(tmp_path / "mem", durable=False)
    record = store.remember(text, title=text)
    assert "tangerine" not in record.id.lower()
    for path in (tmp_path / "mem").rglob("*"):
        assert "tangerine" not in path.name.lower()
        if path.is_file():
            assert b"angerine" not in path.read_bytes(), path
