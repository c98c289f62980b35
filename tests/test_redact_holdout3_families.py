"""Families grown from holdout3's misses (issue 27, finding 7), each tested on values of its own.

holdout3 (tests/fixtures/secrets_holdout3) was written blind and measured once at 307/347 redacted, 8/101 look-alikes
changed; its misses and damaged look-alikes were then studied by family and the families grown as general rules
(mostly ``agent_memory/redaction/contextual.py``).  Each case below is a secret of the family that is in no corpus,
with the exact redacted text, and a look-alike of the same family that must come out byte for byte.  Every case failed
on the code before (the secret reached the output, or the look-alike was changed).
"""

from __future__ import annotations

import pytest

from agent_memory.redaction.api import redact

# (family, secret text, redacted text, look-alike that must survive)
CASES = [
    (
        "argv_list",
        'args: ["mysql", "-u", "app", "-p" + "", "--password", "Lq7!vB2xZ9"]',
        'args: ["mysql", "-u", "app", "-p" + "", "--password", "[REDACTED:password]"]',
        'args: ["mysql", "-u", "app", "--password-stdin"]',
    ),
    (
        "argv_list_redis",
        'CMD ["valkey-cli", "-a", "Vk29xPq7Lm", "ping"]',
        'CMD ["valkey-cli", "-a", "[REDACTED:password]", "ping"]',
        'CMD ["valkey-cli", "-h", "cache", "ping"]',
    ),
    (
        "quoted_pair_define",
        "define('SMTP_PASSWORD', 'Gk29xPq7Lm!');",
        "define('SMTP_PASSWORD', '[REDACTED:password]');",
        "define('SMTP_HOST', 'mail.example.org');",
    ),
    (
        "quoted_pair_environ",
        'os.environ["PAYMENT_SECRET"] = "Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6"',
        'os.environ["PAYMENT_SECRET"] = "[REDACTED:password]"',
        'os.environ["DJANGO_SETTINGS_MODULE"] = "shop.settings"',
    ),
    (
        "quoted_pair_salt",
        "$settings['hash_salt'] = 'Zp3kLq8vWm2Xn7Yc5Rt1Bd6Fh9Js4Gu0Ai';",
        "$settings['hash_salt'] = '[REDACTED:password]';",
        "$settings['password_hash'] = 'bcrypt';",
    ),
    (
        "xml_pair_plist",
        "<key>ServerToken</key>\n<string>9hD2kLq8Zm3Vx7Pb</string>",
        "<key>ServerToken</key>\n<string>[REDACTED:password]</string>",
        "<key>CFBundleVersion</key>\n<string>9.2.1</string>",
    ),
    (
        "xml_pair_hadoop",
        "<name>fs.azure.account.key</name><value>Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6==</value>",
        "<name>fs.azure.account.key</name><value>[REDACTED:password]</value>",
        "<name>fs.defaultFS</name><value>hdfs://nn:8020</value>",
    ),
    (
        "client_constructor",
        "llm = MistralClient('Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6Fh0J')",
        "llm = MistralClient('[REDACTED:api_key]')",
        "s3 = boto3.client('s3', region_name='eu-west-1')",
    ),
    (
        "url_user_token",
        "dsn: https://a1b2c3d4e5f60718293a4b5c6d7e8f90@o42.ingest.example.io/7",
        "dsn: https://[REDACTED:url_password]@o42.ingest.example.io/7",
        "repo: ssh://git@github.com/acme/app.git",
    ),
    (
        "url_path_key",
        "rpc: https://eth.example-rpc.io/v2/Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6Fh0J",
        "rpc: https://eth.example-rpc.io/v2/[REDACTED:token]",
        "doc: https://github.com/acme/app/commit/3f2a9c1d7e8b4a6f0c2d1e3b5a7c9d0e1f2a3b4c",
    ),
    (
        "device_config",
        "line vty 0 4\n password 7 0822455D0A1606\ntacacs-server key Tq82hdLz9",
        "line vty 0 4\n password 7 [REDACTED:password]\ntacacs-server key [REDACTED:password]",
        "enable secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0\nsnmp-server community public RO",
    ),
    (
        "markdown_table",
        "| site | user | password |\n|---|---|---|\n| nas | admin | `Nas#4490x` |",
        "| site | user | password |\n|---|---|---|\n| nas | admin | `[REDACTED:password]` |",
        "| option | type | default |\n|---|---|---|\n| password | string | none |",
    ),
    (
        "csv_table",
        "host,login,passwd\nftp.example.org,bob,Fz92!kLm",
        "host,login,passwd\nftp.example.org,bob,[REDACTED:password]",
        "host,login,port\nftp.example.org,bob,21",
    ),
    (
        "key_bytes",
        "uint8_t nwk_key[16] = { 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70, 0x81, 0x92, 0xa3, 0xb4, 0xc5, 0xd6, 0xe7, 0xf8, 0x09 };",
        "uint8_t nwk_key[16] = { [REDACTED:private_key] };",
        "uint8_t mac_addr[6] = { 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f };",
    ),
    (
        "hex_key_name",
        'const char appSKey[] = "2b7e151628aed2a6abf7158809cf4f3c";',
        'const char appSKey[] = "[REDACTED:high_entropy_secret]";',
        'const char fw_sha[] = "2b7e151628aed2a6abf7158809cf4f3c";',
    ),
    (
        "cat_secret_file",
        "$ cat config/credentials/production.key\n3f9a1c2b7d4e5f60718293a4b5c6d7e8",
        "$ cat config/credentials/production.key\n[REDACTED:secret]",
        "$ cat ~/.ssh/id_ed25519.pub\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl bob@host",
    ),
    (
        "piped_password",
        "echo 'Hk29!xLq' | sudo passwd --stdin deploy",
        "echo '[REDACTED:password]' | sudo passwd --stdin deploy",
        'echo "$NEW_PW" | sudo passwd --stdin deploy',
    ),
    ("login_pair", "Zugangsdaten: max / Blume2026!", "Zugangsdaten: max / [REDACTED:password]", "login: admin / see the vault"),
    ("spaced_password", "das Passwort ist Q 7 m ! x 2 k", "das Passwort ist [REDACTED:password]", "the PIN is 4 to 6 digits long"),
    ("chat_cjk", "数据库密码是Zq8xLm29Tk，别外传", "数据库密码是[REDACTED:password]，别外传", "密码长度至少为8位。"),
    ("chat_ko", "관리자 비밀번호는 Kw8x!Lm29 입니다", "관리자 비밀번호는 [REDACTED:password] 입니다", "비밀번호를 잊으셨나요?"),
    (
        "chat_bare_suffix",
        "şifremiz Deniz2026x ama kimseye söyleme",
        "şifremiz [REDACTED:password] ama kimseye söyleme",
        "şifre en az 8 karakter olmalıdır",
    ),
    (
        "chat_to",
        "moje hasło to Kobalt99x, nie mów nikomu",
        "moje hasło to [REDACTED:password], nie mów nikomu",
        "hasło musi mieć co najmniej 8 znaków",
    ),
    ("codice_fiscale", "CF del cliente: RSSMRA85T10A562S", "CF del cliente: [REDACTED:national_id]", "codice prodotto: RSSMRA85T10A562Q"),
    ("curp", "registro con GOMC920512HDFRRL08 hoy", "registro con [REDACTED:national_id] hoy", "folio GOMC920512HDFRRL09 hoy"),
    ("be_national_number", "rijksregisternummer 85.07.30-033.28", "rijksregisternummer [REDACTED:national_id]", "versie 85.07.30-033.27"),
    ("labelled_alnum_id", "PAN card no: ABCPE1234F", "PAN card no: [REDACTED:national_id]", "flight LH1234 seat 14C, order ABCD12345678"),
    ("hebrew_label", "תעודת זהות 123456782", "תעודת זהות [REDACTED:national_id]", "טלפון 0501234567"),
    (
        "routing_and_account",
        "wire it to routing 021000021, account 000123456789",
        "wire it to routing [REDACTED:national_id], account [REDACTED:national_id]",
        "Chase's routing number 021000021 is public",
    ),
    (
        "card_new_issuers",
        "Mir 2200 0000 0000 0004, RuPay 6521 0000 0000 0007",
        "Mir [REDACTED:card_number], RuPay [REDACTED:card_number]",
        "order 2200 0000 0000 0005 shipped",
    ),
    ("card_spaced_digits", "card 4 5 3 9 1 4 8 8 0 3 4 3 6 4 6 7", "card [REDACTED:card_number]", "code 4 5 3 9 1 4 8 8 0 3 4 3 6 4 6 8"),
    (
        "partial_prefixed_token",
        "first bit ghp_Q7mZ2kLx9Vb3\n[09:14] bo: and the rest is Np8Yr5TcWd6Fh0Jg4SuPq",
        "first bit [REDACTED:token]\n[09:14] bo: and the rest is [REDACTED:token]",
        "see ghp_ for the prefix docs",
    ),
    (
        "prefixed_token_any_service",
        "TAVILY=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",
        "TAVILY=[REDACTED:token]",
        "request req_Zx8Lk2Mq9Vb3Np7Yr5Tc1Wd6 ok",
    ),
    (
        "three_part_bot_token",
        "bot.run('XKxaWT2Fw5yBYtDii2cZ5nrJCL.B5Hd37.QVm9MZX0NKM_-ciMz1kAOx6mOzeSpqb8W')",
        "bot.run('[REDACTED:discord_token]')",
        "version 1.2.3 of example.co.uk",
    ),
    (
        "cookie_header",
        "Cookie: lang=en; sid=Fe26.2**Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6*Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6x9",
        "Cookie: lang=en; sid=[REDACTED:token]",
        "Set-Cookie: theme=dark; Path=/; Max-Age=31536000",
    ),
    (
        "private_jwk",
        '{"kty":"oct","k":"GawgguFyGrWKav7AX4VKUg","alg":"HS256"}',
        '{"kty":"oct","k":"[REDACTED:private_key]","alg":"HS256"}',
        '{"kty":"RSA","e":"AQAB","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65Y"}',
    ),
    (
        "openvpn_static_key",
        "<secret>\n-----BEGIN OpenVPN Static key V1-----\ne685bdaf659a25a200e2b9e6d6ba3f3c\n-----END OpenVPN Static key V1-----\n</secret>",
        "<secret>\n[REDACTED:private_key]\n</secret>",
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    ),
    (
        "tezos_key",
        "baker key edsk3gUfUPyBSfrS9CCgmCiQsTCHGkviBDusMxDJstFtojtc1zcpsh",
        "baker key [REDACTED:private_key]",
        "baker tz1VSUr8wwNhLAzempoch5d6hLRiTh8Cjcjb",
    ),
    (
        "wifi_key",
        "Gäste-WLAN: SSID Cafe, key Zx8Lk2Mq9V!",
        "Gäste-WLAN: SSID Cafe, key [REDACTED:password]",
        "wifi: the network key is printed on the router",
    ),
    ("herestring", 'smbpasswd -a bob -s <<< "Sb8Vb3Np7"', 'smbpasswd -a bob -s <<< "[REDACTED:password]"', 'grep -c key <<< "$LINE"'),
    (
        "gh_secret_set",
        'gh secret set API_TOKEN --body "Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6"',
        'gh secret set API_TOKEN --body "[REDACTED:secret]"',
        'gh secret set API_TOKEN --body "$API_TOKEN"',
    ),
    (
        "snmp_two_passphrases",
        "snmpget -v3 -u mon -l authPriv -a SHA -A Au7hPhr4se9x -x AES -X Pr1vPhr4se7y 10.0.0.1 sysName.0",
        "snmpget -v3 -u mon -l authPriv -a SHA -A [REDACTED:password] -x AES -X [REDACTED:password] 10.0.0.1 sysName.0",
        "snmpget -v2c -c public 10.0.0.1 sysName.0",
    ),
    (
        "flag_value_with_dash",
        "psexec \\\\host -u admin -p -Xz8Lk2Mq9V cmd",
        "psexec \\\\host -u admin -p [REDACTED:password] cmd",
        "psexec \\\\host -u admin -p -s cmd",
    ),
    # a second round, grown after probing each family with values of its own
    (
        "aws_id_and_secret_pair",
        "aws keys: AKIAZX8LK2MQ9VB3NP7Y / wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEK1",
        "aws keys: [REDACTED:aws_access_key_id] / [REDACTED:aws_secret_key]",
        "AWS access key ids start with AKIA; the secret is 40 characters long",
    ),
    (
        "app_specific_password",
        "my Gmail app password is abcd efgh ijkl mnoq",
        "my Gmail app password is [REDACTED:password]",
        "create an app password under Security > App passwords",
    ),
    ("wifi_qr", "WIFI:S:HomeNet;T:WPA;P:Sup3rS3cret!;;", "WIFI:S:HomeNet;T:WPA;P:[REDACTED:password];;", "WIFI:S:GuestNet;T:nopass;;"),
    (
        "tor_onion_key",
        "ADD_ONION ED25519-V3:YH3cF0ZVsMtaZdk3a0gxEp8mIUtKxexL0h4DlxeIzdQgIRDgsgWpLtK7iaZ0kIKSyVzrNzCu85vi0fKeERWfKg== Port=80",
        "ADD_ONION ED25519-V3:[REDACTED:private_key] Port=80",
        "ADD_ONION NEW:ED25519-V3 Port=80",
    ),
    (
        "service_tokens",
        "twitch: oauth:abcdefghij0123456789klmnopqrst; plaid access-sandbox-8f14e45f-ceea-167a-5a36-dedd4bea2543",
        "twitch: [REDACTED:token]; plaid [REDACTED:token]",
        "twitch: use oauth: tokens; plaid access-sandbox environment",
    ),
    (
        "xml_secret_element_with_attributes",
        '<Pass encoding="base64">aHVudGVyMjAyNiE=</Pass>',
        '<Pass encoding="base64">[REDACTED:password]</Pass>',
        '<Passport country="DE">issued</Passport>',
    ),
    (
        "xml_key_value_entry",
        '<entry key="db.password">Pr0p3rt!es9</entry>',
        '<entry key="db.password">[REDACTED:password]</entry>',
        '<entry key="db.url">jdbc:postgresql://db/app</entry>',
    ),
    (
        "prefixed_hex_token",
        "run the scan with squ_9aa3d95b3bc440fa88ea12eaa44561619aa3d95b",
        "run the scan with [REDACTED:token]",
        "tag build-9aa3d95b3bc440fa88ea12eaa44561619aa3d95b pushed",
    ),
    ("iban_with_dashes", "IBAN DE89-3704-0044-0532-0130-00", "IBAN [REDACTED:iban]", "ref DE89-3704-0044-0532-0130-01"),
    ("cli_pass_flag", "./server --db-pass Db8!kLz92", "./server --db-pass [REDACTED:password]", "./server --bypass-cache true"),
    (
        "partial_token_same_line",
        '{"content":"first half: ghp_Q7mZ2kLx9Vb3"}, {"content":"rest: Np8Yr5TcWd6Fh0Jg4SuPq"}',
        '{"content":"first half: [REDACTED:token]"}, {"content":"rest: [REDACTED:high_entropy_secret]"}',
        '{"content":"the ghp_ prefix marks a PAT"}',
    ),
    (
        "token_spelt_out",
        "token: g h p _ Q 7 m Z 2 k L x 9 V b 3 N p 8 Y r 5 T c W d 6 F h 0 J g 4 S u P q 1 2 3 4",
        "token: [REDACTED:token]",
        "a b c d e f g h i j k l m n o p q r s",
    ),
]


@pytest.mark.parametrize(("family", "text", "expected", "lookalike"), CASES, ids=[c[0] for c in CASES])
def test_family_grown_from_holdout3(family: str, text: str, expected: str, lookalike: str) -> None:
    assert redact(text).text == expected
    assert redact(expected).text == expected  # idempotent
    assert redact(lookalike).text == lookalike


# Values made to be committed: encrypted at rest, public, or references to a secret kept elsewhere.
LOOKALIKES = [
    "api_key: ENC[AES256_GCM,data:Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6,iv:Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6Fh0Jg4Su=,tag:Qm8Zx2Lk9Vb3Np7Yr5Tc1Wd6==,type:str]",
    "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162636465666768696a6b6c6d6e6f707172737475767778797a3031323334",
    "kind: SealedSecret\nspec:\n  encryptedData:\n    api_token: AgBy3i4OJSWK+PiTySYZZA1rO43cGDEq8Zx2Lk9Vb3Np7Yr5Tc1Wd6Fh0Jg4Su==",
    "tips: 3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",
    '{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}',
    "PAYPAL_SECRET_KEY=YOUR_PAYPAL_SECRET_KEY",
    "SMTP_TOKEN=\nSMTP_HOST=",
    "DB_PASSWORD=op://Staging/Postgres/password",
    "mqtt_password: !secret mqtt_password",
    "my password manager is 1Password",
    '{"alg":"RS256","kid":"b9f2a1c3","x5t":"Zx8Lk2Mq9Vb3Np7Yr5Tc1Wd6Fh0"}',
    r"the password must match ^(?=.*[A-Z])(?=.*\d).{12,}$",
]

# Look-alikes of the new families: the rules must not reach them.
NEW_FAMILY_LOOKALIKES = [
    "| Action | Key |\n|---|---|\n| Save | Ctrl+S |\n| Quit | Ctrl+Q2 |",
    "id,name,token_count\n1,alice,42",
    "| SECRET_KEY | see .env |",
    "t('password_too_short', 'Password too short!')",
    "mixpanel.init('8f14e45fceea167a5a36dedd4bea2543')",
    "posthog.init('phc_Zx8Lk2Mq9Vb3Np7Yr5Tc1Wd6Fh0Jg4SuPq8Lk2Zx9V')",
    "image: registry.example.com/team/app:build-8f14e45fceea167a5a36dedd4bea2543",
    "completion id chatcmpl-8VzQ1bK9Z2xYwLm3Pq7RtUv4sN6 returned",
    "$ cat dist/app.tar.gz.sha256\n9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "press key 7 twice to reset",
    "account: prod / us-east-1",
    "client = boto3.client('s3', region_name='eu-west-1')",
    "uuid.UUID('7C9E6679-7425-40DE-944B-E07FC1F90AE7')",
    "IMEI 862543038565433",
    "Chase's routing number 021000021 is on their website",
    "AWS account 123456789012 in eu-west-1",
]


@pytest.mark.parametrize("text", NEW_FAMILY_LOOKALIKES)
def test_lookalikes_of_the_new_families_survive(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize("text", LOOKALIKES)
def test_committed_or_public_values_survive(text: str) -> None:
    assert redact(text).text == text
