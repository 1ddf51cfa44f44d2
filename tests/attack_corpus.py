"""The red-team corpus, read from tests/data/attacks/: one hostile candidate per file, never imported, and
``manifest.yaml`` saying for each its name, class, problem and the verdict it must get.

Programs name the planted secrets and listeners (tests/test_redteam.py's ``planted`` fixture) through
``__PLANTED_<NAME>__`` placeholders, filled in by :meth:`Attack.program`. A line ``__SHARED_<NAME>__`` stands for
the text of ``_shared/<name>.txt`` (helpers many programs carry whole, such as the raw-frame writer), put in when
the corpus is read: each program is still one self-contained candidate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

CORPUS = Path(__file__).resolve().parent / "data" / "attacks"
CROSS_SAMPLE = "cross_sample"  # the class run back to back on one worker, in the manifest's order
PLACEHOLDER = re.compile(r"__PLANTED_([A-Z_]+?)__")
SHARED = re.compile(r"^__SHARED_([A-Z_]+)__\n", re.MULTILINE)


def planted_values(p: dict) -> dict[str, str]:
    """Each placeholder's text for the planted paths ``p``."""
    return {
        "ENV_FILES": repr([str(d / ".env") for d in p["secret_dirs"]]),
        "WRITE_TARGETS": repr([str(d / "pwned.txt") for d in p["secret_dirs"]] + [
            "/pwned.txt", "/evalsuite-sandbox/pwned.txt", "/root/pwned.txt", "/dev/pwned", "/proc/pwned"]),
        "UNIX_PATHS": repr(p["unix_paths"]),
        "ABSTRACT": repr(p["abstract"]),
        "FIFO": repr(p["fifo"]),
        "PORT": str(p["port"]),
    }


@dataclass(frozen=True)
class Attack:
    name: str
    attack_class: str
    problem: str  # a key of redteam_kit.PROBLEMS
    source: str  # the program, placeholders unfilled
    verdict: str  # "fail": must not pass; "pass": a set-up step that must pass; "any": a writer
    flag: str | None = None  # a flag its outcome must carry
    reasons: tuple[str, ...] = ()  # its outcome's reason is one of these (any, when empty)
    note: str = ""

    def program(self, p: dict | None = None) -> str:
        """The candidate, with the planted paths ``p`` filled in (``p`` is needed only by programs that name them)."""
        names = set(PLACEHOLDER.findall(self.source))
        if not names:
            return self.source
        if p is None:
            raise ValueError(f"{self.name} names planted paths: pass them")
        values = planted_values(p)
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], self.source)


@cache
def corpus() -> tuple[Attack, ...]:
    """Every attack in the manifest's order; one that repeats comes as ``<name>_0``, ``<name>_1``..."""
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
    attacks, files = [], set()
    for entry in manifest["attacks"]:
        assert entry["class"] in manifest["classes"], entry
        path = CORPUS / entry.get("file", f"{entry['class']}/{entry['name']}.py")
        files.add(path)
        fields = dict(attack_class=entry["class"], problem=entry["problem"], verdict=entry["verdict"],
                      source=_with_shared(path.read_text(encoding="utf-8")), flag=entry.get("flag"),
                      reasons=tuple(entry.get("reasons", ())), note=entry.get("note", ""))
        repeat = entry.get("repeat")
        names = [entry["name"]] if repeat is None else [f"{entry['name']}_{n}" for n in range(repeat)]
        attacks += [Attack(name=name, **fields) for name in names]
    unlisted = sorted(str(path.relative_to(CORPUS)) for path in set(CORPUS.rglob("*.py")) - files)
    assert not unlisted, f"attack files the manifest does not name: {unlisted}"
    names = [attack.name for attack in attacks]
    assert len(names) == len(set(names)), "two attacks of one name"
    return tuple(attacks)


def _with_shared(text: str) -> str:
    return SHARED.sub(lambda m: (CORPUS / "_shared" / f"{m.group(1).lower()}.txt").read_text(encoding="utf-8"), text)


def by_name() -> dict[str, Attack]:
    return {attack.name: attack for attack in corpus()}


def all_attacks(p: dict) -> dict[str, dict[str, str]]:
    """class -> {name: candidate} for every class but the cross-sample one, run side by side."""
    found: dict[str, dict[str, str]] = {}
    for attack in corpus():
        if attack.attack_class != CROSS_SAMPLE:
            found.setdefault(attack.attack_class, {})[attack.name] = attack.program(p)
    return found


def cross_sample() -> list[tuple[str, str, str]]:
    """(name, problem, candidate) in order, all on one worker. Readers pass only if state survived."""
    return [(a.name, a.problem, a.program()) for a in corpus() if a.attack_class == CROSS_SAMPLE]
