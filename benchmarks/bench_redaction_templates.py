"""Syntax breadth of redaction: secret values of the corpora under credential names in 48 syntaxes, and public values
and references under names in the same syntaxes.

    PYTHONPATH=. python benchmarks/bench_redaction_templates.py [CODE_ROOT] [N_VALUES]

CODE_ROOT (default: this checkout) is the folder holding the ``agent_memory`` package to measure, so an older
checkout can be measured the same way (``git worktree add /tmp/old <commit>``).  The values are every single-token
secret (8-120 characters) of the listed corpora, shuffled with a fixed seed; N_VALUES of them (default 60) are put
in every template under a name chosen by their kind.  This is a stress of the *combinations* (name x syntax x value
shape), written by the same hands as the rules: it is not a blind corpus and its figure says nothing a blind corpus
would; it shows which syntaxes a value is lost in.  Prints the share of values redacted, the look-alikes changed, and
the templates that lose most.
"""

from __future__ import annotations

import collections
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
sys.path.insert(0, str(CODE))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "secrets"))
from score import survives  # noqa: E402

from agent_memory.redaction.api import redact  # noqa: E402

rng = random.Random(5)
T = [
    "{N}={V}",
    'export {N}="{V}"',
    "{N}: {V}",
    'config:\n  {n}: "{V}"',
    '{{"{N}": "{V}"}}',
    "<{N}>{V}</{N}>",
    '<add key="{N}" value="{V}" />',
    '<entry key="{n}">{V}</entry>',
    '{n} = "{V}"',
    "ENV {N}={V}",
    "docker run -e {N}={V} acme/app",
    "helm upgrade app ./chart --set secrets.{n}={V}",
    'Environment="{N}={V}"',
    'os.environ["{N}"] = "{V}"',
    "process.env.{N} = '{V}';",
    'System.setProperty("{n}", "{V}");',
    "$config['{n}'] = '{V}';",
    '{n} := "{V}"',
    "| name | value |\n|---|---|\n| {N} | {V} |",
    "name,value\n{N},{V}",
    "the {n} is {V}",
    "{N} → {V}",
    "{N}: `{V}`",
    'curl -H "{N}: {V}" https://api.example.com/v1',
    "https://api.example.com/v1/items?{n}={V}&page=2",
    "{n} {V};",
    "[main]\n{n} = {V}",
    "SET {N}={V}",
    '$env:{N} = "{V}"',
    '"{n}" => "{V}",',
    "{N}='{V}' ./run.sh",
    "here's the {N}: {V}",
    "Der {N} lautet {V}.",
    "El {N} es {V}",
    '{{\\"{N}\\":\\"{V}\\"}}',
    'env:\n  - name: {N}\n    value: "{V}"',
    "2026-01-01 12:00:01 INFO config loaded {N}={V} retries=3",
    "{n}={V}&user=bob",
    "{N}\n{V}",
    "{N} = {V} # rotate monthly",
    "  --{nd} {V} \\",
    "jdbc:mysql://db:3306/app?user=app&{n}={V}",
    "{N}:\n  {V}",
    "// {N}\nconst x = '{V}';",
    "* {N}: {V}",
    "| {N} | `{V}` |",
    '<string name="{n}">{V}</string>',
    "{N}={V!r}",
]


def names(kind):
    return {
        "key": ["ACME_API_KEY", "BILLING_SECRET", "authToken", "x-api-key", "client_secret", "SENDGRID_KEY"],
        "pw": ["DB_PASSWORD", "adminPass", "smtp_passwd", "redis-password"],
        "pin": ["ALARM_PIN", "door_code"],
    }[kind]


def forms(N):
    n = N.lower().replace("-", "_")
    nd = N.lower().replace("_", "-")
    return N, n, nd


vals = []
# the corpora the values come from (never a blind corpus still to be measured)
for c in ("secrets_holdout3", "secrets_holdout4", "secrets_holdout5", "secrets_holdout2", "secrets"):
    for line in open(ROOT / "tests" / "fixtures" / c / "secrets.jsonl", encoding="utf-8"):
        r = json.loads(line)
        for s in r["secrets"]:
            if " " in s or "\n" in s or len(s) < 8 or len(s) > 120:
                continue
            f = r["format"].lower()
            kind = "pin" if "pin/" in f or "pin_" in f else "pw" if "pass" in f else "key"
            if any(w in f for w in ("national", "passport", "iban", "card", "bank", "ssn", "id_", "account", "routing")):
                continue
            vals.append((kind, s, f))
rng.shuffle(vals)
vals = vals[: int(sys.argv[2]) if len(sys.argv) > 2 else 60]
miss_t = collections.Counter()
tot_t = collections.Counter()
miss_k = collections.Counter()
tot_k = collections.Counter()
examples = collections.defaultdict(list)
for kind, v, _f in vals:
    for i, t in enumerate(T):
        N = rng.choice(names(kind))
        N, n, nd = forms(N)
        text = (
            t.replace("{V!r}", repr(v))
            .replace("{N}", N)
            .replace("{n}", n)
            .replace("{nd}", nd)
            .replace("{V}", v)
            .replace("{{", "{")
            .replace("}}", "}")
        )
        out = redact(text).text
        tot_t[i] += 1
        tot_k[kind] += 1
        if survives(v, out):
            miss_t[i] += 1
            miss_k[kind] += 1
            if len(examples[i]) < 3:
                examples[i].append(text[:120])
tm = sum(miss_t.values())
tt = sum(tot_t.values())
print(f"overall {tt - tm}/{tt} ({(tt - tm) / tt:.1%})  by kind", {k: f"{tot_k[k] - miss_k[k]}/{tot_k[k]}" for k in tot_k})
for i in sorted(miss_t, key=lambda i: -miss_t[i]):
    print(f"{miss_t[i]:4}/{tot_t[i]}  {T[i]!r}  e.g. {examples[i][:2]}")

# benign: public values under public names, and references/placeholders under secret names
BEN_PUBLIC = [
    ("COMMIT_SHA", "9fceb02d0ae598e95dc970b74767f19372d61af8"),
    ("REQUEST_ID", "3f2b8c1e-9d4a-4c7e-8b1f-2a6d5e4c3b2a"),
    ("APP_VERSION", "v2.14.3-rc.1"),
    ("IMAGE_DIGEST", "sha256:4c2e9f0b7a1d8e3c5b6a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c"),
    ("SUPPORT_EMAIL", "help@example.com"),
    ("DB_HOST", "db-7.internal.example.net"),
    ("BUILD_NUMBER", "20261127.4"),
    ("PUBLIC_KEY_ID", "k-2026-11"),
    ("CACHE_TTL", "3600"),
    ("TRACE_ID", "4bf92f3577b34da6a3ce929d0e0e4736"),
]
BEN_SECRET_NAMES = [
    "${DB_PASSWORD}",
    "<your-api-key>",
    "{{{{ secrets.API_KEY }}}}",
    "vault:secret/data/app#token",
    "op://Prod/db/password",
    "env(API_KEY)",
    "process.env.API_KEY",
    "os.getenv('API_KEY')",
    "********",
    "REDACTED",
    "null",
    "None",
    "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf",
    "secretKeyRef",
    "/run/secrets/db_password",
    "your_api_key_here",
    "xxxxxxxxxxxxxxxxxxxx",
    "changeme",
    "%API_KEY%",
    "$(cat /run/secrets/token)",
]
bad = collections.Counter()
tot = 0
ex = collections.defaultdict(list)
for i, t in enumerate(T):
    for N, v in BEN_PUBLIC + [(rng.choice(names("key") + names("pw")), x) for x in BEN_SECRET_NAMES]:
        N, n, nd = forms(N)
        text = (
            t.replace("{V!r}", repr(v))
            .replace("{N}", N)
            .replace("{n}", n)
            .replace("{nd}", nd)
            .replace("{V}", v)
            .replace("{{", "{")
            .replace("}}", "}")
        )
        tot += 1
        if redact(text).text != text:
            bad[i] += 1
            if len(ex[i]) < 3:
                ex[i].append(text[:100])
print(f"benign changed {sum(bad.values())}/{tot}")
for i in sorted(bad, key=lambda i: -bad[i])[:25]:
    print(f"{bad[i]:4}  {T[i]!r}  e.g. {ex[i]}")
