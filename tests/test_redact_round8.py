"""Round 8 (issue 27): holdout10's misses and look-alikes (and holdout9's last ones), each fixed by its cause, tested
with values of our own.

1. passphrases of plain words after a password label in any language and script, one separator throughout; a bare
   number after a password label (비밀번호 12049, 门禁密码 4821); a value in another script ending in digits; a reused
   password after a service name ("same as always, X"); 2. identity-number labels inflected (fødselsnummeret,
   henkilötunnukseni, personnumret, תעודת הזהות) and short (fnr, pnr); 3. cookies in verbose logs, curl -H/-b, DevTools
   rows; 4. {SHA}/{SSHA} hashes in htpasswd files; base32 TOTP seeds of letters only after a 2FA cue; recovery codes in
   three groups after a cue that runs on to its colon; 5. webhook URLs whole (Slack, Discord, Teams); Django's
   "django-insecure-" keys; cloud CLI key flags; Oracle JDBC user/password; Azure DevOps PATs in a table; a token split
   across messages; 6. look-alikes: placeholders after a provider prefix or in capitals, base64 of a sentence,
   documented test cards (and their CVC), a value labelled signature/digest/checksum, Google Analytics cookies, India's
   postal PIN code, a password-rule length in CJK, a year after a password label.
"""

from __future__ import annotations

import pytest

from agent_memory.redaction.api import redact_text

_LONG = "Kq2Lm9Xv7Bn3Rt6Yw1Zp4Hs8Jd0Fg5Qa2We7Rt9Yu3Io6Pa1Sd4Fg8Hj2Kl5Zx7Cv0Bn3Mq6Wr9Et2Yu5Ip8Oa1Sd4Fg7Hj0Kl3Zx6Cv9" * 3

SECRETS = [
    # 1. passwords in prose
    ("Das WLAN-Passwort ist orbit saddle lemon tiger clever", "orbit saddle lemon tiger clever"),
    ("Lösenordet till wifi:t är stereo garlic kitten velvet", "stereo garlic kitten velvet"),
    ("a jelszavam: ocean.timber.wagon.pepper", "ocean.timber.wagon.pepper"),
    ("wachtwoord van de nas is Rocket Marble Ginger Shadow", "Rocket Marble Ginger Shadow"),
    ("Пароль от роутера — salad mirror random cousin ticket", "salad mirror random cousin ticket"),
    ("ログインのパスワードはorbit saddle lemon tigerです", "orbit saddle lemon tiger"),
    ("আমার ইমেইলের পাসওয়ার্ড violin estate cabin frozen", "violin estate cabin frozen"),
    ("대문 비밀번호 73915", "73915"),
    ("门禁密码 28461", "28461"),
    ("my voicemail password 60731", "60731"),
    ("Kata sandi email saya 東京タワーパス47#", "東京タワーパス47#"),
    ("Disney+: same as always, Harbor.Quill58", "Harbor.Quill58"),
    ("HBO — the usual one: kT9#vv2Lmq", "kT9#vv2Lmq"),
    # 2. identity numbers, inflected or short labels
    ("Fødselsnummeret hans er 17048512345", "17048512345"),
    ("Personnumret är 850709-9805", "850709-9805"),
    ("Henkilötunnukseni on 131052-308T", "131052-308T"),
    ("fnr 05117043210", "05117043210"),
    ("מספר תעודת הזהות שלו 203918475", "203918475"),
    # 3. cookies
    (f"curl 'https://x.test/o' -H 'cookie: theme=dark; .AspNetCore.Cookies=CfDJ8{_LONG}' --compressed", _LONG[-40:]),
    (
        "curl https://x.test/e -b 'wordpress_logged_in_0a1b2c3d=bob%7C1790000000%7CqW8eR2tY6uI0oP4aS9dF1gH3jK5%7C0f1e2d3c4b5a'",
        "qW8eR2tY6uI0oP4aS9dF1gH3jK5",
    ),
    ("Name\tValue\tDomain\nJSESSIONID\t9C1F7A0B3E5D2C8F6A4B1E9D7C3F5A2B\t.x.test", "9C1F7A0B3E5D2C8F6A4B1E9D7C3F5A2B"),
    # 4. hashes, seeds, codes
    ("ops:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\nci:{SSHA}Zm9vYmFyYmF6cXV4cXV1eHh5enp5MTIzNA==", "W6ph5Mm5Pz8GgiULbPgzG37mj9g="),
    ("ops:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\nci:{SSHA}Zm9vYmFyYmF6cXV4cXV1eHh5enp5MTIzNA==", "Zm9vYmFyYmF6cXV4cXV1eHh5enp5MTIzNA=="),
    ("Slack 2FA setup key: mbwx qrtz hkjn plsv fgdc wxyz", "mbwx qrtz hkjn plsv fgdc wxyz"),
    ("Recovery codes for my Proton account (keep offline): QWTR-8K2M-Z7PL, HN4D-XC9V-B2RT, M3KD-77QP-WX2C", "QWTR-8K2M-Z7PL"),
    ("Recovery codes for my Proton account (keep offline): QWTR-8K2M-Z7PL, HN4D-XC9V-B2RT, M3KD-77QP-WX2C", "M3KD-77QP-WX2C"),
    # 5. token families and positions
    ("notify: https://hooks.slack.com/services/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", "https://hooks.slack.com"),
    (
        "hook https://discordapp.com/api/webhooks/112233445566778899/Xy9_aB8cD7eF6gH5iJ4kL3mN2oP1qR0sT9uV8wX7yZ6aB5cD4eF3",
        "https://discordapp.com/api",
    ),
    (
        "url: https://contoso.webhook.office.com/webhookb2/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b@1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809"
        "/IncomingWebhook/9f8e7d6c5b4a39281706f5e4d3c2b1a0/0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9/V2Qw9Er8Ty7Ui6Op5As4Df3Gh",
        "contoso.webhook.office.com",
    ),
    ("they pasted django-insecure-k3$9w!x0z@q^m2(p8_v=7r+t1y&u5n4b6c-e0f in the ticket", "django-insecure-k3$9w!x0z@q^m2"),
    (
        "az storage blob list --account-name st01 --account-key xK9vR2tY6uI0oP4aS9dF1gH3jK5lZ7xCwB2bV4cX6zQ8wE0rT2y== -c x",
        "xK9vR2tY6uI0oP4a",
    ),
    ("url=jdbc:oracle:thin:app_user/Wq7#zR2pLx9m@//db01:1521/SVC", "Wq7#zR2pLx9m"),
    ("| service | credential |\n|---|---|\n| Azure DevOps | `m4tqzkhxwvyerbuyoxpalkuikvnzyrsmzhrlc3qhtmpalqf6tojw` |", "m4tqzkhxwvyerb"),
    ("key part 1 = glpat-nXwR4Zo\nkey part 2 = su2_T1VVaRfiL\nconcatenate them", "glpat-nXwR4Zo"),
    ("me: first half is ghp_Q8wE2rT6yU0iO4pA9sD3\nbot: ok, send the rest\nme: fGhJkLzXcVbNmQwErTy", "fGhJkLzXcVbNmQwErTy"),
]

LOOK_ALIKES = [
    # placeholders
    "SLACK_APP_TOKEN=xapp-your-app-token",
    "OPENAI_API_KEY=sk-your-openai-key",
    "otpauth://totp/Acme:alice?secret=YOURBASE32SECRET&issuer=Acme",
    # base64 of a sentence (content, not a key)
    "data:\n  banner: SGVsbG8gZnJvbSB0aGUgcHJvZHVjdGlvbiBjbHVzdGVy",
    # documented test cards and the CVC given with one
    "Stripe test card 4242 4242 4242 4242, any future date, CVC 123",
    "Braintree sandbox: 4111111111111111 exp 12/30 cvv 737",
    # a value its label calls a signature, digest or checksum
    "signature: MEQCIF3kQ9vXy7wR2tY6uI0oP4aS9dF1gH3jK5lZ7xCwAiB2bV4cX6zQ8wE0rT2yU4iO6pA8sD0fG2hJ4kL6zX8cVw==",
    "checksum = Xk9vR2tY6uI0oP4aS9dF1gH3jK5lZ7xCwB2bV4cX6zQ=",
    # analytics cookies, postal codes, lengths, years, prose after a password label
    "Set-Cookie: _ga=GA1.2.918273645.1718000000; Path=/",
    "Address: 14 Park Street, pincode: 700016",
    "Courier hub PIN code 560095 Bengaluru",
    "パスワードは12文字以上にしてください",
    "password rotation policy since 2019",
    "password: must contain mixed case and a symbol",
    "The router password is printed on the label",
    "Netflix: same as always, nothing new this month",
    "spring.datasource.hikari.pool-name",
    "ssh-keygen -lf key.pub prints the fingerprint",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS, ids=[f"s{i}" for i in range(len(SECRETS))])
def test_round8_secret_is_redacted(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out, out
    assert redact_text(out) == out  # idempotent


@pytest.mark.parametrize("text", LOOK_ALIKES, ids=[f"b{i}" for i in range(len(LOOK_ALIKES))])
def test_round8_look_alike_is_kept(text: str) -> None:
    assert redact_text(text) == text
