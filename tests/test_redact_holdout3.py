"""Holdout3 (tests/fixtures/secrets_holdout3): a third redaction corpus, written blind (see its README.md).

These tests only check that the fixture is exactly what its seeded generator makes and that it is well-formed; they
never run the redaction on it (the scoring is added separately, once).  The check-digit checks below are written
apart from the generator's, so a generator bug that breaks a Luhn, IBAN or BIP39 checksum shows up here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

HOLDOUT3 = Path(__file__).parent / "fixtures" / "secrets_holdout3"


def _rows(name: str) -> list[dict[str, Any]]:
    with open(HOLDOUT3 / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_holdout3_fresh", HOLDOUT3 / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _luhn(number: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(number)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _digits(text: str) -> str:
    return "".join(str(int(ch)) for ch in text if ch.isdigit())  # int() folds full-width digits too


def test_fixture_is_exactly_what_the_seeded_generator_makes() -> None:
    module = _generator()
    secrets, benign = module.secrets(), module.benign()
    assert [[c["format"], c["context"], c["text"], c["secrets"]] for c in _rows("secrets.jsonl")] == [list(c) for c in secrets]
    assert [[c["case"], c["text"]] for c in _rows("benign.jsonl")] == [list(c) for c in benign]
    assert module.secrets() == secrets and module.benign() == benign  # seeded: a second run is identical


def test_corpus_is_well_formed_big_and_spread() -> None:
    secrets, benign = _rows("secrets.jsonl"), _rows("benign.jsonl")
    assert len(secrets) >= 200 and len(benign) >= 80
    assert all(set(c) == {"format", "context", "text", "secrets"} for c in secrets)
    assert all(set(c) == {"case", "text"} for c in benign)
    assert len({c["format"] for c in secrets}) == len(secrets) and len({c["case"] for c in benign}) == len(benign)
    assert len({c["text"] for c in secrets}) == len(secrets) and len({c["text"] for c in benign}) == len(benign)
    for case in secrets:
        parts = case["secrets"]
        assert parts and all(isinstance(p, str) and len(p) >= 6 and p in case["text"] for p in parts), case["format"]
    assert len({c["context"] for c in secrets}) >= 20
    assert not {c["text"] for c in secrets} & {c["text"] for c in benign}


def test_check_digits_are_valid_where_the_real_thing_has_them() -> None:
    secrets = {c["format"]: c for c in _rows("secrets.jsonl")}
    cards = [f for f in secrets if f.startswith("card_") or f in ("homoglyph_fullwidth_card", "spaced_out_card_digits")]
    assert len(cards) >= 10
    for fmt in cards:
        number = _digits(secrets[fmt]["secrets"][0])
        assert 14 <= len(number) <= 19 and _luhn(number), fmt
    ibans = [f for f in secrets if f.startswith("iban_")]
    assert len(ibans) >= 8
    for fmt in ibans:
        value = secrets[fmt]["secrets"][0].replace(" ", "").upper()
        assert int("".join(str(int(c, 36)) for c in value[4:] + value[:4])) % 97 == 1, fmt
    for fmt in ("id_ca_sin", "id_za_id", "id_se_personnummer", "id_il_teudat_zehut", "id_gr_amka"):
        assert _luhn(_digits(secrets[fmt]["secrets"][0])), fmt
    cn = secrets["id_cn_resident"]["secrets"][0]
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    assert "10X98765432"[sum(int(a) * w for a, w in zip(cn, weights)) % 11] == cn[-1]
    dni = secrets["id_es_dni"]["secrets"][0]
    assert "TRWAGMYFPDXBNJZSQVHLCKE"[int(dni[:8]) % 23] == dni[8]


def test_bip39_phrases_have_valid_checksums_and_benign_cards_do_not() -> None:
    raw = (HOLDOUT3 / "bip39_english.txt").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda"
    index = {w: i for i, w in enumerate(raw.decode().split())}
    phrases = [c for c in _rows("secrets.jsonl") if c["format"].startswith("bip39_")]
    assert len(phrases) >= 3
    for case in phrases:
        words = re.findall(r"[a-z]+", case["secrets"][0])
        assert len(words) in (12, 15, 18, 21, 24) and all(w in index for w in words), case["format"]
        bits = "".join(format(index[w], "011b") for w in words)
        ent_bits = len(bits) * 32 // 33
        entropy = int(bits[:ent_bits], 2).to_bytes(ent_bits // 8, "big")
        assert format(hashlib.sha256(entropy).digest()[0], "08b")[: len(bits) - ent_bits] == bits[ent_bits:], case["format"]
    benign = {c["case"]: c["text"] for c in _rows("benign.jsonl")}
    for name in ("card_failing_luhn", "sixteen_digits_failing_luhn"):
        number = re.search(r"\d[\d ]{14,}\d", benign[name])
        assert number is not None and not _luhn(_digits(number.group())), name


def test_readme_says_it_was_written_blind_and_lists_the_benign_placeholders() -> None:
    readme = (HOLDOUT3 / "README.md").read_text(encoding="utf-8")
    assert "blind" in readme and "placeholder" in readme.lower()
    for case in [c["case"] for c in _rows("benign.jsonl") if c["case"].startswith("placeholder_")]:
        assert case in readme, case
