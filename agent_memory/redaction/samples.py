"""Realistic *fake* secrets (not real credentials) for other test suites: each must be fully
neutralised by redact() when embedded in ordinary text.  Prefixes are split across adjacent
string literals so that secret scanners do not flag this file."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_PEM_BODY = (
    "eh093Fj9fOptqCWCsuZrJZaVLaPeAU5moHH5F/grANC/aBcnwDDOOAZvw6d3eK3p\n"
    "xFkhJA5uFyeUhwksU8dSaNrFWv5SRclfFhhqCmzhp59yZk4d6/GlThw+ZqyC85Nn\n"
    "7Jf30xIOdZh+NRwhUTv3L+Smo927U2aT1yVPMm5nYtffRcvy0Dxo5pCJFz2B30M8\n"
    "KVM+w8MDaD3vSS1Mmn7qOiqh1yudML66YbgqaD7XBPgUbqr2RbwXOq43IedbtWe2\n"
)

SECRET_SAMPLES_BY_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "private_key": (
            "-----BEGIN RSA PRIVATE KEY-----\n" + _PEM_BODY + "-----END RSA PRIVATE KEY-----",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n" + _PEM_BODY + "-----END OPENSSH PRIVATE KEY-----",
        ),
        "jwt": (
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
            ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUgRG9lIiwiaWF0IjoxNzE2MjM5MDIyfQ"
            ".Gx3Q9bJ4vQz8m1T0fR2kLwY7aE5sPcN6uHdVjXoB-_I",
        ),
        "anthropic_key": ("sk-ant-api03-4dXd3eOa1Zcc_a4CgOFfqRgz7IhYePP2lny2pg17-dUM2jNKogorTAuRVpQ09oiVeZWJ9QyucS19AvMp2gUAeSsUfFgUlAA",),
        "openai_key": (
            "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",
            "sk-"
            "proj-1ZA7V0FhHVJWDBt2hWdQZUm14QhoxhLPAbQcEFUV2fsjGHb6HrlEOS47WgjKCu_0xxKhg5Q"
            "jWV1mKaUyvBPs0jSO2Jkf08MMF1ulMMCw3XVy27dFanUrOSE62chn4xdeJg1Kza5KxxGWfvmaQtKnP_VSGVBr",
            "sk-"
            "svcacct-YSuIb9OZiFZ3HLKv797TPNbpjava1bMZwIMlvdp5gjTrD8Osj_LnZ5R-j_8U_m7aSz7NR"
            "SOtv7T3BlbkFJ5y4SXvE9rwLbAtf6e9cpCGybY9lMR4pAwBp3GVy1PixOqoRGrB5Vpg5C6QsyHZytfqY6K1Qjah",
        ),
        "stripe_key": (
            "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",
            "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",
        ),
        "github_token": (
            "ghp_0fG2xPVD8AfOTovYGkYSrIiBSed1S3wlj46F",
            "ghs_uq3sXRo5QhgYrZJd6F58LKideRuauiFtEvGj",
            "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QbL",
        ),
        "gitlab_token": ("glpat-oZ6axl7KBGgMVGOYn7B3",),
        "slack_token": (
            "xoxb-7281934650123-4829103746512-JmWZTsUryrgsVJN8OLJtqCdp",
            "xoxp-7281934650123-7382910465-8391027465183-6f1d0c8e2b9a4f7d3c5e1b0a9d8c7b6e",
        ),
        "slack_webhook": ("https://hooks.slack.com/services/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",),
        "google_api_key": ("AIzaSyZvQmLL8ZrF8w50SR2Qugs4lIFVRdxtDyK",),
        "aws_access_key_id": ("AKIA487HUS5QRT22U5PO", "ASIA328BTVIJSM2A30OU"),
        "aws_secret_key": ("aws_secret_access_key = 8W7RQHy2Yp+ptzsJqLOJqu3g9DYpQaxEN+cNljiR",),
        "huggingface_token": ("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",),
        "npm_token": ("npm_tK27Vtkpk8mC3mMcSBnTTwXtKWcJzKRBHuj4",),
        "pypi_token": (
            "pypi-"
            "AgEIcHlwaS5vcmcCJGQ4ZjQ1NzE2LTk2MjEtNGE5Ni1iZmM1LTg3ZTMzNDM2YTJkMQACKlsz"
            "LCJkNjU3NjM0Ni1hZjUyLTQ4NjctOTU4MS1jMWY5ZmI4NzI2ZDgiXQAABiB3",
        ),
        "url_password": ("postgres://app_user:Zq8v3LmT9xWp2rKd@db.internal.example:5432/app",),
        "bearer_token": ("Authorization: Bearer 3Yhc1OxT_8QY4_3BMDogiSTRIiP9LJm7R04ZhbGSdGW",),
        "basic_auth": ("Authorization: Basic YWRtaW46UzNjcjN0UGFzc3cwcmQh",),
        "password": ("password=7WH77hBlyqz#9PNlds", "DB_PASSWORD=Tr0ub4dor^3x"),
        "secret": ("client_secret: Zk3kq9TzR1mVb7WnXc2LpYd8Hs",),
        "api_key": ("api_key=a1b2c3d4e5f60718293a4b5c6d7e8f90",),
        "token": ("access_token=a0AfH6SMBx7Qk2Lr9Tn3Vp",),
        "stripe_webhook_secret": ("whsec_Jq8Zr2LmW4xT9vBc6NdE1sKp3YhG7aUf",),
        "vault_token": ("hvs.CAESIJq8Zr2LmW4xT9vBc6NdE1sK",),
        "digitalocean_token": ("dop_v1_4f1d0c8e2b9a4f7d3c5e1b0a9d8c7b6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c",),
        "sendgrid_key": ("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",),
        "card_number": ("4539 1488 0343 6467",),
        "pin": ("PIN: 48213907",),
    }
)

SECRET_SAMPLES: tuple[str, ...] = tuple(sample for samples in SECRET_SAMPLES_BY_KIND.values() for sample in samples)
