"""Secret redaction, split by job: ``providers`` (token formats), ``structured`` (shapes),
``keyvalue`` (named values and command lines), ``heuristics`` (prose, cards, entropy, encodings),
``views`` (disguises undone) and ``engine`` (merging and replacing).  Import from
:mod:`agent_memory.redaction.api`."""
