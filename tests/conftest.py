"""Shared fixtures: the tiny synthetic corpus, a SentencePiece model trained on it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import tinydata  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def tiny_source(tmp_path_factory) -> Path:
    """The tiny corpus as a mirror folder: <split>.en / <split>.de."""
    return tinydata.write_corpus(tmp_path_factory.mktemp("tiny-source"))


@pytest.fixture(scope="session")
def tiny_spm(tiny_source, tmp_path_factory) -> Path:
    """A joint SentencePiece model of the tiny training text."""
    from mixnmt import tokenize

    model = tmp_path_factory.mktemp("spm") / "joint.model"
    tokenize.train([tiny_source / "train.en", tiny_source / "train.de"], model, vocab_size=64)
    return model
