"""The capture rules for one clause: which shapes of sentence become which keyed facts.

Every rule is anchored on the clause's subject: the user ("I …", "I'm …", "my X is …") or a
member of the user's household ("my daughter …", "my dog …"). Anything said about other people
is not a rule's business. Each stable attribute has its own ``memory_key`` (``user.home``,
``user.allergy.peanuts``, ``user.daughter.name``) so a later value replaces the earlier one and
two attributes never share a key. ``docs/capture.md`` lists the rules with examples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Fact",
    "Subject",
    "USER",
    "clause_facts",
    "generic_my_fact",
    "my_fact",
    "name_fact",
    "sentence",
    "slug",
    "third_person",
    "trim_value",
]


@dataclass(frozen=True)
class Fact:
    """What a rule found: the content to store, its kind, key and tags; ``personal`` if it is about the user."""

    content: str
    kind: str = "fact"
    key: str | None = None
    tags: tuple[str, ...] = ()
    personal: bool = True


@dataclass(frozen=True)
class Subject:
    """Who a clause is about: ``User`` (key ``user``) or ``User's sister`` (key ``user.sister``)."""

    name: str
    key: str


USER = Subject("User", "user")

# -- lexicons ------------------------------------------------------------------------------------
_FAMILY = (
    "wife husband partner spouse fiance fiancee fiancé fiancée girlfriend boyfriend son daughter kid kids "
    "child children baby mom mum mother dad father parents brother sister sibling grandma grandmother "
    "grandpa grandfather granddaughter grandson aunt uncle niece nephew cousin twin stepson stepdaughter"
).split()
_PETS = "dog cat puppy kitten rabbit hamster parrot horse tortoise turtle guinea-pig ferret snake lizard fish".split()
_REL_RE = (
    r"(?:(?:little|older|younger|big|baby|eldest|oldest|youngest|twin|step|other|new)\s+)?(?:"
    + "|".join(sorted(_FAMILY + _PETS, key=len, reverse=True))
    + r")"
)
_JOBS = frozenset(
    (
        "engineer developer programmer designer manager teacher nurse doctor physician surgeon dentist pharmacist "
        "lawyer attorney solicitor accountant architect scientist researcher professor lecturer student chef cook "
        "baker waiter waitress bartender barista writer author journalist editor artist musician photographer "
        "consultant analyst electrician plumber carpenter mechanic pilot driver farmer firefighter paramedic therapist "
        "psychologist psychiatrist veterinarian vet librarian translator recruiter salesperson marketer entrepreneur "
        "founder cto ceo cfo intern economist mathematician physicist chemist biologist technician administrator "
        "sysadmin officer clerk cashier secretary tutor coach trainer nanny caregiver carer midwife dietitian "
        "nutritionist actor actress dancer singer soldier freelancer contractor radiologist optician paralegal "
        "pharmacologist geologist statistician illustrator animator copywriter realtor banker broker"
    ).split()
)
_DEICTIC = re.compile(r"^(?:it|that|this|these|those|them|you|him|her|when|how|what|the idea|your)\b", re.I)
_NOTHING = frozenset("anything everything nothing stuff things".split())
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "no": 0}
_NOT_NAMES = frozenset(
    (
        "tomorrow today tonight later back soon now again anytime sometime whenever when if at on in after before a an "
        "the maybe please up out over crazy anything something whatever what that this it later, asap first once "
        "monday tuesday wednesday thursday friday saturday sunday morning evening afternoon"
    ).split()
)
_MONTHS = (
    "january february march april may june july august september october november december jan feb mar apr jun jul aug sep sept oct nov dec"
).split()
_SPELLING = {"favorite": "favourite", "color": "colour", "colors": "colours", "neighbor": "neighbour"}
_TRANSIENT_SUBJECTS = frozenset(
    (
        "question problem issue point guess answer bad fault pleasure turn understanding "
        "plan idea concern worry suggestion request goal bet hunch mistake"
    ).split()
)
_TRANSIENT_VALUES = re.compile(
    r"^(?:so |really |very |a bit |kind of |totally |still |just )*(?:late|down|broken|slow|delayed|tired|sick|busy|"
    r"dead|empty|full|out|off|on|ready|done|fine|ok|okay|great|good|bad|awful|terrible|not working|acting up|"
    r"killing me|away|here|there|gone|lost|stuck|missing|over|cancelled|canceled)"
    r"(?:\s+(?:again|today|now|right now|at the moment|this morning|tonight))?$",
    re.I,
)
_OTHERS = frozenset(
    (
        "friend colleague coworker co-worker boss manager neighbour neighbor roommate flatmate classmate "
        "teammate doctor landlord landlady ex client mentor teacher coach"
    ).split()
)

# -- small helpers -------------------------------------------------------------------------------
_PERSON = [
    (r"\bI am\b|\bI'm\b", "the user is"),
    (r"\bI've\b|\bI have\b", "the user has"),
    (r"\bI'd\b", "the user would"),
    (r"\bI'll\b", "the user will"),
    (r"\bI was\b", "the user was"),
    (r"\bI\b", "the user"),
    (r"\bmyself\b", "the user"),
    (r"\bmine\b", "the user's"),
    (r"\bmy\b", "the user's"),
    (r"\bme\b", "the user"),
]
_TRAIL = re.compile(
    r"(?:[\s,]+(?:now|nowadays|these days|at the moment|currently|too|as well|again|actually|"
    r"lol|haha|though|for real|instead|by the way|btw|anyway|originally|after all)\b|[\s:;)(]+|\s*[-–—]\s*)+$",
    re.I,
)
_CUT = re.compile(
    r"(?:,\s*|\s+[-–—]\s+)(?:so|but|because|which|though|although|whereas|hence|therefore|since|"
    r"thanks|thank you|please|if|lol|haha|btw)\b.*$|\s+(?:because|but|whereas|although|so that|so no|"
    r"so i|so we|so please|thanks|thank you)\b.*$|\s*\(.*$",
    re.I,
)


def sentence(text: str) -> str:
    """Tidy ``text`` into one sentence: single spaces, a capital first letter and a full stop."""
    text = " ".join(text.split()).strip(" ,;:")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def third_person(text: str) -> str:
    """First-person words rewritten about "the user" (``my cat`` → ``the user's cat``)."""
    for pattern, repl in _PERSON:
        text = re.sub(pattern, repl, text, flags=re.I)
    return text


def trim_value(text: str) -> str:
    """A value without its trailing reason/aside ("…, so no satay please") and filler ("now", "too")."""
    text = _CUT.sub("", text.strip())
    previous = None
    while previous != text:
        previous, text = text, _TRAIL.sub("", text).strip().rstrip(".!")
    return text.strip()


def slug(text: str) -> str:
    """A key segment: lower-case words joined by ``-``, British spelling, leading articles dropped."""
    words = re.sub(r"[^a-z0-9]+", " ", text.lower().replace("'s ", " ")).split()
    while words and words[0] in ("a", "an", "the", "my", "some", "any"):
        words = words[1:]
    return "-".join(_SPELLING.get(w, w) for w in words)[:48].strip("-")


def _items(text: str) -> list[str]:
    """``peanuts, shellfish and eggs`` → three items (at most 6)."""
    parts = re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+|\s*/\s*", trim_value(text))
    return [p.strip() for p in parts if p.strip()][:6]


def _is_name(text: str) -> bool:
    words = text.split()
    return (
        1 <= len(words) <= 3
        and words[0].lower() not in _NOT_NAMES
        and all(re.fullmatch(r"[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ'.-]{0,29}", w) and w.lower() not in _MONTHS for w in words)
        and (len(words) == 1 or all(w[0].isupper() for w in words))
    )


def _name(text: str) -> str | None:
    text = re.sub(r"\s+(?:please|instead|from now on|for short|if you like|thanks)$", "", trim_value(text), flags=re.I)
    return " ".join(w[0].upper() + w[1:] for w in text.split()) if _is_name(text) else None


def _pref_fact(subj: Subject, verb: str, obj: str) -> Fact | None:
    """A like/dislike: keyed by its object (``user.taste.jazz``) or by the pair compared (``user.prefers.a-vs-b``).

    None for an object that only points at the conversation ("I like it", "I love that idea", "I hate when …").
    """
    obj = trim_value(obj)
    if _DEICTIC.match(obj):
        return None
    content = sentence(f"{subj.name} {verb} {third_person(obj)}")
    pair = re.match(r"^(.+?)\s+(?:over|to|rather than|than|instead of)\s+(.+)$", obj, re.I)
    if pair and verb in ("prefers", "would rather", "would prefer"):
        a, b = sorted((slug(pair.group(1)), slug(pair.group(2))))
        return Fact(content, "preference", f"{subj.key}.prefers.{a}-vs-{b}" if a and b else None, ("preference",))
    short = len(obj.split()) <= 5 and not re.match(r"^(?:to|doing|being|having)\b", obj, re.I)
    return Fact(content, "preference", f"{subj.key}.taste.{slug(obj)}" if short and slug(obj) else None, ("preference",))


# -- names ---------------------------------------------------------------------------------------
_CALL_ME = re.compile(r"^(?:please\s+|just\s+|you\s+(?:can|may|should)\s+|feel\s+free\s+to\s+)?call\s+me\s+(.+)$", re.I)
_MY_NAME = re.compile(r"^my\s+(?:first\s+|full\s+|nick)?name(?:'s|\s+is)\s+(.+)$", re.I)
_REL_NAME = re.compile(rf"^my\s+({_REL_RE})(?:'s|s')\s+names?(?:'s|\s+is|\s+are)\s+(.+)$", re.I)
_GO_BY = re.compile(r"^i\s+(?:go by|am called|'m called|am named|'m named)\s+(.+)$", re.I)


def name_fact(clause: str) -> Fact | None:
    """ "call me Sam", "my name is Sam", "I go by Sam", "my daughter's name is Lily" (not "call me tomorrow")."""
    if m := _REL_NAME.match(clause):
        rel, name = m.group(1).lower(), _name(m.group(2))
        return Fact(f"User's {rel}'s name is {name}.", key=f"user.{slug(rel)}.name") if name else None
    m = _CALL_ME.match(clause) or _MY_NAME.match(clause) or _GO_BY.match(clause)
    if m and (name := _name(m.group(1))):
        return Fact(f"User's name is {name}.", key="user.name")
    return None


# -- "I'm …" / "my sister is …" ------------------------------------------------------------------
_NEG = re.compile(r"^(?:not|no longer|never|n't)\s+(.*)$", re.I)
_ADVERBS = re.compile(
    r"^(?:(?:really|very|severely|deathly|extremely|highly|mildly|slightly|super|also|still|now|"
    r"actually|currently|totally|quite|so|pretty|just|recently|finally|officially)\s+)+",
    re.I,
)
_DIET = re.compile(
    r"^(?:an?\s+)?(?:strict\s+|lifelong\s+|full[- ]time\s+)?(vegetarian|vegan|pescatarian|pescetarian|"
    r"flexitarian|teetotal|teetotaller|teetotaler|kosher|halal|gluten[- ]free|plant[- ]based|"
    r"on an? (?:keto|paleo|low[- ]carb|gluten[- ]free|vegan|vegetarian) diet)$",
    re.I,
)
_JOB = re.compile(r"^(an?\s+(?:[\w-]+\s+){0,4}?([\w-]+))(?:\s+(at|for)\s+(.+))?$", re.I)


def _be(pred: str, subj: Subject) -> list[Fact]:
    """Facts from ``<subject> is <pred>``."""
    raw, neg_m = pred, _NEG.match(pred)
    neg = bool(neg_m) or bool(re.search(r"\b(?:anymore|any more)$", pred, re.I))
    pred = _ADVERBS.sub("", neg_m.group(1) if neg_m else pred)
    pred = re.sub(r"\s*\b(?:anymore|any more)$", "", trim_value(pred), flags=re.I)
    is_ = f"{subj.name} is {'not ' if neg else ''}"
    if m := re.match(r"^(?:allergic|intolerant)\s+to\s+(.+)$", pred, re.I):
        what = "allergic" if pred.lower().startswith("allergic") else "intolerant"
        kind = "allergy" if what == "allergic" else "intolerance"
        return [
            Fact(sentence(f"{is_}{what} to {item}"), key=f"{subj.key}.{kind}.{slug(item)}")
            for item in _items(m.group(1))
            if slug(item) and item.lower() not in _NOTHING
        ]
    if m := re.match(r"^(lactose|gluten|fructose|histamine)[- ]intolerant$|^(c(?:o)?eliac)$", pred, re.I):
        what = (m.group(1) or "gluten").lower()
        return [Fact(sentence(f"{is_}{pred.lower()}"), key=f"{subj.key}.intolerance.{what}")]
    if m := _DIET.match(pred):
        said_not = (
            neg_m is not None and neg_m.group(0).lower().startswith("not") and not re.search(r"\b(?:anymore|any more)\W*$", raw, re.I)
        )
        word = "" if not neg else "not " if said_not else "no longer "
        return [Fact(sentence(f"{subj.name} is {word}{m.group(1).lower()}"), key=f"{subj.key}.diet")]
    if neg:
        if m := re.match(r"^(?:an?\s+)?(?:big\s+|huge\s+)?fan\s+of\s+(.+)$", pred, re.I):
            return [f for f in [_pref_fact(subj, "is not a fan of", m.group(1))] if f]
        return []  # "I'm not a nurse" says what the user is not: nothing to keep
    if m := re.match(
        r"^(married|single|divorced|engaged|widowed|separated|in a relationship)"
        r"(?:\s+(?:to|with)\s+(.+))?$",
        pred,
        re.I,
    ):
        return [Fact(sentence(f"{subj.name} is {pred}"), key=f"{subj.key}.relationship")]
    if (m := re.match(r"^(\d{1,3})(?:\s*(?:years?|yrs?)(?:\s+old)?)?$", pred, re.I)) and 0 < int(m.group(1)) < 120:
        return [Fact(f"{subj.name} is {int(m.group(1))} years old.", key=f"{subj.key}.age")]
    if m := re.match(r"^(?:originally\s+)?from\s+(.+)$", pred, re.I):
        return [Fact(sentence(f"{subj.name} is from {m.group(1)}"), key=f"{subj.key}.origin")]
    if (m := re.match(r"^(?:based|living|located|settled)\s+in\s+(.+)$", pred, re.I)) and _place(m.group(1)):
        return [Fact(sentence(f"{subj.name} lives in {m.group(1)}"), key=f"{subj.key}.home")]
    if m := re.match(r"^working\s+as\s+(.+)$", pred, re.I):
        return [Fact(sentence(f"{subj.name} works as {m.group(1)}"), key=f"{subj.key}.job")]
    if m := re.match(r"^employed\s+(?:at|by)\s+(.+)$", pred, re.I):
        return [Fact(sentence(f"{subj.name} works at {m.group(1)}"), key=f"{subj.key}.employer")]
    if re.match(r"^(?:retired|unemployed|self-employed|freelancing|between jobs|a stay-at-home (?:mom|mum|dad|parent))$", pred, re.I):
        return [Fact(sentence(f"{subj.name} is {pred}"), key=f"{subj.key}.job")]
    if m := re.match(
        r"^(?:an?\s+)?(?:big\s+|huge\s+|massive\s+|great\s+)?fan\s+of\s+(.+)$|^(?:into|obsessed with|"
        r"crazy about|passionate about|keen on)\s+(.+)$",
        pred,
        re.I,
    ):
        verb = "is a fan of" if m.group(1) else "is " + pred[: m.start(2)].strip().lower()
        return [f for f in [_pref_fact(subj, verb, m.group(1) or m.group(2))] if f]
    if (m := _JOB.match(pred)) and (m.group(2).lower() in _JOBS or m.group(2).lower().rstrip("s") in _JOBS):
        facts = [Fact(sentence(f"{subj.name} is {m.group(1)}"), key=f"{subj.key}.job")]
        if m.group(4):
            facts.append(Fact(sentence(f"{subj.name} works {m.group(3).lower()} {m.group(4)}"), key=f"{subj.key}.employer"))
        return facts
    if subj is not USER and (m := re.match(r"^(?:called|named)\s+(.+)$", pred, re.I)) and (name := _name(m.group(1))):
        return [Fact(f"{subj.name} is called {name}.", key=f"{subj.key}.name")]
    return []


# -- "I live in …" / "my sister works at …" -------------------------------------------------------
_PREFER = re.compile(
    r"^(?:(?:really|strongly|much|definitely|usually|generally|always|also|absolutely|totally|honestly)\s+)*"
    r"(prefers?|likes?|loves?|enjoys?|adores?|hates?|dislikes?|detests?|loathes?|can'?t stand|cannot stand|"
    r"don'?t like|do not like|doesn'?t like|does not like|would rather|'d rather|would prefer|'d prefer)\s+(.+)$",
    re.I,
)
_PREFER_VERB = {
    "can't stand": "can't stand",
    "cant stand": "can't stand",
    "cannot stand": "can't stand",
    "don't like": "dislikes",
    "dont like": "dislikes",
    "do not like": "dislikes",
    "doesn't like": "dislikes",
    "doesnt like": "dislikes",
    "does not like": "dislikes",
    "would rather": "would rather",
    "'d rather": "would rather",
    "would prefer": "would prefer",
    "'d prefer": "would prefer",
}
_AVOID = re.compile(r"^(?:don'?t|do not|doesn'?t|does not|never|can'?t|cannot|no longer)\s+(eat|drink)s?\s+(.+)$", re.I)
_VERB_NEG = re.compile(r"^(?:don'?t|do not|doesn'?t|does not|no longer|never|didn'?t|did not)\s+(.+)$", re.I)
_HAVE = re.compile(
    rf"^(?:have|has|'ve got|have got|has got)\s+((an?|one|two|three|four|five|six|\d|no)\s+"
    rf"(?:(?:[\w-]+\s+){{0,2}}?)?({_REL_RE})s?(?:\s+(?:named|called)\s+(.+))?)$",
    re.I,
)


def _capitalised(value: str) -> bool:
    v = re.sub(r"^the\s+", "", value.strip(), flags=re.I)
    return bool(v) and v[0].isupper()


def _place(value: str) -> bool:
    """A place names a town or country ("Munich", "the Netherlands") or is described ("a small village")."""
    return _capitalised(value) or bool(re.match(r"^(?:an?|the)\s+\w", value, re.I))


def _verb(pred: str, subj: Subject) -> list[Fact]:
    """Facts from ``<subject> <verb …>``."""
    if m := _PREFER.match(pred):
        verb = m.group(1).lower().replace("’", "'")
        verb = _PREFER_VERB.get(verb, verb if verb.endswith("s") else verb + "s")
        return [f for f in [_pref_fact(subj, verb, m.group(2))] if f]
    if m := _AVOID.match(pred):
        does = "doesn't" if m.group(0).lower().startswith(("do", "nev", "no")) else "can't"
        return [
            Fact(sentence(f"{subj.name} {does} {m.group(1).lower()} {item}"), key=f"{subj.key}.diet.avoid.{slug(item)}")
            for item in _items(m.group(2))
            if slug(item)
        ]
    neg_m = _VERB_NEG.match(pred)
    no_longer = bool(neg_m and neg_m.group(0).lower().startswith("no longer")) or bool(re.search(r"\b(?:anymore|any more)$", pred, re.I))
    if neg_m and not no_longer:
        return []  # "I don't live in Paris": nothing to keep
    pred = _ADVERBS.sub("", neg_m.group(1) if neg_m else pred)
    pred = re.sub(r"\s*\b(?:anymore|any more)$", "", trim_value(pred), flags=re.I)
    if (m := re.match(r"^(?:lives?|((?:have|has|'ve)\s+(?:been\s+living|lived)))\s+in\s+(.+)$", pred, re.I)) and _place(m.group(2)):
        verb = "no longer lives" if no_longer else "has lived" if m.group(1) else "lives"
        return [Fact(sentence(f"{subj.name} {verb} in {m.group(2)}"), key=f"{subj.key}.home")]
    if m := re.match(r"^works?\s+(at|for)\s+(.+)$|^(?:work|works)\s+as\s+(.+)$", pred, re.I):
        if m.group(3):
            return [] if no_longer else [Fact(sentence(f"{subj.name} works as {m.group(3)}"), key=f"{subj.key}.job")]
        if m.group(2).lower() in ("myself", "herself", "himself", "a living", "free"):
            return []
        verb = "no longer works" if no_longer else "works"
        return [Fact(sentence(f"{subj.name} {verb} {m.group(1).lower()} {m.group(2)}"), key=f"{subj.key}.employer")]
    if no_longer:
        return []
    if (
        m := re.match(r"^(?:moved|relocated|(?:have|has|'ve)\s+(?:moved|relocated))\s+(?:back\s+)?to\s+(.+)$", pred, re.I)
    ) and _capitalised(m.group(1)):
        return [Fact(sentence(f"{subj.name} moved to {m.group(1)}"), key=f"{subj.key}.home")]
    if m := re.match(
        r"^(?:started|began|(?:have|has|'ve)\s+started)\s+((?:a\s+new\s+job\s+|a\s+job\s+|working\s+|work\s+)?)"
        r"(at|with|for)\s+(.+)$",
        pred,
        re.I,
    ):
        return [Fact(sentence(f"{subj.name} started {m.group(1)}{m.group(2).lower()} {m.group(3)}"), key=f"{subj.key}.employer")]
    if (
        m := re.match(r"^(joined|got\s+hired\s+(?:at|by)|was\s+hired\s+by|got\s+(?:a\s+)?(?:new\s+)?job\s+(?:at|with))\s+(.+)$", pred, re.I)
    ) and _capitalised(m.group(2)):
        return [Fact(sentence(f"{subj.name} {m.group(1).lower()} {m.group(2)}"), key=f"{subj.key}.employer")]
    if (m := re.match(r"^(?:quit|left)\s+(my\s+job\s+(?:at|with)\s+)?(.+)$", pred, re.I)) and (m.group(1) or _capitalised(m.group(2))):
        return [Fact(sentence(f"{subj.name} no longer works at {m.group(2)}"), key=f"{subj.key}.employer")]
    if m := _HAVE.match(pred):
        count, noun = _NUMBERS.get(m.group(2).lower(), m.group(2)), m.group(3).lower()
        base = re.sub(r"^(?:little|older|younger|big|baby|eldest|oldest|youngest|twin|step|other|new)\s+", "", noun)
        group = "pet" if base.rstrip("s") in _PETS or base in _PETS else "family"
        names = [n for n in (_name(x) for x in _items(m.group(4) or "")) if n]
        key = f"{subj.key}.{group}.{slug(noun)}" + (f".{slug(names[0])}" if len(names) == 1 and count == 1 else "")
        return [Fact(sentence(f"{subj.name} has {third_person(trim_value(m.group(1)))}"), key=key)]
    if m := re.match(r"^(?:speaks?|(?:am|'m)\s+fluent\s+in)\s+(.+?)(?:\s+(?:fluently|well|natively))?$", pred, re.I):
        return [
            Fact(sentence(f"{subj.name} speaks {item}"), key=f"{subj.key}.language.{slug(item)}")
            for item in _items(m.group(1))
            if _capitalised(item)
        ]
    if m := re.match(r"^was\s+born\s+(on|in)\s+(.+)$", pred, re.I):
        dated = re.search(r"\d|\b(?:" + "|".join(_MONTHS) + r")\b", m.group(2), re.I)
        return [
            Fact(
                sentence(f"{subj.name} was born {m.group(1).lower()} {m.group(2)}"),
                key=f"{subj.key}.{'birthday' if dated else 'birthplace'}",
            )
        ]
    if m := re.match(r"^turned\s+(\d{1,3})\b(.*)$", pred, re.I):
        return [Fact(sentence(f"{subj.name} turned {m.group(1)}{m.group(2)}"), key=f"{subj.key}.age")]
    if m := re.match(r"^got\s+(married|engaged|divorced)\b(.*)$", pred, re.I):
        return [Fact(sentence(f"{subj.name} got {m.group(1).lower()}{m.group(2)}"), key=f"{subj.key}.relationship")]
    return []


_I_BE = re.compile(r"^i(?:'m|\s+am)\s+(.+)$", re.I)
_I_VERB = re.compile(r"^i\s+(.+)$|^i('(?:ve|d)\s+.+)$", re.I)
_REL_BE = re.compile(rf"^my\s+({_REL_RE})(?:'s|\s+is|\s+are)\s+(.+)$", re.I)
_REL_VERB = re.compile(rf"^my\s+({_REL_RE})\s+(.+)$", re.I)


_PLURAL_VERB = {"is": "are", "has": "have", "was": "were", "doesn't": "don't", "can't": "can't"}


def _plural(facts: list[Fact], subj: Subject) -> list[Fact]:
    """``User's parents lives`` → ``User's parents live``."""

    def fix(m: re.Match[str]) -> str:
        verb = m.group(1)
        return _PLURAL_VERB.get(verb, verb[:-1] if verb.endswith("s") and not verb.endswith("ss") else verb)

    pattern = re.compile(re.escape(subj.name) + r" (?=(\S+))\S+")
    return [Fact(pattern.sub(lambda m: f"{subj.name} {fix(m)}", f.content, count=1), f.kind, f.key, f.tags, f.personal) for f in facts]


def _relation(word: str) -> Subject:
    return Subject(f"User's {word.lower()}", f"user.{slug(word)}")


def clause_facts(clause: str) -> list[Fact]:
    """The personal facts of one clause about the user or their household (``[]`` if it matches no rule)."""
    if m := _I_BE.match(clause):
        return _be(m.group(1), USER) or _verb("am " + m.group(1), USER)
    if m := _I_VERB.match(clause):
        return _verb(m.group(1) or m.group(2), USER)
    m = _REL_BE.match(clause) or _REL_VERB.match(clause)
    if not m:
        return []
    subj = _relation(m.group(1))
    facts = _be(m.group(2), subj) if m.re is _REL_BE else _verb(m.group(2), subj)
    plural = m.group(1).lower().split()[-1] in ("parents", "kids", "children", "twins", "siblings")
    return _plural(facts, subj) if plural else facts


# -- "my X is Y" -----------------------------------------------------------------------------------
_MY_FACT = re.compile(r"^my\s+([\w' -]{1,60}?)\s+(is|are)\s+(.+)$", re.I)


def my_fact(subject: str, verb: str, value: str, *, mine: bool = True) -> Fact | None:
    """``User's <subject> <verb> <value>`` keyed ``user.<subject>`` (``my son's school`` → ``user.son.school``)."""
    subject, value = " ".join(subject.split()), trim_value(value)
    if not value or value.endswith("?") or subject.lower().split()[-1] in _TRANSIENT_SUBJECTS:
        return None
    words = re.findall(r"[a-z-]+", subject.lower().replace("'s", " "))
    if mine and any(w in _OTHERS or (w.endswith("s") and w[:-1] in _OTHERS) for w in words):
        return None  # "my colleague is allergic to nuts" is about someone else
    if mine and _TRANSIENT_VALUES.match(value):
        return None  # "my train is late": a passing state, not a fact to keep
    key = ".".join(slug(part) for part in re.split(r"'s\s+|s'\s+", subject) if slug(part))
    if mine:
        return Fact(sentence(f"User's {subject} {verb.lower()} {third_person(value)}"), key=f"user.{key}" if key else None)
    return Fact(sentence(f"The {subject} {verb.lower()} {third_person(value)}"), key=key or None, personal=False)


def generic_my_fact(clause: str) -> tuple[Fact | None, str | None]:
    """The fallback ``my X is Y`` rule: the fact and the subject it makes current (for "no, it's …")."""
    m = _MY_FACT.match(clause)
    if not m:
        return None, None
    fact = my_fact(m.group(1), m.group(2), m.group(3))
    if fact is not None and re.fullmatch(_REL_RE, m.group(1), re.I):
        fact = Fact(fact.content)  # "my sister is pregnant": about a person, but no attribute of theirs to key
    return fact, m.group(1)
