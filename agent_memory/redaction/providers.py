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
    ("discord_webhook", ("/api/webhooks/",), r"discord(?:app)?\.com/api/webhooks/(?P<secret>\d{5,}/[A-Za-z0-9_\-]{40,}+)"),
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
    ("doppler_token", ("dp.",), _p(r"dp\.(?:pt|st|sa|scim|audit|ct)\.[A-Za-z0-9]{40,}+", _LD)),
    ("grafana_token", ("glsa_", "glc_"), _p(r"glsa_[A-Za-z0-9]{32}_[a-fA-F0-9]{8}|glc_[A-Za-z0-9+/]{32,}+={0,2}")),
    ("newrelic_key", ("NRAK-", "NRII-", "NRJS-"), _p(r"NR(?:AK|II|JS)-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}")),
    ("sentry_token", ("sntry",), _p(r"sntry[su]_[A-Za-z0-9_=+/\-]{40,}+")),
    ("square_token", ("EAAA", "sq0"), _p(r"EAAA[A-Za-z0-9_\-]{60}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}+")),
    ("planetscale_token", ("pscale_",), _p(r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,}+")),
    ("pulumi_token", ("pul-",), _p(r"pul-[a-f0-9]{40}")),
    ("age_secret_key", ("AGE-SECRET-KEY-1",), _p(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}")),
    ("dropbox_token", ("sl.",), _p(r"sl\.[A-Za-z0-9_\-]{120,}+", _LD)),
    ("flyio_token", ("fm1", "fm2_"), _p(r"fm[12][ar]?_[A-Za-z0-9+/=_\-]{40,}+")),
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
