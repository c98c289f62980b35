"""The general mechanisms of agent_memory/redaction/generic.py: each test fails on the rules before them.

Values here are invented for these tests (not taken from any corpus), so they check the mechanism, not a fixture.
"""

from __future__ import annotations

import pytest

from agent_memory.redaction.api import redact


def _gone(text: str, secret: str) -> bool:
    out = redact(text).text
    return secret not in out and redact(out).text == out


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Il codice del lucchetto? La password del router è Qm7!tz@Lp2", "Qm7!tz@Lp2"),
        ("Salasana palvelimelle on hR4#kLm9Zq", "hR4#kLm9Zq"),
        ("Пароль от почты: Vb8$yTq2Lx", "Vb8$yTq2Lx"),
        ("סיסמה: Tz9@pLq4Wm", "Tz9@pLq4Wm"),
        ("데이터베이스 비밀번호는 Kp3%xQz8Rt", "Kp3%xQz8Rt"),
        ("Mật khẩu là Hw7&nPq2Zx", "Hw7&nPq2Zx"),
    ],
)
def test_password_labels_in_many_languages(text: str, secret: str) -> None:
    assert _gone(text, secret)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("La clave de la API de pagos es Wq9ZrT4xLm2PvK8sNb3Yh7Dc", "Wq9ZrT4xLm2PvK8sNb3Yh7Dc"),
        ("Anahtar: Zk4QmP8rTw2XvL6nBy9Hc3Fd", "Zk4QmP8rTw2XvL6nBy9Hc3Fd"),
        ("测试环境的密钥：Mv7XqT2pLz9RwK4nHb8Yc3Jd", "Mv7XqT2pLz9RwK4nHb8Yc3Jd"),
    ],
)
def test_key_labels_take_random_tokens(text: str, secret: str) -> None:
    assert _gone(text, secret)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Passnummer (Reisepass): X4R8TQ27M", "X4R8TQ27M"),
        ("免許証番号：310298774215", "310298774215"),
        ("Numéro de passeport : 19AV48213", "19AV48213"),
    ],
)
def test_identity_labels(text: str, secret: str) -> None:
    assert _gone(text, secret)


def test_value_on_the_line_after_its_label() -> None:
    text = "Here is the new token for the build farm:\n\n    Rz8kQm2XvT4pLw7nHc9YbD3fJs6G\n\nthanks"
    assert _gone(text, "Rz8kQm2XvT4pLw7nHc9YbD3fJs6G")


def test_table_columns_named_by_the_lexicon() -> None:
    text = "host,user,api_secret,region\nweb-1,ops,Tq8ZmW3rXk7LpV2nBh9YcD4f,eu\n"
    assert _gone(text, "Tq8ZmW3rXk7LpV2nBh9YcD4f")
    ids = "name,passport_number,country\nA. Person,K8301947Z,DE\n"
    assert _gone(ids, "K8301947Z")


def test_xml_element_named_for_a_secret() -> None:
    text = "<ServicePassword>\n  <Value>Lp4#qRz9Wx</Value>\n</ServicePassword>\n"
    assert _gone(text, "Lp4#qRz9Wx")


def test_authorization_header_with_any_alphabet_and_user_pass_flag() -> None:
    assert _gone("curl -H 'Authorization: token a{Q7>zP9}wL3mX' https://h.example", "a{Q7>zP9}wL3mX")
    assert _gone("curl -u deploy:'Wm!8zq+Lp3:R' https://ci.example.net", "Wm!8zq+Lp3:R")


def test_grouped_product_keys_and_recovery_code_lists() -> None:
    assert _gone("activate with QW8RT-M4ZPX-7KLNB-C2VHD-9TYFJ please", "QW8RT-M4ZPX-7KLNB-C2VHD-9TYFJ")
    codes = "My backup codes:\n1. 4821 9930\n2. 1177 0642\n3. 5519 2286\n"
    out = redact(codes).text
    assert "4821 9930" not in out and "5519 2286" not in out
    inline = "keep these: K7QX2M9PLT, R3ZW8N4VHY, M6TQ1X8KDB, P2LV9R5WZC"
    assert "R3ZW8N4VHY" not in redact(inline).text


def test_random_token_without_any_label() -> None:
    text = "ok so paste this in the dashboard Xq8Lm2RvT7kPz4WnB9hYc3Dj6FsG1aQ and restart"
    assert _gone(text, "Xq8Lm2RvT7kPz4WnB9hYc3Dj6FsG1aQ")


def test_webhook_url_secret_segment() -> None:
    assert _gone("hook: https://chat.example.org/hooks/q8zm2xk4pl7r9tw3vn6b5yhc1d", "q8zm2xk4pl7r9tw3vn6b5yhc1d")


@pytest.mark.parametrize(
    "text",
    [
        "STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
        "db_password: vault:secret/data/app#db_password",
        "example.com/mod v1.2.0 h1:Qw8Lm2RvT7kPz4WnB9hYc3Dj6FsG1aQxZr5Ek0Uo=\n",
        "IBAN: DE01051208711622499842",
        "see AbstractSingletonProxyFactoryBean2Impl for details",
        "assets/main.4f9c2a7b1e8d3f60a5c2.js loaded",
        "pod/web-7f9c2a7b1e-xk2p9 restarted",
        "[Peer]\nPublicKey = Qw8Lm2RvT7kPz4WnB9hYc3Dj6FsG1aQxZr5Ek0UoM=\n",
        "the payload was SGVsbG8sIHRoaXMgaXMgb25seSBhIHRlc3QgbWVzc2FnZQ==",
        "follow npub1q8zm2xk4pl7r9tw3vn6b5yhc1dq8zm2xk4pl7r9tw3vn6b5yhc1dqqqq",
        "Ich habe mein Passwort vergessen, kannst du es zurücksetzen?",
        "The password is stored hashed with argon2id",
        "order_id=Xq8Lm2RvT7kPz4WnB9hYc3Dj",
    ],
)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    "record_id",
    [
        "2026-11-27-alice-keeps-the-key-redacted-github-toke-0ea003fc",  # a redacted title's slug (export round trip)
        "2026-11-27-the-key-to-the-project-roadmap-document-ab12cd34",
    ],
)
def test_a_slug_id_after_a_key_word_is_not_a_secret(record_id: str) -> None:
    """Ids are slugs of titles: a key label's reach across a slug's words refused our own ids on import."""
    from agent_memory.model.values import looks_secret

    assert not looks_secret(record_id)
    assert looks_secret("2026-11-27-key-" + "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")  # a glued token still is
