"""Redaction cost on the write path: µs per typical ~300-character record.

Every ``remember`` and every imported record runs :func:`agent_memory.redaction.api.redact` on its
content, so its cost bounds the import rate (the target is >= 2,000 records/s for the whole
write).  The records here are deterministic: mostly prose memories (preferences, decisions,
meeting notes), some code and config snippets that *mention* tokens and passwords, and about
one in twenty with a real-looking (fake) secret.

``--baseline FILE`` times a second redaction module side by side (for example the previous
version: ``git show <rev>:agent_memory/redaction/api.py > /tmp/old_redact.py``) so the before/after
figures come from one run on one machine.

``--corpus`` also scores each option against the shipped corpus (tests/fixtures/secrets: secrets
missed, benign look-alikes damaged, ms per text): this module, the baseline, and detect-secrets
when it is installed (``pip install detect-secrets``), both as its CLI scans a file (plugins and
default filters) and as its ad-hoc ``scan_line`` (plugins, no filters).

    .venv/bin/python benchmarks/bench_redact.py [--records 2000] [--repeat 5] [--baseline FILE] [--corpus] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agent_memory.redaction.api as current  # noqa: E402

PROSE = (
    "The user prefers short answers and wants code examples in Python 3.12 with type hints.",
    "We decided on 2024-05-14 to move the nightly job from 02:00 to 03:30 UTC because of the backup window.",
    "Ada mentioned that the staging cluster runs Postgres 16.2 on three nodes; the replica lags about 40 ms.",
    "Meeting notes: ship v1.8.3 on Friday, freeze the API, Bob owns the migration and the rollback plan.",
    "The customer's order #48213 was refunded; they asked for an invoice with VAT number included.",
    "Remember that the password policy requires 12 characters and rotation every 90 days for admins.",
    "Tokens are counted with cl100k_base; the context budget is 8,192 tokens and the summary uses 400.",
    "Use the secret manager, never commit keys. Rotate the deploy key when someone leaves the team.",
    "Flight to Lisbon on 3 June, seat 14C, hotel near Rua Augusta; the user dislikes early mornings.",
    "Commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the race in the indexer (see issue 212).",
    "The request id 123e4567-e89b-12d3-a456-426614174000 failed with a 502 from the gateway at 14:03.",
    "Docs live at https://docs.example.com/guide/install and the repo at git@github.com:acme/widgets.git.",
)
CODE = (
    "def login(user: str, password: str, token: Optional[str] = None) -> bool:\n    return check(user, password)",
    'access_token = response["access_token"]\nheaders = {"Authorization": f"Bearer {access_token}"}',
    "SSH_KEY_PATH=~/.ssh/id_ed25519\nprivate_key=~/.ssh/id_ed25519\nTIMEOUT=30",
    "api_key = os.environ['OPENAI_API_KEY']  # never hard-code it\nclient = OpenAI(api_key=api_key)",
    "max_tokens: 4096\ntemperature: 0.2\nmodel: gpt-4o-mini\nretries: 3",
)
SECRETS = (
    "DB_PASSWORD=Tr0ub4dor^3x-" + "q81Z",
    "my wifi password is " + "Blue-Falcon-" + "77",
    "use ghp_" + "0fG2xPVD8AfOTovYGkYSrIiBSed1S3wlj46F for the release",
    "STRIPE_WEBHOOK_SECRET=whsec_" + "Jq8Zr2LmW4xT9vBc6NdE1sKp3YhG7aUf",
)


def make_records(n: int, seed: int = 7) -> list[str]:
    """``n`` records of about 300 characters: prose and code, ~5% with a secret."""
    rng = random.Random(seed)
    records = []
    for i in range(n):
        parts: list[str] = []
        pool = CODE if i % 7 == 3 else PROSE
        while sum(len(p) + 1 for p in parts) < 280:
            parts.append(rng.choice(pool))
        if i % 20 == 11:
            parts[rng.randrange(len(parts))] = rng.choice(SECRETS)
        records.append(" ".join(parts)[:320])
    return records


def load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("baseline_redact", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def time_per_record(fns: dict[str, Callable[[str], Any]], records: list[str], repeat: int) -> dict[str, dict[str, float]]:
    """Median and best µs per record of each function over ``repeat`` passes, interleaved so that
    a busy machine slows every function alike (after one warm-up pass each)."""
    runs: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        for text in records:
            fn(text)
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for text in records:
                fn(text)
            runs[name].append((time.perf_counter() - t0) / len(records) * 1e6)
    return {name: {"median_us": statistics.median(r), "best_us": min(r)} for name, r in runs.items()}


def _detect_secrets_options() -> dict[str, Callable[[str], str]]:
    """detect-secrets as a redactor, if installed: every reported secret value is replaced."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return {}
    import os
    import tempfile

    folder = tempfile.mkdtemp()

    def replace(text: str, values: list[str]) -> str:
        for value in values:
            if value:
                text = text.replace(value, "[REDACTED]")
        return text

    def file_scan(text: str) -> str:
        path = os.path.join(folder, "note.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        found = SecretsCollection()
        with default_settings():
            found.scan_file(path)
        return replace(text, [secret.secret_value or "" for _, secret in found])

    def line_scan(text: str) -> str:
        with default_settings():
            values = [s.secret_value or "" for line in text.splitlines() for s in scan_line(line)]
        return replace(text, values)

    return {"detect-secrets (file scan, filters)": file_scan, "detect-secrets (scan_line, no filters)": line_scan}


def corpus_figures(options: dict[str, Callable[[str], str]]) -> dict[str, dict[str, Any]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "secrets"))
    from score import score  # noqa: PLC0415

    out = {}
    for name, fn in options.items():
        t0 = time.perf_counter()
        sc = score(fn)
        elapsed = time.perf_counter() - t0
        out[name] = {
            "secrets": sc.secrets,
            "formats": sc.formats,
            "redacted": sc.redacted,
            "recall": round(sc.recall, 4),
            "benign": sc.benign,
            "damaged": sc.damaged,
            "damage_rate": round(sc.damage_rate, 4),
            "ms_per_text": round(elapsed / (sc.secrets + sc.benign) * 1e3, 3),
            "missed": sc.missed,
            "damaged_cases": sc.damaged_cases,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", help="path of another redact module to time beside this one")
    parser.add_argument("--corpus", action="store_true", help="score each option on the shipped corpus")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    records = make_records(args.records)
    out: dict[str, Any] = {
        "records": len(records),
        "mean_chars": round(sum(map(len, records)) / len(records)),
        "redacted_records": sum(current.redact(r).count > 0 for r in records),
    }
    fns: dict[str, Callable[[str], Any]] = {"current": current.redact}
    if args.baseline:
        fns["baseline"] = load(args.baseline).redact
    out.update(time_per_record(fns, records, args.repeat))
    if args.corpus:
        options: dict[str, Callable[[str], str]] = {name: (lambda t, f=fn: f(t).text) for name, fn in fns.items()}
        options.update(_detect_secrets_options())
        out["corpus"] = corpus_figures(options)
    if args.baseline:
        # best-of ratio: the least disturbed pass of each (medians wander on a shared machine)
        out["ratio"] = round(out["current"]["best_us"] / out["baseline"]["best_us"], 2)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['records']} records, mean {out['mean_chars']} chars, {out['redacted_records']} changed by redaction")
    for name in ("baseline", "current"):
        if name in out:
            figs = out[name]
            print(f"  {name:9s} median {figs['median_us']:7.1f} µs/record   best {figs['best_us']:7.1f} µs/record")
    if "ratio" in out:
        print(f"  current / baseline (best passes): {out['ratio']}x")
    for name, figs in out.get("corpus", {}).items():
        print(
            f"  corpus, {name}: {figs['redacted']}/{figs['secrets']} secrets redacted ({figs['recall']:.1%}), "
            f"{figs['damaged']}/{figs['benign']} benign damaged ({figs['damage_rate']:.1%}), {figs['ms_per_text']} ms/text"
        )


if __name__ == "__main__":
    main()
