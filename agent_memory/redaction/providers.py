"""Provider token formats: one row per format, each a prefix (or fixed shape) and a body.

A row is ``(kind, triggers, pattern)``.  ``triggers`` are case-sensitive substrings, one of which
must occur in the text before the pattern is tried (most texts hold none, so most rows cost one
``in`` test).  ``pattern`` has a ``secret`` group.  Every pattern is anchored on both sides so a
match cannot start or end inside a longer run of token characters.  Bodies are checked with
:func:`random_enough` unless the row's format is self-evidently a credential (PEM, fixed
checksummed prefixes with long bodies).

The formats are the documented shapes of each provider's credentials, written for this module.
"""

from __future__ import annotations

import math
from collections import Counter

# Token characters: a match may not be preceded or followed by one of these.
_L = r"(?<![A-Za-z0-9_\-])"
_R = r"(?![A-Za-z0-9_\-])"
_LD = r"(?<![A-Za-z0-9_\-.])"  # also not after a dot (for formats that contain dots)
_RD = r"(?![A-Za-z0-9_\-.]?[A-Za-z0-9_\-])"
# For prefixes no identifier starts with by chance (ghp_, sk-proj-, xoxb-, …): the token may be glued to a word by a
# separator ("notes-ghp_…", "chat.sk-proj-…"), as in slugs, file names and ids — only a letter or digit may not precede.
_LG = r"(?<![A-Za-z0-9])"
# base64 bodies: not inside a longer base64 run
_B64L = r"(?<![A-Za-z0-9+/_\-])"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_B58 = "1-9A-HJ-NP-Za-km-z"


def _p(body: str, left: str = _L, right: str = _R) -> str:
    return left + "(?P<secret>" + body + ")" + right


# kind, triggers, pattern
PROVIDERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("anthropic_key", ("sk-ant-",), _p(r"sk-ant-(?:api|admin|oat|ort)\d\d-[A-Za-z0-9_\-]{40,}+", _LG)),
    ("openai_key", ("sk-proj-", "sk-svcacct-", "sk-admin-"), _p(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}+", _LG)),
    ("openai_key", ("sk-",), _p(r"sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{20,}+")),
    ("stripe_key", ("k_live_", "k_test_"), _p(r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}+")),
    ("stripe_webhook_secret", ("whsec_",), _p(r"whsec_[A-Za-z0-9+/=]{24,}+")),
    ("github_token", ("gh", "github_pat_"), _p(r"gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{30,}+", _LG)),
    (
        "gitlab_token",
        ("gl", "GR1348941"),
        _p(r"gl(?:pat|rt|dt|cbt|ft|imt|ptt|soat|oas|agent|ffct|wt)-[A-Za-z0-9_\-]{20,}+|GR1348941[A-Za-z0-9_\-]{20,}+", _LG),
    ),
    (
        "slack_token",
        ("xox", "xapp-"),
        _p(
            r"xox[abprsce]-[0-9]++-[A-Za-z0-9\-]{8,}+|xoxe\.xox[bp]-\d-[A-Za-z0-9\-]{40,}+|xoxe-\d-[A-Za-z0-9\-]{40,}+"
            r"|xapp-\d-[A-Za-z0-9\-]{16,}+",
            _LG,
        ),
    ),
    ("google_api_key", ("AIza",), _p(r"AIza[0-9A-Za-z_\-]{35}", _LG)),
    ("google_oauth_secret", ("GOCSPX-",), _p(r"GOCSPX-[A-Za-z0-9_\-]{24,}+", _LG)),
    ("google_oauth_token", ("ya29.",), _p(r"ya29\.[A-Za-z0-9_\-]{20,}+", _LD)),
    ("google_refresh_token", ("1//0",), _p(r"1//0[A-Za-z0-9_\-]{40,}+", r"(?<![A-Za-z0-9_\-/])")),
    (
        "aws_access_key_id",
        ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "APKA"),
        r"(?<![A-Za-z0-9])(?P<secret>(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|APKA)[A-Z0-9]{16})(?![A-Za-z0-9])",
    ),
    (
        "azure_client_secret",
        ("8Q~",),
        _p(r"[A-Za-z0-9_\-.~]{3}8Q~[A-Za-z0-9_\-.~]{31,34}", r"(?<![A-Za-z0-9_\-.~])", r"(?![A-Za-z0-9_\-~])"),
    ),
    ("sendgrid_key", ("SG.",), _p(r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", _LD)),
    ("twilio_key", ("SK",), _p(r"SK[0-9a-fA-F]{32}")),
    # an auth token passed right after its account SID: Client("AC…", "<token>")
    ("twilio_auth_token", ("AC",), r"(?<![A-Za-z0-9])AC[0-9a-f]{32}[\"']?[ \t]*+[,:][ \t]*+[\"']?(?P<secret>[0-9a-f]{32})(?![0-9A-Za-z])"),
    ("vault_token", ("hvs.", "hvb.", "hvr."), _p(r"hv[sbr]\.[A-Za-z0-9_\-]{20,}+", _LD)),
    ("terraform_token", ("atlasv1",), _p(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}+", _LD)),
    ("digitalocean_token", ("_v1_",), _p(r"do[opr]_v1_[a-f0-9]{64}")),
    ("huggingface_token", ("hf_",), _p(r"hf_[A-Za-z0-9]{30,}+")),
    ("npm_token", ("npm_",), _p(r"npm_[A-Za-z0-9]{36}")),
    ("pypi_token", ("pypi-AgE",), _p(r"pypi-AgE[A-Za-z0-9_\-]{40,}+")),
    # the first part is the base64 of a numeric user id: "MT…" for "1…", "Nz…" for "7…"
    (
        "discord_token",
        ("MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT"),
        _p(r"(?:M[Tjz]|N[DTjz]|O[DT])[A-Za-z0-9_\-]{21,23}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}", _LD),
    ),
    # round 8: a webhook URL is the credential whole (its host and ids too), so the whole URL goes
    (
        "discord_webhook",
        ("/api/webhooks/",),
        r"(?P<secret>(?:https?://)?(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d{5,}/[A-Za-z0-9_\-]{40,}+)",
    ),
    (
        "token",  # a Teams incoming-webhook URL (a kind of its own would need a corpus case in every older corpus)
        ("office.com/webhook",),
        r"(?P<secret>(?:https?://)?(?:[A-Za-z0-9-]{1,63}\.webhook|outlook)\.office(?:365)?\.com/webhook(?:b2)?/"
        r"[A-Za-z0-9@/_\-]{60,600}+)",
    ),
    # a Django project's generated SECRET_KEY keeps this prefix until someone replaces it
    ("secret", ("django-insecure-",), _p(r"django-insecure-[a-z0-9!@#$%^&*()\-_=+]{30,64}+", _LG, "")),
    ("telegram_token", (":AA",), r"(?<![A-Za-z0-9_:])(?P<secret>\d{8,10}:AA[A-Za-z0-9_\-]{33})" + _R),
    ("mailchimp_key", ("-us",), _p(r"[0-9a-f]{32}-us\d{1,2}")),
    ("mailgun_key", ("key-",), _p(r"key-[0-9a-f]{32}")),
    ("shopify_token", ("shp",), _p(r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}")),
    ("atlassian_token", ("ATATT",), _p(r"ATATT3[A-Za-z0-9_\-=]{100,}+")),
    ("linear_key", ("lin_api_",), _p(r"lin_api_[A-Za-z0-9]{40}")),
    ("notion_token", ("ntn_", "secret_"), _p(r"ntn_\d{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43}")),
    ("figma_token", ("figd_",), _p(r"figd_[A-Za-z0-9_\-]{40,}+")),
    ("postman_key", ("PMAK-",), _p(r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}")),
    ("databricks_token", ("dapi",), _p(r"dapi[a-f0-9]{32}(?:-\d)?")),
    # service tokens name their config: "dp.st.prd.…"
    ("doppler_token", ("dp.",), _p(r"dp\.(?:pt|st|sa|scim|audit|ct)\.(?:[a-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,}+", _LD)),
    ("grafana_token", ("glsa_", "glc_"), _p(r"glsa_[A-Za-z0-9]{32}_[a-fA-F0-9]{8}|glc_[A-Za-z0-9+/]{32,}+={0,2}")),
    ("newrelic_key", ("NRAK-", "NRII-", "NRJS-"), _p(r"NR(?:AK|II|JS)-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}")),
    ("sentry_token", ("sntry",), _p(r"sntry[su]_[A-Za-z0-9_=+/\-]{40,}+")),
    ("square_token", ("EAAA", "sq0"), _p(r"EAAA[A-Za-z0-9_\-]{60}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}+")),
    ("planetscale_token", ("pscale_",), _p(r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,}+")),
    ("pulumi_token", ("pul-",), _p(r"pul-[a-f0-9]{40}")),
    ("age_secret_key", ("AGE-SECRET-KEY-1",), _p(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}")),
    # round 9: a PostgreSQL password hash ("md5" + md5(password + role), as pg_authid / pg_shadow / pg_dumpall store
    # it: a credential file's hash)
    ("password", ("md5",), _p(r"md5[0-9a-f]{32}")),
    ("dropbox_token", ("sl.",), _p(r"sl\.(?:[a-z]\.)?[A-Za-z0-9_\-]{120,}+", _LD)),  # "sl.u.…": newer short-lived tokens
    ("flyio_token", ("fm1", "fm2_", "fo1_"), _p(r"fm[12][ar]?_[A-Za-z0-9+/=_\-]{40,}+|fo1_[A-Za-z0-9_\-]{43}")),
    ("replicate_token", ("r8_",), _p(r"r8_[A-Za-z0-9]{37}")),
    ("groq_key", ("gsk_",), _p(r"gsk_[A-Za-z0-9]{52}")),
    ("xai_key", ("xai-",), _p(r"xai-[A-Za-z0-9]{70,}+")),
    ("perplexity_key", ("pplx-",), _p(r"pplx-[A-Za-z0-9]{40,}+")),
    ("langsmith_key", ("lsv2_",), _p(r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}")),
    ("tailscale_key", ("tskey-",), _p(r"tskey-[a-z]+-[A-Za-z0-9]{6,}+-[A-Za-z0-9]{20,}+")),
    ("docker_token", ("dckr_",), _p(r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{24,}+")),
    ("mapbox_secret_token", ("sk.eyJ",), _p(r"sk\.eyJ[A-Za-z0-9_\-]{20,}+\.[A-Za-z0-9_\-]{20,}+", _LD)),
    ("buildkite_token", ("bkua_",), _p(r"bkua_[a-f0-9]{40}")),
    ("rubygems_key", ("rubygems_",), _p(r"rubygems_[a-f0-9]{48}")),
    ("alibaba_key", ("LTAI",), _p(r"LTAI[A-Za-z0-9]{20}")),
    ("tencent_secret_id", ("AKID",), _p(r"AKID[A-Za-z0-9]{32}")),
    ("heroku_key", ("HRKU-",), _p(r"HRKU-[A-Za-z0-9_\-]{40,}+")),
    ("dynatrace_token", ("dt0c01.",), _p(r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}", _LD)),
    ("facebook_token", ("EAAB", "EAAC", "EAAG", "EAAI"), _p(r"EAA[BCGI][A-Za-z0-9]{80,}+")),
    ("fcm_server_key", (":APA91b",), _p(r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}+")),
    ("twitter_bearer", ("AAAAAAAAAAAAAAAAAAAA",), _p(r"A{20,}+[A-Za-z0-9%]{40,}+")),
    ("airtable_token", ("pat",), _p(r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", _LD)),
    ("cloudflare_ca_key", ("v1.0-",), _p(r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", _LD)),
    ("okta_token", ("SSWS",), r"\bSSWS[ \t]+(?P<secret>00[A-Za-z0-9_\-]{40})" + _R),
    # --- round 6b: vendor formats a user pastes bare (a log line, a URL, a JSON value, a command) ---------------------
    # AI providers
    ("huggingface_token", ("api_org_",), _p(r"api_org_[A-Za-z]{34}")),
    ("api_key", ("sk-lf-",), _p(r"sk-lf-" + _UUID, _LG)),  # Langfuse secret key
    ("api_key", ("csk-",), _p(r"csk-[a-z0-9]{40,}+", _LG)),  # Cerebras
    ("api_key", ("fc-",), _p(r"fc-[a-f0-9]{32}")),  # Firecrawl
    ("api_key", ("esecret_",), _p(r"esecret_[A-Za-z0-9]{20,}+", _LG)),  # Anyscale
    ("api_key", ("bb_live_", "bb_test_"), _p(r"bb_(?:live|test)_[A-Za-z0-9_\-]{20,}+", _LG)),  # Browserbase
    (
        "api_key",  # AWS Bedrock API keys (long- and short-term)
        ("ABSK", "bedrock-api-key-"),
        _p(r"ABSK[A-Za-z0-9+/]{80,}+={0,2}|bedrock-api-key-[A-Za-z0-9+/]{40,}+={0,2}", _B64L),
    ),
    # payments and commerce
    (
        "api_key",
        ("AQE",),
        _p(r"AQE[A-Za-z0-9+/]{40,}+={0,2}-[A-Za-z0-9+/]{20,}+={0,2}(?:-[A-Za-z0-9+/=;:%{}!?*#@$^&()\[\]~]{4,24}+)?"),
    ),  # Adyen
    ("api_key", ("pdl_",), _p(r"pdl_(?:live|sdbx)_apikey_[A-Za-z0-9_]{30,}+", _LG)),  # Paddle
    ("api_key", ("sk_sbox_",), _p(r"sk_sbox_[a-z0-9]{26,}+", _LG)),  # Checkout.com sandbox
    ("token", ("A21AA",), _p(r"A21AA[A-Za-z0-9_\-]{50,}+")),  # PayPal OAuth access token
    ("api_key", ("EZAK", "EZTK"), _p(r"EZ[AT]K[A-Za-z0-9]{54}")),  # EasyPost
    # messaging and mail
    ("api_key", ("re_",), _p(r"re_[A-Za-z0-9]{6,12}+_[A-Za-z0-9]{16,}+")),  # Resend
    (
        "api_key",
        ("xkeysib-", "xsmtpsib-"),
        _p(r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}", _LG),
    ),  # Brevo (Sendinblue) API and SMTP keys
    ("token", ("dG9rO",), _p(r"dG9rO[A-Za-z0-9+/_\-]{40,}+={0,2}", _B64L)),  # Intercom (base64 of "tok:…")
    # CI/CD and code hosting
    ("api_key", ("JQQJ9",), _p(r"[A-Za-z0-9]{52}JQQJ9[A-Za-z0-9]{27}")),  # Azure's annotated keys (DevOps PATs, AI services)
    (
        "token",
        ("ATBB", "ATCTT3"),
        _p(r"ATBB[A-Za-z0-9_\-=.]{32,}+|ATCTT3[A-Za-z0-9_\-=]{100,}+"),
    ),  # Bitbucket app passwords, Atlassian Connect
    ("api_key", ("API-",), _p(r"API-[A-Z0-9]{25,32}")),  # Octopus Deploy
    # package registries
    ("api_key", ("oy2",), _p(r"oy2[a-z0-9]{43}")),  # NuGet
    (
        "token",
        ("AKCp", "cmVmdGtu"),
        _p(r"AKCp[A-Za-z0-9]{69}|cmVmdGtuOjAx[A-Za-z0-9+/]{40,}+={0,2}", _B64L),
    ),  # JFrog API key, reference token
    ("token", ("cio",), _p(r"cio[A-Za-z0-9]{32}")),  # crates.io
    # observability and feature flags
    ("newrelic_key", ("NRAL",), _p(r"[a-f0-9]{36}NRAL")),  # license (ingest) keys end in NRAL
    ("grafana_token", ("eyJrIjoi",), _p(r"eyJrIjoi[A-Za-z0-9+/]{40,}+={0,2}", _B64L)),  # legacy API keys: base64 of {"k":…}
    ("api_key", ("hcaik_", "hcxik_", "hcamk_", "hcxmk_"), _p(r"hc[ax][im]k_[A-Za-z0-9]{20,}+", _LG)),  # Honeycomb ingest/management keys
    ("api_key", ("essu_",), _p(r"essu_[A-Za-z0-9+/]{40,}+={0,2}", _LG)),  # Elastic Cloud
    ("token", ("xaat-", "xapt-"), _p(r"xa[ap]t-" + _UUID, _LG)),  # Axiom
    ("api_key", ("sdk-", "api-"), _p(r"(?:sdk|api)-" + _UUID)),  # LaunchDarkly SDK / API access
    ("api_key", ("ser.",), _p(r"ser\.[A-Za-z0-9]{22}", _LD)),  # Flagsmith server-side key
    # productivity
    ("token", ("pk_",), _p(r"pk_\d{5,12}+_[A-Z0-9]{32}")),  # ClickUp personal token
    ("token", ("ATTA",), _p(r"ATTA[A-Fa-f0-9]{64,}+")),  # Trello
    ("token", ("1/", "2/"), _p(r"[12]/\d{10,20}+(?:/\d{10,20}+)?:[a-f0-9]{32}", r"(?<![A-Za-z0-9_\-:])")),  # Asana PAT
    ("token", ("apify_api_",), _p(r"apify_api_[A-Za-z0-9]{36}", _LG)),  # Apify
    ("token", ("pina_",), _p(r"pina_[A-Z0-9]{32,}+", _LG)),  # Pinterest
    ("token", ("IGQV", "IGAA"), _p(r"IG(?:QV|AA)[A-Za-z0-9_\-]{100,}+")),  # Instagram / Facebook Graph (IG)
    # hosting and databases
    ("api_key", ("napi_",), _p(r"napi_[a-z0-9]{64}", _LG)),  # Neon
    ("token", ("sha256~",), _p(r"sha256~[A-Za-z0-9_\-]{43}")),  # OpenShift
    ("api_key", ("SCW",), _p(r"SCW[A-Z0-9]{17}")),  # Scaleway access key
    # secret managers, auth, networks
    ("token", ("ops_eyJ",), _p(r"ops_eyJ[A-Za-z0-9+/=_\-]{100,}+", _LG)),  # 1Password service account
    (
        "secret",  # 1Password Secret Key
        ("A3-",),
        _p(r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{6}|[A-Z0-9]{11})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"),
    ),
    ("token", ("0.",), _p(r"0\." + _UUID + r"\.[A-Za-z0-9]{30}:[A-Za-z0-9+/]{22,24}={0,2}", _LD)),  # Bitwarden Secrets Manager access token
    ("token", ("st.",), _p(r"st\." + _UUID + r"\.[a-f0-9]{32}\.[a-f0-9]{32}", _LD)),  # Infisical service token
    ("databricks_token", ("dose",), _p(r"dose[a-f0-9]{32}")),
    ("api_key", ("dnkey-",), _p(r"dnkey-[A-Za-z0-9=_\-]{60,}+", _LG)),  # Defined Networking (Nebula)
    ("discord_token", ("mfa.",), _p(r"mfa\.[A-Za-z0-9_\-]{80,}+", _LD)),  # a user token behind two-factor sign-in
    ("api_key", ("RGAPI-",), _p(r"RGAPI-" + _UUID, _LG)),  # Riot Games
    # cloud
    (
        "token",
        ("IQoJb3JpZ2luX2", "FwoGZXIvYXdz"),
        _p(r"(?:IQoJb3JpZ2luX2|FwoGZXIvYXdz)[A-Za-z0-9+/]{100,}+={0,2}", _B64L),
    ),  # AWS STS session tokens
    ("api_key", ("AQVN", "y0_"), _p(r"AQVN[A-Za-z0-9_\-]{35,38}|y0_[A-Za-z0-9_\-]{55,}+")),  # Yandex Cloud API key, OAuth token
    # prefixed formats the general prefixed-token rule already finds as "token": named here by their provider
    ("api_key", ("sk_",), _p(r"sk_[a-f0-9]{48}", _LG)),  # ElevenLabs
    ("api_key", ("pcsk_",), _p(r"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,}+", _LG)),  # Pinecone
    ("token", ("tvly-",), _p(r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{32,}+", _LG)),  # Tavily
    ("api_key", ("tgp_v1_",), _p(r"tgp_v1_[A-Za-z0-9_\-]{40,}+", _LG)),  # Together AI
    ("api_key", ("nvapi-",), _p(r"nvapi-[A-Za-z0-9_\-]{60,}+", _LG)),  # NVIDIA NIM / NGC
    ("api_key", ("jina_",), _p(r"jina_[A-Za-z0-9_\-]{40,}+", _LG)),  # Jina AI
    ("api_key", ("e2b_",), _p(r"e2b_[a-f0-9]{40}", _LG)),  # E2B
    ("token", ("access-",), _p(r"access-(?:sandbox|development|production)-" + _UUID)),  # Plaid access tokens
    ("api_key", ("FLWSECK",), _p(r"FLWSECK(?:_TEST)?-[a-f0-9]{32}-X", _LG)),  # Flutterwave
    ("token", ("shippo_",), _p(r"shippo_(?:live|test)_[a-f0-9]{40}", _LG)),  # Shippo
    ("token", ("duffel_",), _p(r"duffel_(?:live|test)_[A-Za-z0-9_\-]{43}", _LG)),  # Duffel
    ("token", ("CCIPAT_", "CCIPRJ_"), _p(r"CCIP(?:AT|RJ)_[A-Za-z0-9]{20,}+_[a-f0-9]{40}", _LG)),  # CircleCI
    ("token", ("pat.", "sat."), _p(r"[ps]at\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}", _LD)),  # Harness PAT / SAT
    ("token", ("squ_", "sqp_", "sqa_"), _p(r"sq[upa]_[a-f0-9]{40}", _LG)),  # SonarQube / SonarCloud
    ("token", ("CLOJARS_",), _p(r"CLOJARS_[a-f0-9]{60}", _LG)),  # Clojars
    ("token", ("ddp_", "ddw_"), _p(r"dd[pw]_[A-Za-z0-9]{36}", _LG)),  # Deno Deploy
    ("api_key", ("phx_",), _p(r"phx_[A-Za-z0-9]{43}", _LG)),  # PostHog personal keys; project keys (phc_) are public
    (
        "api_key",
        ("secret-",),
        _p(r"secret-[A-Za-z0-9]{40,}+|secret-(?:live|test)-[A-Za-z0-9_\-=]{30,}+"),
    ),  # Statsig server secrets, Stytch secrets
    ("linear_key", ("lin_oauth_",), _p(r"lin_oauth_[a-f0-9]{64}", _LG)),
    ("token", ("pat-",), _p(r"pat-(?:na|eu|ap)\d-" + _UUID)),  # HubSpot private app
    ("token", ("CFPAT-",), _p(r"CFPAT-[A-Za-z0-9_\-]{43}", _LG)),  # Contentful
    ("token", ("tfp_",), _p(r"tfp_[A-Za-z0-9_\-]{40,}+", _LG)),  # Typeform
    ("token", ("00D",), _p(r"00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,}+")),  # Salesforce session id
    ("api_key", ("rdme_",), _p(r"rdme_[a-z0-9]{70}", _LG)),  # ReadMe
    ("token", ("sgp_",), _p(r"sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}", _LG)),  # Sourcegraph
    ("api_key", ("pnu_",), _p(r"pnu_[A-Za-z0-9]{36}", _LG)),  # Prefect
    ("token", ("tk-us-",), _p(r"tk-us-[A-Za-z0-9_\-]{48}", _LG)),  # Scalingo
    ("token", ("fio-u-",), _p(r"fio-u-[A-Za-z0-9_\-=]{64}", _LG)),  # Frame.io
    ("token", ("BBFF-",), _p(r"BBFF-[A-Za-z0-9]{30}", _LG)),  # Ubidots
    ("token", ("vcp_", "vci_", "vca_", "vcr_", "vck_"), _p(r"vc[picrk]_[A-Za-z0-9]{24,}+", _LG)),  # Vercel
    ("token", ("nfp_", "nfc_", "nfo_"), _p(r"nf[pco]_[A-Za-z0-9]{36,}+", _LG)),  # Netlify
    ("api_key", ("rnd_",), _p(r"rnd_[A-Za-z0-9]{32,}+", _LG)),  # Render
    (
        "api_key",
        ("sbp_", "sb_secret_"),
        _p(r"sbp_(?:oauth_)?[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{24,}+", _LG),
    ),  # Supabase access token, secret key
)

# Kinds whose match is a credential by its shape alone; the rest must also look random.
SELF_EVIDENT = frozenset(
    {
        "stripe_key",
        "google_api_key",
        "aws_access_key_id",
        "sendgrid_key",
        "twilio_key",
        "digitalocean_token",
        "npm_token",
        "pypi_token",
        "twilio_auth_token",
        "telegram_token",
        "mailchimp_key",
        "mailgun_key",
        "shopify_token",
        "postman_key",
        "databricks_token",
        "age_secret_key",
        "pulumi_token",
        "buildkite_token",
        "rubygems_key",
        "langsmith_key",
        "dynatrace_token",
        "cloudflare_ca_key",
        "airtable_token",
        "slack_token",
    }
)


def entropy(s: str) -> float:
    """Shannon entropy of ``s`` in bits per character."""
    n = len(s)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def random_enough(s: str) -> bool:
    """Does ``s`` look machine-generated rather than a word or identifier?

    A digit, or lower case mixed with a non-initial capital ("Internationalization" and
    "well-known-phrase" fail), and not a run of one repeated character.
    """
    if len(set(s)) < 6:
        return False
    if any("0" <= c <= "9" for c in s):
        return True
    return any("a" <= c <= "z" for c in s) and any("A" <= c <= "Z" for c in s[1:])
