"""A tiny synthetic English->German corpus for tests and the tiny experiment.

The "translation" maps each word through a fixed dictionary and moves the verb to the
end, so a model can learn it in a few hundred steps. Files are plain UTF-8 text; the
generator is deterministic, so tests/tiny.yaml pins their sha256.

    python tests/tinydata.py [FOLDER]    # default: data/tiny-source
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

LEXICON = {
    "a": "ein",
    "the": "der",
    "man": "mann",
    "woman": "frau",
    "dog": "hund",
    "child": "kind",
    "red": "rot",
    "big": "gross",
    "small": "klein",
    "happy": "froh",
    "old": "alt",
    "ball": "ball",
    "street": "strasse",
    "park": "park",
    "water": "wasser",
    "house": "haus",
    "in": "im",
    "near": "bei",
    "with": "mit",
    "and": "und",
}
VERBS = {"runs": "rennt", "sees": "sieht", "holds": "haelt", "plays": "spielt", "sits": "sitzt"}
SUBJECTS = ["man", "woman", "dog", "child"]
OBJECTS = ["ball", "street", "park", "water", "house", "dog"]
ADJECTIVES = ["red", "big", "small", "happy", "old"]
PREPOSITIONS = ["in", "near", "with"]

SPLITS = {"train": 400, "valid": 40, "test_a": 30, "test_b": 20}


def noun_phrase(rng: random.Random, nouns: list[str]) -> list[str]:
    words = [rng.choice(["a", "the"])]
    if rng.random() < 0.5:
        words.append(rng.choice(ADJECTIVES))
    return words + [rng.choice(nouns)]


def sentence(rng: random.Random) -> tuple[str, str]:
    """An English sentence and its German-like translation (verb moved to the end)."""
    subject, verb = noun_phrase(rng, SUBJECTS), rng.choice(list(VERBS))
    rest: list[str] = []
    for _ in range(rng.randint(0, 2)):
        rest += [rng.choice(PREPOSITIONS)] + noun_phrase(rng, OBJECTS)
    src = subject + [verb] + rest
    tgt = [LEXICON[w] for w in subject + rest] + [VERBS[verb]]
    return " ".join(src).capitalize() + " .", " ".join(tgt).capitalize() + " ."


def write_corpus(folder: str | Path, seed: int = 0) -> Path:
    """Write <split>.en / <split>.de for every split into `folder`; return it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for split, n in SPLITS.items():
        pairs = [sentence(rng) for _ in range(n)]
        if split == "test_a":
            pairs[5] = ("", "")  # an empty test line must survive as an empty output line
        for side, lang in enumerate(("en", "de")):
            text = "".join(pair[side] + "\n" for pair in pairs)
            (folder / f"{split}.{lang}").write_bytes(text.encode("utf-8"))
    return folder


if __name__ == "__main__":
    print(write_corpus(sys.argv[1] if len(sys.argv) > 1 else "data/tiny-source"))
