"""Round 4b (redaction/cues.py): secrets found by cause, and look-alikes spared by cause.

The examples are new ones, written for these tests (not copied from a corpus): each checks that a rule catches its
family, not one corpus line."""

from __future__ import annotations

import pytest

from agent_memory.redaction.api import redact

CAUGHT = [
    # a password label of any language, filler words, then a value with digits or symbols
    ("passordet er Fjord.2231kx", "Fjord.2231kx"),
    ("salasana on Kettu_8812pq", "Kettu_8812pq"),
    ("κωδικός είναι Delta!4410zz", "Delta!4410zz"),
    ("the password, it's qWm7Lx2RpT, ok?", "qWm7Lx2RpT"),
    ("the vault passphrase is copper-lantern-meadow-quiet", "copper-lantern-meadow-quiet"),
    ("Password:\nRiver.8823xo", "River.8823xo"),
    # the value before its label; reset-to; user / password
    ("Falcon#7731zz is the password for the router", "Falcon#7731zz"),
    ("I changed it to Winter2027# this morning", "Winter2027#"),
    ("log in with m.ruiz / Cedar.4419vv please", "Cedar.4419vv"),
    # a PIN after a code word that says what it opens; a CVV after a card number
    ("alarm code is *8841 on the left panel", "8841"),
    ("Tür-Code: 4419", "4419"),
    ("card 4111 1111 1111 1111 exp 09/29, codice di sicurezza 552", "552"),
    # security answers; OTP seeds; backup codes
    ("Q: name of your first car? A: Corolla", "Corolla"),
    ("MFA secret for ops: JBSWY3DPEHPK3PXP4Q2A", "JBSWY3DPEHPK3PXP4Q2A"),
    ("recovery codes: 1234 5678, 9012 3456, 7788 9911", "9012 3456"),
    # secret columns and name/value structures
    ("login;passwort\nbob;Xy7-kk22pq\n", "Xy7-kk22pq"),
    ("INSERT INTO accounts (id, login, user_password) VALUES (3, 'bo', 'Zq81mmXr2');", "Zq81mmXr2"),
    ('setenv("DB_PASSWORD", "q8Zr!m2Lx")', "q8Zr!m2Lx"),
    ("<key>SyncToken</key>\n<string>a81Kd0Qm2zPw</string>", "a81Kd0Qm2zPw"),
    ('{"name": "sessionid", "value": "k2j3h4g5f6d7s8a9"}', "k2j3h4g5f6d7s8a9"),
    ('const cfg = { stripeSecret: "a(9]Zq7!mW3)kL" };', "a(9]Zq7!mW3)kL"),
    ("bob:{CLEARTEXT}Pl41nT3xt99\n", "Pl41nT3xt99"),
    # passwords handed to commands
    ("echo 'Hunter2!x9q' | docker login --password-stdin -u bob", "Hunter2!x9q"),
    ("7z a -pS3cr3tZip9 backup.7z docs/", "S3cr3tZip9"),
    ('"replica" "r3pl1ca-Pw-77"\n', "r3pl1ca-Pw-77"),
    # split, wrapped, checksummed, URL positions
    ("first half 55554444\nsecond half 33332222", "33332222"),
    ("Zahlung an DE89370400440532013000 bitte", "DE89370400440532013000"),
    ("ABA 021000021, account number 000123456789", "021000021"),
    ("5500  0000  0000  0004 valid 10/30", "5500  0000  0000  0004"),
    ("https://app.example.org/login/verify?user=7&token=Q8xLm2Pz9Rt4Vw6Yb1Nc", "Q8xLm2Pz9Rt4Vw6Yb1Nc"),
    ("https://0f1e2d3c4b5a69788796a5b4c3d2e1f0:x@sentry.example.org/3", "0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
    ("GET /bot123456789:AAHk2k3j4h5g6f7d8s9a0qwertyuiopasdf/getMe", "123456789:AAHk2k3j4h5g6f7d8s9a0qwertyuiopasdf"),
]


@pytest.mark.parametrize(("text", "secret"), CAUGHT, ids=[c[1][:18] for c in CAUGHT])
def test_cue_family_is_redacted(text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out, out
    assert redact(out).text == out  # idempotent


SPARED = [
    '<script integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC"></script>',
    "-----BEGIN PGP SIGNATURE-----\n\niQEzBAABCAAdFiEEq8Rk2Lm9Zx7Pq3Wv1Ty5Ui0Op4AsdF3gh6Jk\n=Ab1c\n-----END PGP SIGNATURE-----",
    "background: url(data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==)",
    "X-Request-Id: 7Hq2Lm9Zx4Pq3Wv1Ty5Ui0Op4AsdF3gh6Jk8",
    "see https://drive.google.com/file/d/1aB2cD3eF4gH5iJ6kL7mN8oP9qR0sT1uV/view",
    "AES-192 test key 000102030405060708090a0b0c0d0e0f1011121314151617 from the spec's appendix",
    "AWS_SECRET_ACCESS_KEY=je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
    "Authorization: Basic btoa(user:pass)",
    "export STRIPE_KEY=sk_live_...",
    "ftp://user:pass@files.example.org/pub is the form",
    'assert hexdigest(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"',
    '{"kid": "2", "x5t#S256": "Qm8xLk2Pz9Rt4Vw6Yb1Nc3Df5Gh7Jk9Lm0Np2Qr4St6"}',
    "Wells Fargo's routing number is 121000248",
    "map.accessToken = 'pk.eyJ1IjoiZGVtbyIsImEiOiJja2x4In0.Zk2Lm9Qx7Pq3Wv1Ty5Ui0';",
    "The password is stored hashed with scrypt2026 settings.",
    "La contraseña está en Bitwarden2, no aquí.",
]


@pytest.mark.parametrize("text", SPARED, ids=range(len(SPARED)))
def test_look_alike_is_spared(text: str) -> None:
    assert redact(text).text == text
