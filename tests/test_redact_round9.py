"""Round 9 of redaction (issue 27): holdout11's misses and false positives, fixed by cause; values of our own."""

from __future__ import annotations

import pytest

from agent_memory.redaction.api import redact

# (text, the secret that must not survive): each row a cause, in more than one phrasing or setting
SECRETS = [
    # PostgreSQL and MySQL password hashes in dumps of their credential tables
    ("rolname | rolpassword\nbilling | md50a1b2c3d4e5f60718293a4b5c6d7e8f9", "md50a1b2c3d4e5f60718293"),
    ("INSERT INTO pg_authid VALUES ('etl', 'md5ffeeddccbbaa99887766554433221100');", "md5ffeeddccbbaa998877"),
    ("| app | % | *81F5E21E35407D884A6CD4A731AEBFB6AF209E1B | mysql_native_password |", "*81F5E21E35407D884A6CD"),
    ("authentication_string: *0D3CED9BEC10A777AEC23CCC353A8C08A633045E", "*0D3CED9BEC10A777AEC23"),
    # a TOTP seed under a "seed" key, in YAML, .env and JSON
    ("otp:\n  seed: KZ3QW7HLP2MXR5TD6VNJ4YBE", "KZ3QW7HLP2MXR5TD6VNJ"),
    ("TOTP_SEED=mfzwizltmfzgs3tfmu2dinbvgy3tq4b7", "mfzwizltmfzgs3tfmu2d"),
    ('{"otpSeed": "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"}', "GEZDGNBVGY3TQOJQGEZD"),
    # backup codes one a line under their heading, numbered or bulleted
    ("RECOVERY ONE-TIME CODES\n1. 4821 9930\n2. 7712 0456\n3. 3390 1187", "4821 9930"),
    ("Backup codes\n- 55810274\n- 90317736\n- 12874409\n- 66021983", "90317736"),
    # Oracle clients' user/password@db (the password may hold "@")
    ("$ sqlplus scott/T1ger#88@//db7.corp.example:1521/SALES", "T1ger#88"),
    ("expdp hr/Pa@ss-2291@orclpdb directory=dp schemas=hr", "Pa@ss-2291"),
    ("rman target sys/Wint3rIsC0ming", "Wint3rIsC0ming"),
    # net use: the password position holds a password even when it reads like a host or a file name
    (r"net use Y: \\nas02\backup Vq7.mwpR3kZt /user:HQ\robot", "Vq7.mwpR3kZt"),
    # gate, intercom and lock codes in Spanish, Polish and English, a dial combination in pairs
    ("la clave de la puerta es 7724", "7724"),
    ("kod do domofonu: 3318", "3318"),
    ("padlock combo is 12-40-07", "12-40-07"),
    # an XML name/value pair whose value element carries attributes (KeePass export, a config's <value type=…>)
    ('<String><Key>Password</Key><Value ProtectInMemory="True">rT5#wq8Lmz</Value></String>', "rT5#wq8Lmz"),
    ('<property><name>db.password</name><value type="plain">Xk29vbQ4sL</value></property>', "Xk29vbQ4sL"),
    # a card's code written right after its expiry, without a label
    ("backup visa\n4556 7375 8689 9855\n09/27 / 316", "316"),
    ("amex 3782-910455-62310 exp 11/28 7305", "7305"),
]

# look-alikes: each must come out unchanged
PUBLIC = [
    # a secret store's reference is where the secret lives, not the secret
    "AZURE_CLIENT_SECRET=@Microsoft.KeyVault(SecretUri=https://kv-ops.vault.azure.net/secrets/api-secret/)",
    "DB_PASSWORD=@Microsoft.KeyVault(VaultName=kv-ops;SecretName=db-pass)",
    "DB_PASSWORD=arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-Ab12Cd",
    # a shell prompt's label: the quote after it closes the prompt
    "read -s -p 'Password: ' DBPASS && echo",
    'read -rp "API token: " TOKEN',
    # a comparison with a variable
    "if token == expected:",
    "assert password == confirm_password",
    # a Kubernetes secret's name
    "auth:\n  existingSecret: grafana-admin\n  existingSecretPasswordKey: admin-password",
    "external_secret: payments-db-creds",
    # gpg names a key by its algorithm and fingerprint
    "gpg: using RSA key 6A1F0C55D2B7E3F4A9C8B7D6E5F4A3B2C1D0E9F8",
    "gpg: using EDDSA key 0F1E2D3C4B5A69788796A5B4C3D2E1F00A1B2C3D",
    # numbers near cards that are not a card's code: a test card's, a date, a count
    "Stripe test card 4242 4242 4242 4242, 12/34, any CVC 567",
    "order 88231 shipped 06/29 / 548 boxes",
    # a random seed, an md5 digest labelled as one, a lock combo's date
    "seed: 42",
    "random_seed=1234",
    "md5: 9e107d9d372bb6826bd81d3542a419d6",
    "lock combo changed on 2024-05-12",
    '<String><Key>Title</Key><Value ProtectInMemory="False">Router admin</Value></String>',
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_round9_secret_is_redacted(text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out, out
    assert redact(out).text == out  # idempotent


@pytest.mark.parametrize("text", PUBLIC)
def test_round9_look_alike_is_kept(text: str) -> None:
    assert redact(text).text == text
