"""The blind secrets corpus secrets_holdout6: reproducible, well-formed, checksums valid. Never runs the redaction."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import pytest

CORPUS = Path(__file__).parent / "fixtures" / "secrets_holdout6"


def _load(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("holdout6_gen", CORPUS / "make_corpus.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def secrets() -> list[dict[str, object]]:
    return _load("secrets.jsonl")


@pytest.fixture(scope="module")
def benign() -> list[dict[str, object]]:
    return _load("benign.jsonl")


def _parts(secrets: list[dict[str, object]], prefix: str) -> list[str]:
    out: list[str] = []
    for row in secrets:
        if str(row["format"]).startswith(prefix):
            out.extend(str(p) for p in row["secrets"])  # type: ignore[attr-defined]
    assert out, prefix
    return out


def test_generator_reproduces_files(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(CORPUS / "make_corpus.py"), str(tmp_path)], check=True, capture_output=True)
    for name in ("secrets.jsonl", "benign.jsonl"):
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), name


def test_secret_rows_shape(secrets: list[dict[str, object]]) -> None:
    assert len(secrets) >= 400
    names = [row["format"] for row in secrets]
    assert len(names) == len(set(names))
    for row in secrets:
        assert set(row) == {"format", "context", "text", "secrets"}
        assert re.fullmatch(r"[a-z0-9_]+/[a-z0-9_]+@[a-z0-9_]+", str(row["format"])), row["format"]
        text, parts = str(row["text"]), row["secrets"]
        assert isinstance(parts, list) and parts
        for p in parts:
            assert isinstance(p, str) and p in text, (row["format"], p)
            if len(p) < 10:
                assert text.count(p) == 1, (row["format"], p)
                continue
            # A perfect redaction can score: no 10-character window of a part occurs outside the part.
            rest = text.replace(p, "\0")
            assert not any(p[i : i + 10] in rest for i in range(len(p) - 9)), (row["format"], p)


def test_benign_rows_shape(benign: list[dict[str, object]]) -> None:
    assert len(benign) >= 150
    cases = [b["case"] for b in benign]
    assert len(cases) == len(set(cases))
    for b in benign:
        assert set(b) == {"case", "text"} and str(b["text"]).strip()


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def test_cards_pass_luhn_and_benign_order_numbers_fail(secrets: list[dict[str, object]], benign: list[dict[str, object]]) -> None:
    for p in _parts(secrets, "card/"):
        digits = re.sub(r"\D", "", p)
        assert 14 <= len(digits) <= 19 and _luhn(digits), p
    text = next(str(b["text"]) for b in benign if b["case"] == "order_numbers_luhn_fail")
    numbers = re.findall(r"\d{16}", text)
    assert len(numbers) == 2 and not any(_luhn(n) for n in numbers)


def test_ibans_pass_mod97(secrets: list[dict[str, object]]) -> None:
    for p in _parts(secrets, "bank/iban_"):
        s = p.replace(" ", "")
        assert int("".join(str(int(c, 36)) for c in s[4:] + s[:4])) % 97 == 1, p


def test_national_id_checksums(secrets: list[dict[str, object]], gen: ModuleType) -> None:
    for p in _parts(secrets, "national_id/in_aadhaar"):
        assert gen.verhoeff_ok(p.replace(" ", "")), p
    for p in _parts(secrets, "national_id/ca_sin"):
        assert _luhn(p.replace(" ", "")), p
    for p in _parts(secrets, "national_id/es_dni"):
        assert "TRWAGMYFPDXBNJZSQVHLCKE"[int(p[:8]) % 23] == p[8], p
    for p in _parts(secrets, "national_id/fr_nir"):
        d = p.replace(" ", "")
        assert 97 - int(d[:13]) % 97 == int(d[13:]), p
    for p in _parts(secrets, "national_id/br_cpf"):
        digits = [int(c) for c in re.sub(r"\D", "", p)]
        for k in (9, 10):
            assert sum(x * (k + 1 - i) for i, x in enumerate(digits[:k])) * 10 % 11 % 10 == digits[k], p


def test_verhoeff_known_value(gen: ModuleType) -> None:
    assert gen.verhoeff_digit("236") == "3" and gen.verhoeff_ok("2363") and not gen.verhoeff_ok("2364")


def test_bip39_and_bech32_and_base58check(secrets: list[dict[str, object]], gen: ModuleType) -> None:
    phrases = [row for row in secrets if str(row["format"]).startswith("crypto/bip39")]
    assert len(phrases) >= 5
    for row in phrases:
        words = re.sub(r"\d+\.", " ", " ".join(row["secrets"])).split()  # type: ignore[arg-type]
        assert len(words) in (12, 24) and gen.bip39_ok(" ".join(words)), row["format"]
    for p in _parts(secrets, "privkey/age") + _parts(secrets, "crypto/nostr_nsec"):
        assert gen.bech32_ok(p), p
    for p in _parts(secrets, "crypto/bitcoin_wif") + _parts(secrets, "crypto/bip32_xprv"):
        n = 0
        for c in p:
            n = n * 58 + gen.B58.index(c)
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        assert hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:], p


def test_github_tokens_carry_crc32_checksum(secrets: list[dict[str, object]], gen: ModuleType) -> None:
    found = 0
    for row in secrets:
        for p in row["secrets"]:  # type: ignore[attr-defined]
            m = re.fullmatch(r"(?:ghp|gho|ghs|npm)_([A-Za-z0-9]{30})([A-Za-z0-9]{6})", p)
            if m:
                found += 1
                assert gen.base62(zlib.crc32(m.group(1).encode()), 6) == m.group(2), p
    assert found >= 10


def test_jwts_are_well_formed(secrets: list[dict[str, object]]) -> None:
    for p in _parts(secrets, "jwt/"):
        head, body, sig = p.split(".")
        pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
        assert json.loads(base64.urlsafe_b64decode(pad(head)))["alg"] == "HS256"
        assert "exp" in json.loads(base64.urlsafe_b64decode(pad(body)))
        assert len(base64.urlsafe_b64decode(pad(sig))) == 32
