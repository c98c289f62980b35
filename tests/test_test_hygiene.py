"""The tests as code: `make lint` type-checks them, and the shared doubles live in one place (tests/_doubles.py)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

TESTS = Path(__file__).parent
ROOT = TESTS.parent
OWN = {"_doubles.py", "test_test_hygiene.py"}


def _lint_recipe() -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]


def test_make_lint_type_checks_the_tests_with_their_own_config() -> None:
    assert "mypy --config-file tests/mypy.ini" in _lint_recipe()
    config = configparser.ConfigParser()
    config.read(TESTS / "mypy.ini")
    assert config["mypy"]["files"] == "tests"
    assert config["mypy"].getboolean("check_untyped_defs")  # untyped tests allowed, their bodies still checked


def test_no_test_file_carries_its_own_copy_of_a_shared_double() -> None:
    copies = {
        r"class \w+\(BaseHTTPRequestHandler\)": "a fake HTTP server (_doubles.FakeJSONServer)",
        r"ThreadingHTTPServer\(\(": "a fake HTTP server (_doubles.FakeJSONServer)",
        r"hashlib\.md5\(w\.encode\(\)\)\.hexdigest\(\), 16\) % 4\]": "the concept embedder (_doubles.concept_vectors_for)",
        r'"agent_memory\.cli", "--root", str\(root\), "--json"': "the --json CLI runner (_doubles.cli_json)",
        r"def _free_port\(|def free_port\(": "free_port (_doubles.free_port)",
    }
    found = []
    for path in sorted(TESTS.glob("*.py")):
        if path.name in OWN or path.name == "_pg.py":  # _pg.py: the PostgreSQL engineer's file for now
            continue
        text = path.read_text(encoding="utf-8")
        # a subprocess script inside a string (test_litellm_model) runs without the tests folder: it may keep its own
        text = re.sub(r'= r"""\n.*?\n"""', "", text, flags=re.S)
        found += [f"{path.name}: {what}" for pattern, what in copies.items() if re.search(pattern, text)]
    assert found == []
