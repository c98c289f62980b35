"""The fifth (blind) secrets corpus is exactly what its generator makes, and every line is well-formed.

These tests check the corpus only; they never run the redaction (the corpus is measured elsewhere).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "fixtures" / "secrets_holdout4"
MIN_SECRETS = 320
MIN_BENIGN = 110


def _rows(name: str) -> list[dict[str, object]]:
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("holdout4")
    subprocess.run([sys.executable, str(CORPUS / "make_corpus.py"), str(out)], check=True, timeout=120)
    return out


@pytest.mark.parametrize("name", ["secrets.jsonl", "benign.jsonl"])
def test_files_are_exactly_what_the_generator_makes(regenerated: Path, name: str) -> None:
    assert (regenerated / name).read_bytes() == (CORPUS / name).read_bytes()


def test_generator_is_deterministic_across_runs(regenerated: Path, tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(CORPUS / "make_corpus.py"), str(tmp_path)], check=True, timeout=120)
    for name in ("secrets.jsonl", "benign.jsonl"):
        assert (tmp_path / name).read_bytes() == (regenerated / name).read_bytes()


def test_secret_lines_are_well_formed() -> None:
    rows = _rows("secrets.jsonl")
    assert len(rows) >= MIN_SECRETS
    formats: set[str] = set()
    for row in rows:
        assert set(row) == {"format", "context", "text", "secrets"}, row
        fmt, ctx, text, parts = row["format"], row["context"], row["text"], row["secrets"]
        assert isinstance(fmt, str) and fmt and fmt not in formats, fmt
        formats.add(fmt)
        assert isinstance(ctx, str) and ctx, fmt
        assert isinstance(text, str) and text, fmt
        assert isinstance(parts, list) and parts, fmt
        for part in parts:
            assert isinstance(part, str) and part, fmt
            assert part in text, (fmt, part)


def test_benign_lines_are_well_formed() -> None:
    rows = _rows("benign.jsonl")
    assert len(rows) >= MIN_BENIGN
    cases: set[str] = set()
    for row in rows:
        assert set(row) == {"case", "text"}, row
        case, text = row["case"], row["text"]
        assert isinstance(case, str) and case and case not in cases, case
        cases.add(case)
        assert isinstance(text, str) and text, case


def test_no_secret_part_appears_in_a_benign_text() -> None:
    long_parts: list[str] = []
    for row in _rows("secrets.jsonl"):
        parts = row["secrets"]
        assert isinstance(parts, list)
        long_parts.extend(str(p) for p in parts if len(str(p)) >= 10)
    for row in _rows("benign.jsonl"):
        text = str(row["text"])
        assert not [p for p in long_parts if p in text], row["case"]


def test_breadth_of_families_and_places() -> None:
    rows = _rows("secrets.jsonl")
    families = {str(row["format"]).split("/")[0] for row in rows}
    contexts = {str(row["context"]) for row in rows}
    languages = {c for c in contexts if c.startswith("prose (")}
    assert len(families) >= 150, len(families)
    assert len(contexts) >= 50, len(contexts)
    assert len(languages) >= 15, sorted(languages)
    for shape in ("split across lines", "zero-width characters inserted", "look-alike unicode label", "escaped JSON in JSON"):
        assert shape in contexts, shape


def test_checksummed_values_are_valid() -> None:
    """Card numbers pass Luhn and IBANs pass mod-97, so a detector may rely on the checksum."""

    def luhn_ok(num: str) -> bool:
        total = 0
        for i, ch in enumerate(reversed(num)):
            d = int(ch) * (2 if i % 2 else 1)
            total += d - 9 if d > 9 else d
        return total % 10 == 0

    def iban_ok(value: str) -> bool:
        s = value[4:] + value[:4]
        return int("".join(str(int(c, 36)) for c in s)) % 97 == 1

    cards = ibans = 0
    for row in _rows("secrets.jsonl"):
        fmt, parts = str(row["format"]), row["secrets"]
        assert isinstance(parts, list)
        joined = "".join(str(p) for p in parts)
        if fmt.startswith("card_"):
            digits = "".join(chr(0x30 + ord(c) - 0xFF10) if "\uff10" <= c <= "\uff19" else c for c in joined)
            digits = "".join(c for c in digits if c.isdigit())
            assert luhn_ok(digits), fmt
            cards += 1
        elif fmt.startswith("iban_"):
            assert iban_ok("".join(c for c in joined if c.isalnum())), fmt
            ibans += 1
    assert cards >= 10 and ibans >= 10
    for row in _rows("benign.jsonl"):
        if str(row["case"]).startswith("iban_bad_checksum"):
            value = str(row["text"]).split()[-1]
            assert not iban_ok(value), row["case"]
