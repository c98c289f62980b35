"""Round 10 of redaction (issue 27): holdout12's false positives, fixed by cause; values of our own."""

from __future__ import annotations

import pytest

from agent_memory.redaction.api import redact

# look-alikes: each must come out unchanged
PUBLIC = [
    # a value that is a call, not a literal: the secret is computed (React state hooks, getters, env lookups)
    'const [password, setPassword] = useState("")',
    "const [passcode, setPasscode] = useState(1234)",
    "let [pin, setPin] = React.useState(0);",
    "const [token, setToken] = useState(null);",
    'password: config.get("db")',
    # an /etc/shadow line with a locked or empty password: its ageing fields are numbers, not a pgpass password
    "bin:*:18800:0:99999:7:::",
    "sshd:!:19412:0:99999:7:::\nntp:*:19412:0:99999:7:::",
    # an option set to a quantity: key sizes, token lifetimes, ages
    "openssl genpkey -algorithm RSA -out priv.key -pkeyopt rsa_keygen_bits:3072",
    "openssl genpkey -algorithm RSA -out id.key -pkeyopt rsa_keygen_bits=2048",
    "token_ttl: 3600",
    "api_key_max_age=90",
    # an identity card named without a number
    "Personalausweis beantragen bis 2026",
]

# the same settings holding a real secret: still redacted
SECRETS = [
    ("const password = 'Vx8!qLm2Rt';", "Vx8!qLm2Rt"),
    ("db.internal:5432:orders:etl:Qp7wZ3nLr2", "Qp7wZ3nLr2"),
    ("openssl genrsa -aes256 -passout pass:Kj4mW9zPq1 -out k.pem 2048", "Kj4mW9zPq1"),
    ("api_key: 7730192845", "7730192845"),
    # identity cards named in their own languages, with a letters-and-digits number
    ("Personalausweis-Nr. T22000129X", "T22000129X"),
    ("Carta d'identità n. AY1234567", "AY1234567"),
    ("n° carte d'identité : 8UK3P9Q2L", "8UK3P9Q2L"),
    ("Dowód osobisty: AXC482917", "AXC482917"),
    # an id written with its check digit in brackets is no function call
    ("HKID: K482913(5)", "K482913"),
]


@pytest.mark.parametrize("text", PUBLIC)
def test_round10_look_alike_is_kept(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_round10_secret_is_redacted(text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out, out
    assert redact(out).text == out  # idempotent
