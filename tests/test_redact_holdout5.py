"""Integrity of the blind holdout5 secrets corpus (tests/fixtures/secrets_holdout5/).

These tests never run the redaction: they check that the committed files are exactly what the seeded generator
writes, that every line is well-formed, and that the checksummed values really carry valid checksums.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "fixtures" / "secrets_holdout5"
FILES = ("secrets.jsonl", "benign.jsonl")
MIN_SECRETS = 320
MIN_BENIGN = 110


def _load(name: str) -> list[dict[str, object]]:
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban_ok(value: str) -> bool:
    s = value[4:] + value[:4]
    return int("".join(str(int(c, 36)) for c in s)) % 97 == 1


def _values(case: dict[str, object]) -> list[str]:
    """The secret values of a case; parts of a value split across lines are joined back together."""
    parts = [str(p) for p in case["secrets"]]  # type: ignore[attr-defined]
    return ["".join(parts)] if "split_lines" in str(case["format"]) else parts


def test_files_are_exactly_what_the_generator_writes(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(CORPUS / "make_corpus.py"), str(tmp_path)], check=True, timeout=120)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), f"{name} differs from a fresh generation"


def test_secrets_lines_are_well_formed() -> None:
    cases = _load("secrets.jsonl")
    assert len(cases) >= MIN_SECRETS
    formats = [c["format"] for c in cases]
    assert len(set(formats)) == len(formats), "format names must be unique"
    for case in cases:
        assert set(case) == {"format", "context", "text", "secrets"}, case
        assert isinstance(case["format"], str) and case["format"]
        assert isinstance(case["context"], str) and case["context"]
        text = case["text"]
        parts = case["secrets"]
        assert isinstance(text, str) and text
        assert isinstance(parts, list) and parts, case["format"]
        for part in parts:
            assert isinstance(part, str) and part.strip(), case["format"]
            assert part in text, f"{case['format']}: secret part not verbatim in text"


def test_no_secret_part_survives_elsewhere_once_all_parts_are_cut() -> None:
    # The scoring looks for each part anywhere in the output, so a short part (a PIN, a CVV) must not also occur by
    # accident in the surrounding text: otherwise a perfect redaction could never score.
    for case in _load("secrets.jsonl"):
        parts = [str(p) for p in case["secrets"]]  # type: ignore[attr-defined]
        rest = str(case["text"])
        for part in sorted(parts, key=len, reverse=True):
            rest = rest.replace(part, "\0")
        for part in parts:
            probes = [part] if len(part) < 10 else [part[i : i + 10] for i in range(len(part) - 9)]
            for probe in probes:
                assert probe not in rest, f"{case['format']}: {probe!r} also occurs outside the secret"


def test_benign_lines_are_well_formed() -> None:
    cases = _load("benign.jsonl")
    assert len(cases) >= MIN_BENIGN
    names = [c["case"] for c in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    for case in cases:
        assert set(case) == {"case", "text"}, case
        assert isinstance(case["text"], str) and case["text"]


def test_breadth_of_families_and_places() -> None:
    cases = _load("secrets.jsonl")
    families = {str(c["format"]).split("/")[0] for c in cases}
    assert len(families) >= 25
    contexts = {c["context"] for c in cases}
    assert len(contexts) >= 80


@pytest.mark.parametrize("family", ["card/"])
def test_card_numbers_pass_luhn(family: str) -> None:
    checked = 0
    for case in _load("secrets.jsonl"):
        if str(case["format"]).startswith(family):
            for part in _values(case):
                digits = re.sub(r"[ \u200b-]", "", part)
                if len(digits) >= 13 and digits.isdigit():
                    assert _luhn_ok(digits), case["format"]
                    checked += 1
    assert checked >= 20


def test_ibans_pass_mod97_and_the_benign_one_fails() -> None:
    checked = 0
    for case in _load("secrets.jsonl"):
        if str(case["format"]).startswith("bank/iban"):
            for part in _values(case):
                compact = re.sub(r"[ \u200b-]", "", part)
                if re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]+", compact):
                    assert _iban_ok(compact), case["format"]
                    checked += 1
    assert checked >= 8
    bad = next(c for c in _load("benign.jsonl") if c["case"] == "iban_bad_check")
    assert not _iban_ok(str(bad["text"]).removeprefix("IBAN: "))


def test_benign_bad_luhn_cards_fail_luhn() -> None:
    for case in _load("benign.jsonl"):
        if str(case["case"]).startswith("card_bad_luhn"):
            digits = "".join(ch for ch in str(case["text"]) if ch.isdigit())
            assert not _luhn_ok(digits), case["case"]


def _weighted(digits: str, weights: list[int]) -> int:
    return sum(int(d) * w for d, w in zip(digits, weights))


def _cpf_ok(v: str) -> bool:
    d = re.sub(r"\D", "", v)
    first = _weighted(d, list(range(10, 1, -1))) * 10 % 11 % 10
    second = _weighted(d, list(range(11, 1, -1))) * 10 % 11 % 10
    return int(d[9]) == first and int(d[10]) == second


def _china_ok(v: str) -> bool:
    w = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    return "10X98765432"[_weighted(v[:17], w) % 11] == v[17]


def _tckn_ok(v: str) -> bool:
    d = [int(c) for c in v]
    return d[9] == ((d[0] + d[2] + d[4] + d[6] + d[8]) * 7 - (d[1] + d[3] + d[5] + d[7])) % 10 and d[10] == sum(d[:10]) % 10


ID_CHECKS = {
    "national_id/brazil_cpf": _cpf_ok,
    "national_id/dutch_bsn": lambda v: (_weighted(v, [9, 8, 7, 6, 5, 4, 3, 2, -1]) % 11) == 0,
    "national_id/china_resident_id": _china_ok,
    "national_id/poland_pesel": lambda v: _weighted(v, [1, 3, 7, 9, 1, 3, 7, 9, 1, 3, 1]) % 10 == 0,
    "national_id/turkey_tckn": _tckn_ok,
    "national_id/spain_dni": lambda v: "TRWAGMYFPDXBNJZSQVHLCKE"[int(v[:8]) % 23] == v[8],
    "national_id/sweden_personnummer": lambda v: _luhn_ok(v.replace("-", "")),
    "national_id/canada_sin": lambda v: _luhn_ok(v.replace(" ", "")),
    "national_id/south_africa_id": _luhn_ok,
    "national_id/france_nir": lambda v: 97 - int(v.replace(" ", "")[:13]) % 97 == int(v.replace(" ", "")[13:]),
    "national_id/finland_hetu": lambda v: "0123456789ABCDEFHJKLMNPRSTUVWXY"[int(v[:6] + v[7:10]) % 31] == v[10],
}


def test_national_ids_carry_valid_checksums() -> None:
    checked = 0
    for case in _load("secrets.jsonl"):
        fmt = str(case["format"])
        check = next((fn for prefix, fn in ID_CHECKS.items() if fmt.startswith(prefix + "@")), None)
        if check is None or any(tag in fmt for tag in ("@dictated", "@dashed", "@zwsp", "@k8s_b64", "@query_param", "@url_encoded_form")):
            continue
        for value in _values(case):
            assert check(value), fmt
            checked += 1
    assert checked >= 12


def test_benign_national_ids_fail_their_checksums() -> None:
    benign = {str(c["case"]): str(c["text"]) for c in _load("benign.jsonl")}
    assert not _china_ok(benign["china_id_bad_check"].split()[-1])
    assert not _tckn_ok(benign["tckn_bad_check"].split()[-1])
    assert not _cpf_ok(benign["cpf_bad_digits"].split()[-1])
    assert _weighted(benign["pesel_bad_check"].split()[-1], [1, 3, 7, 9, 1, 3, 7, 9, 1, 3, 1]) % 10 != 0
