"""Round 6b (issue 27): vendor token formats a user pastes without a label — a bare token in a log line, a URL, a JSON
value, a command, prose in another language — each recognised by its prefix or structure (``redaction/providers.py``).

Every value here is generated from a seeded random source with the format's alphabet and length: none is a real
credential. Each format is checked in several settings and must come out redacted by its own provider row; look-alikes
(public-by-design keys, words, hashes, UUIDs, identifiers in code that share a prefix) must come out unchanged.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable

import pytest

from agent_memory.redaction import engine, prefilter
from agent_memory.redaction.api import contains_secret, redact
from agent_memory.redaction.providers import PROVIDERS

_R = random.Random(20261127)
AN = string.ascii_letters + string.digits
LO = string.ascii_lowercase + string.digits
UP = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = AN + "+/"
URLSAFE = AN + "-_"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
DIG = string.digits


def g(alphabet: str, n: int) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


def uuid() -> str:
    return f"{g(HEX, 8)}-{g(HEX, 4)}-4{g(HEX, 3)}-a{g(HEX, 3)}-{g(HEX, 12)}"


# format -> (kind, generator)
FORMATS: dict[str, tuple[str, Callable[[], str]]] = {
    "huggingface_org": ("huggingface_token", lambda: "api_org_" + g(string.ascii_letters, 34)),
    "langfuse_secret": ("api_key", lambda: "sk-lf-" + uuid()),
    "cerebras": ("api_key", lambda: "csk-" + g(LO, 48)),
    "firecrawl": ("api_key", lambda: "fc-" + g(HEX, 32)),
    "anyscale": ("api_key", lambda: "esecret_" + g(LO, 26)),
    "browserbase": ("api_key", lambda: "bb_live_" + g(URLSAFE, 27)),
    "bedrock_long_term": ("api_key", lambda: "ABSKQmVkcm9ja0FQSUtleS" + g(B64, 110) + "="),
    "bedrock_short_term": ("api_key", lambda: "bedrock-api-key-" + g(B64, 200) + "=="),
    "adyen": ("api_key", lambda: "AQE" + g(AN, 70) + "==-" + g(B64, 43) + "=-" + g(AN, 16)),
    "paddle": ("api_key", lambda: "pdl_live_apikey_" + g(LO, 26) + "_" + g(AN, 22) + "_" + g(AN, 3)),
    "checkout_sandbox": ("api_key", lambda: "sk_sbox_" + g(LO, 26)),
    "paypal_access_token": ("token", lambda: "A21AA" + g(URLSAFE, 90)),
    "easypost": ("api_key", lambda: "EZAK" + g(HEX, 54)),
    "resend": ("api_key", lambda: "re_" + g(AN, 8) + "_" + g(AN, 24)),
    "brevo": ("api_key", lambda: "xkeysib-" + g(HEX, 64) + "-" + g(AN, 16)),
    "brevo_smtp": ("api_key", lambda: "xsmtpsib-" + g(HEX, 64) + "-" + g(AN, 16)),
    "intercom": ("token", lambda: "dG9rOj" + g(B64, 54) + "="),
    "azure_annotated": ("api_key", lambda: g(AN, 52) + "JQQJ99BBACAAAAAAZDO" + g(AN, 13)),
    "bitbucket_app_password": ("token", lambda: "ATBB" + g(AN, 32) + g(HEX, 8).upper()),
    "octopus": ("api_key", lambda: "API-" + g(UP, 26)),
    "nuget": ("api_key", lambda: "oy2" + g(LO, 43)),
    "jfrog_api_key": ("token", lambda: "AKCp" + g(AN, 69)),
    "jfrog_reference_token": ("token", lambda: "cmVmdGtuOjAxOjE" + g(AN, 49)),
    "crates_io": ("token", lambda: "cio" + g(AN, 32)),
    "newrelic_license": ("newrelic_key", lambda: g(HEX, 36) + "NRAL"),
    "grafana_legacy": ("grafana_token", lambda: "eyJrIjoi" + g(B64, 60) + "fQ=="),
    "honeycomb_ingest": ("api_key", lambda: "hcaik_01" + g(LO, 56)),
    "honeycomb_management": ("api_key", lambda: "hcxmk_01" + g(LO, 24)),
    "elastic_cloud": ("api_key", lambda: "essu_" + g(B64, 80) + "=="),
    "axiom": ("token", lambda: "xaat-" + uuid()),
    "launchdarkly_sdk": ("api_key", lambda: "sdk-" + uuid()),
    "launchdarkly_api": ("api_key", lambda: "api-" + uuid()),
    "flagsmith_server": ("api_key", lambda: "ser." + g(AN, 22)),
    "asana": ("token", lambda: "2/" + g(DIG, 16) + "/" + g(DIG, 16) + ":" + g(HEX, 32)),
    "asana_v1": ("token", lambda: "1/" + g(DIG, 16) + ":" + g(HEX, 32)),
    "clickup": ("token", lambda: "pk_" + g(DIG, 8) + "_" + g(UP, 32)),
    "trello": ("token", lambda: "ATTA" + g(HEX, 64) + g(HEX, 8).upper()),
    "apify": ("token", lambda: "apify_api_" + g(AN, 36)),
    "pinterest": ("token", lambda: "pina_" + g(UP, 96)),
    "instagram": ("token", lambda: "IGQVJ" + g(URLSAFE, 150)),
    "dropbox_short_lived": ("dropbox_token", lambda: "sl.u.AF" + g(URLSAFE, 140)),
    "neon": ("api_key", lambda: "napi_" + g(LO, 64)),
    "openshift": ("token", lambda: "sha256~" + g(URLSAFE, 43)),
    "scaleway": ("api_key", lambda: "SCW" + g(UP, 16) + "7"),
    "onepassword_service_account": ("token", lambda: "ops_eyJzaWduSW5BZGRyZXNzIjoi" + g(B64, 300)),
    "onepassword_secret_key": (
        "secret",
        lambda: "A3-" + g(UP, 6) + "-" + g(UP, 6) + "-" + "-".join(g(UP, 5) for _ in range(4)),
    ),
    "bitwarden_machine": ("token", lambda: "0." + uuid() + "." + g(AN, 30) + ":" + g(B64, 22) + "=="),
    "infisical_service": ("token", lambda: "st." + uuid() + "." + g(HEX, 32) + "." + g(HEX, 32)),
    "databricks_oauth": ("databricks_token", lambda: "dose" + g(HEX, 32)),
    "nebula": ("api_key", lambda: "dnkey-" + g(LO, 26) + "-" + g(LO, 52)),
    "aws_session": ("token", lambda: "IQoJb3JpZ2luX2VjE" + g(B64, 300) + "="),
    "aws_session_old": ("token", lambda: "FwoGZXIvYXdzE" + g(B64, 250)),
    "yandex_api": ("api_key", lambda: "AQVN" + g(URLSAFE, 36)),
    "yandex_oauth": ("api_key", lambda: "y0_" + g(URLSAFE, 55)),
    "flyio_org": ("flyio_token", lambda: "fo1_" + g(URLSAFE, 43)),
    "discord_mfa": ("discord_token", lambda: "mfa." + g(URLSAFE, 84)),
    "riot": ("api_key", lambda: "RGAPI-" + uuid()),
    "doppler_service": ("doppler_token", lambda: "dp.st.prd." + g(AN, 43)),
    "elevenlabs": ("api_key", lambda: "sk_" + g(HEX, 48)),
    "pinecone": ("api_key", lambda: "pcsk_" + g(AN, 6) + "_" + g(AN, 63)),
    "tavily": ("token", lambda: "tvly-dev-" + g(AN, 32)),
    "together": ("api_key", lambda: "tgp_v1_" + g(URLSAFE, 43)),
    "nvidia": ("api_key", lambda: "nvapi-" + g(URLSAFE, 64)),
    "jina": ("api_key", lambda: "jina_" + g(HEX, 32) + g(URLSAFE, 28)),
    "e2b": ("api_key", lambda: "e2b_" + g(HEX, 40)),
    "plaid": ("token", lambda: "access-production-" + uuid()),
    "flutterwave": ("api_key", lambda: "FLWSECK_TEST-" + g(HEX, 32) + "-X"),
    "shippo": ("token", lambda: "shippo_live_" + g(HEX, 40)),
    "duffel": ("token", lambda: "duffel_test_" + g(URLSAFE, 43)),
    "circleci": ("token", lambda: "CCIPAT_" + g(AN, 22) + "_" + g(HEX, 40)),
    "harness": ("token", lambda: f"pat.{g(URLSAFE, 22)}.{g(AN, 24)}.{g(AN, 20)}"),
    "sonarqube": ("token", lambda: "squ_" + g(HEX, 40)),
    "clojars": ("token", lambda: "CLOJARS_" + g(HEX, 60)),
    "deno_deploy": ("token", lambda: "ddp_" + g(AN, 36)),
    "posthog_personal": ("api_key", lambda: "phx_" + g(AN, 43)),
    "statsig_server": ("api_key", lambda: "secret-" + g(AN, 43)),
    "stytch": ("api_key", lambda: "secret-live-" + g(URLSAFE, 36)),
    "linear_oauth": ("linear_key", lambda: "lin_oauth_" + g(HEX, 64)),
    "hubspot": ("token", lambda: "pat-na1-" + uuid()),
    "contentful": ("token", lambda: "CFPAT-" + g(URLSAFE, 43)),
    "typeform": ("token", lambda: "tfp_" + g(AN, 44) + "_" + g(AN, 14)),
    "salesforce_session": ("token", lambda: "00D" + g(AN, 15) + "!AQ" + g(AN + "._", 96)),
    "readme": ("api_key", lambda: "rdme_" + g(LO, 70)),
    "sourcegraph": ("token", lambda: "sgp_" + g(HEX, 16) + "_" + g(HEX, 40)),
    "prefect": ("api_key", lambda: "pnu_" + g(AN, 36)),
    "scalingo": ("token", lambda: "tk-us-" + g(URLSAFE, 48)),
    "frameio": ("token", lambda: "fio-u-" + g(URLSAFE, 64)),
    "ubidots": ("token", lambda: "BBFF-" + g(AN, 30)),
    "vercel": ("token", lambda: "vcp_" + g(AN, 56)),
    "netlify": ("token", lambda: "nfp_" + g(AN, 36)),
    "render": ("api_key", lambda: "rnd_" + g(AN, 32)),
    "supabase_access": ("api_key", lambda: "sbp_" + g(HEX, 40)),
    "supabase_secret": ("api_key", lambda: "sb_secret_" + g(URLSAFE, 31)),
}

SETTINGS = {
    "bare": "{t}",
    "log": "2026-11-27T10:01:07Z [worker-3] WARN retry after 401 using {t} (attempt 2)",
    "url": "https://example.com/callback?state=ok&x={t}",
    "path": "GET /v1/export/{t}/status 200",
    "json": '{{"data": ["{t}"], "n": 3}}',
    "command": "./deploy.sh --target prod {t}",
    "french": "Voici ce que j'ai copié hier : {t} — à supprimer plus tard.",
    "chinese": "这是昨天复制的：{t}，稍后删除。",
    "german": "Hier der Wert aus dem Chat «{t}», bitte nicht weitergeben.",
}


def _leaked(secret: str, out: str) -> bool:
    """Any 10-character window of the secret left in the output (the corpus scorer's rule)."""
    return any(secret[i : i + 10] in out for i in range(max(1, len(secret) - 9)))


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_vendor_format_is_redacted_in_every_setting(name: str) -> None:
    kind, make = FORMATS[name]
    for _ in range(3):
        token = make()
        for setting, template in SETTINGS.items():
            text = template.format(t=token)
            out = redact(text).text
            assert not _leaked(token, out), (name, setting, out)
            assert contains_secret(text), (name, setting)
        bare = redact(token)
        assert bare.text == f"[REDACTED:{kind}]", (name, bare.text)
        log = redact(SETTINGS["log"].format(t=token))
        assert log.kinds == (kind,), (name, log.kinds)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_vendor_format_is_idempotent_and_seen_by_the_dispatch(name: str) -> None:
    kind, make = FORMATS[name]
    token = make()
    text = SETTINGS["json"].format(t=token)
    once = redact(text).text
    assert redact(once).text == once
    # a provider row of this kind matches the whole token, the trigger dispatch picks it, and the prefilter does not
    # call the text plain
    rows = {
        i
        for i, (k, _, pattern) in enumerate(PROVIDERS)
        if k == kind and any(m.group("secret") == token for m in re.finditer(pattern, text, re.A))
    }
    assert rows, name
    assert rows <= set(engine._provider_hits(text)), name
    assert not prefilter.plain(text, engine._PROSE_TRIGGERS, engine._SPACED_CHARS)


# public by design, or sharing a prefix or shape with a format above without being one: left as written
LOOK_ALIKES = [
    # publishable / public ids
    "pk_live_51HqLyjWDarjtT1zdp7dcXnYy3pJ4nPz2QyA0pHz1c2d3e4f5g6h7i8j9k0 is the publishable key for checkout.js",
    "pk_test_TYooMQauvdEDq54NiTphI7jx in the browser bundle",
    "account sid AC3b1f5c0e2d4a6b8c9e0f1a2b3c4d5e6f for the call logs",
    "client id 123456789012-abc123def456ghi789jkl012mno345pq.apps.googleusercontent.com",
    "posthog project key phc_Xy7Qk2LmN9pR4sT6vW8zA1bC3dE5fG7hJ9kL0mN2pQ4 loaded in the page",
    "clerk pk_test_Y2xlcmsuZXhhbXBsZS5jb20k in index.html",
    "langfuse public key pk-lf-1234abcd-5678-4ef0-9abc-def012345678",
    "xpub6CUGRUonZSQ4TWtTMmzXdrXDtypWKiKrhko4egpiMZbpiaQL2jkwSB1icqYh2cfDfVxdx4df189oLKnC5fSwqPfgyP3hooxujYzAu3fDVmz is my public key",
    # ids, hashes, digests
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "Commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "md5 of the file is d41d8cd98f00b204e9800998ecf8427e",
    "docker pull nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    # words and identifiers that share a prefix
    "the api-gateway-v2 and sdk-version-3 modules",
    "API-REFERENCE-GUIDE-VERSION-TWO is the doc title",
    "SCWPROJECTDEFAULTSETTINGS are unchanged",
    "dose and ocio, precious and conscious words; unconsciousness",
    "re_compile_patterns_for_every_module is a function",
    "sha256~ is how OpenShift prefixes its tokens",
    "user.preferences.themeName and user.settingsForDisplayPanels",
    "the 1/2 cup and 2/3 ratio; 1/1234567890 nothing",
    "KwanzaaCelebrationsAndOtherHolidaysAroundTheWorld2024",
    "L1 cache and L2 cache and L3 cache sizes are 32K, 256K, 8M",
    "5Kb of memory; 5HP engine; Kx and Ky coordinates",
    "the crate cio_reader and ATTACHMENT_TYPES enum; AQE is an acronym",
    "the dG9r prefix and eyJrIjoi are base64 prefixes",
    "version 0.12.3 and st.louis and ser.vice",
    "export default function apifyClient() { return null }",
    "use napi_create_string_utf8 in the addon",
    "the essu_ prefix and hcaik_ prefix are documented",
    "A3-sized paper, A3-BX12 model",
    "print(x.fc_layer_weights_initialised)",
    "supabase anon sb_publishable_ key and the access-control-allow-origin header",
    "a pat-on-the-back for the secret-sauce team",
    "the csk-docs page and bb_live_preview flag",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_kept(text: str) -> None:
    assert redact(text).text == text


def test_a_hyphenated_word_keeps_prose_plain() -> None:
    # no provider row may be dispatched on a bare "-": a hyphenated word in prose must still pass the prefilter (cost)
    text = "It was a well-established and self-explanatory approach, and a long-standing one."
    assert prefilter.plain(text, engine._PROSE_TRIGGERS, engine._SPACED_CHARS)
    assert redact(text).text == text
