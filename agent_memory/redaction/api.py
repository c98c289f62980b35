"""Secret redaction for text on its way into the memory store (and into prompts).

``redact(text)`` replaces credentials with a marker such as ``[REDACTED:openai_key]`` and leaves
everything around them untouched; for ``key=value`` pairs only the value is replaced
(``password=[REDACTED:password]``).  ``contains_secret(text)`` answers the same question (the
store uses it to refuse ids, keys and tags); ``redact_text(text)`` returns the text alone (for
``USER.md`` on its way into the core block).

What is found (the rules live in :mod:`agent_memory.redaction`):

* ~65 provider token formats by prefix and shape (OpenAI, Anthropic, AWS, GitHub, GitLab incl.
  runner tokens, Stripe incl. webhook secrets, Google API/OAuth/refresh, Azure client secrets,
  account keys and SAS signatures, SendGrid, Twilio, Slack incl. refresh/app tokens and webhooks,
  Vault, Terraform, DigitalOcean, npm, PyPI, Hugging Face, …), JWTs and PEM private keys;
* values of keys that name a secret, wherever the name sits (``DB_PASS=``, ``pw:``, ``dbPassword``,
  ``"clientSecret"``, ``AccountKey=``, ``PIN:``), ``--password x``, ``mysql -pX``, ``sshpass -p``,
  ``curl -u user:X``, ``.netrc`` lines, URL passwords and ``Authorization`` headers;
* prose ("my wifi password is …", "the PIN is 4821", "I changed my password to …");
* card numbers (Luhn and issuer checked), high-entropy values in assignments, base64 that decodes
  to a secret; identity and account numbers by label in many languages or by their check characters;
* secrets named by their surroundings (``contextual``): commands written as argument lists, quoted
  name/value pairs (``define('DB_PASSWORD', 'X')``), XML name/value pairs, SDK client arguments, URL
  user parts and key path segments, router configs, tables with a password column, key bytes,
  ``cat`` of a key file, cookies, private JWK members, prefixed tokens of any service;
* all of the above behind zero-width characters, look-alike letters, full-width forms (NFKC),
  percent-encoding, string-literal seams (``"ghp_" "…"``) and spaces inside a token.

Encrypted-at-rest values made to be committed (SOPS ``ENC[…]``, Ansible Vault, SealedSecret data) and
public key members are never touched.  Code and prose that merely *mention* secrets are left intact (``token: Optional[str] = None``,
``access_token = response["access_token"]``, ``private_key=~/.ssh/id_ed25519``, "Secret: Santa …",
UUIDs, git SHAs, hashes, paths, URLs without credentials, ordinary numbers and dates).

Guarantees: stdlib only; never raises on any ``str`` (a non-``str`` is a ``TypeError``); linear-time
patterns (possessive or bounded quantifiers); idempotent (markers are never matched).
"""

from __future__ import annotations

from agent_memory.redaction.base import MARKER_RE, marker
from agent_memory.redaction.engine import KINDS, RedactionResult, contains_secret, find_spans, redact, redact_text
from agent_memory.redaction.samples import SECRET_SAMPLES, SECRET_SAMPLES_BY_KIND

__all__ = [
    "KINDS",
    "MARKER_RE",
    "SECRET_SAMPLES",
    "SECRET_SAMPLES_BY_KIND",
    "RedactionResult",
    "contains_secret",
    "find_spans",
    "marker",
    "redact",
    "redact_text",
]
