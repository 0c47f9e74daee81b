import itertools
import math
import re

import pytest
import torch

from conftest import FAST, TINY_MODELS, VARIANTS, decode_config, tiny_model
from mixnmt import MixnmtError, checkpoint
from mixnmt.batching import pad
from mixnmt.decode import beam_search, greedy, next_logprobs, translate, translate_ids
from mixnmt.files import read_lines
from mixnmt.tokenize import BOS, EOS, UNK, Tokenizer


def model_for(name, vocab, seed=0):
    return tiny_model(name, vocab, seed, dropout=0.0)[2]


def sources(vocab, n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randint(4, vocab, (int(torch.randint(1, 10, (1,), generator=g)),), generator=g).tolist()
        for _ in range(n)
    ]


@pytest.mark.parametrize("name", VARIANTS)
def test_beam_of_one_is_greedy(name):
    model = model_for(name, 30)
    src = pad([s + [EOS] for s in sources(30)])
    config = decode_config(beam=1)
    assert beam_search(model, src, config) == greedy(model, src, config)


@pytest.mark.parametrize("name", VARIANTS)
def test_static_state_passes_through_steps_and_beams_need_not_reorder_it(name, monkeypatch):
    model = model_for(name, 30)
    if not model.static_state:
        pytest.skip(f"{name} declares no static decoder state")
    src = pad([s + [EOS] for s in sources(30)])
    state = model.encode(src)
    _, new = model.step(state, torch.full((src.size(0),), BOS))
    assert all(new[key] is state[key] for key in model.static_state)
    config = decode_config(beam=4)
    fast = beam_search(model, src, config)
    # reorder every entry, as a model without the declaration
    monkeypatch.setattr(type(model), "static_state", property(lambda self: frozenset()))
    assert beam_search(model, src, config) == fast


def sequence_logprob(model, src, tokens, limit):
    """Log-probability of `tokens` + EOS under the search's own next-token rule."""
    state, y, total = model.encode(src), torch.tensor([BOS]), 0.0
    for t, tok in enumerate(tokens + [EOS]):
        logits, state = model.step(state, y)
        total += float(next_logprobs(logits, torch.tensor([t + 1 >= limit]))[0, tok])
        y = torch.tensor([tok])
    return total


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_wide_beam_finds_the_exact_best_hypothesis(length_penalty):
    """With a beam as wide as the hypothesis space, search is exhaustive."""
    vocab, limit = 6, 4  # outputs: UNK, 4, 5 then EOS; at most 3 tokens before EOS
    model = model_for(FAST, vocab, seed=3)
    src = torch.tensor([[4, 5, 4, EOS]])
    config = decode_config(beam=40, length_penalty=length_penalty, max_len_a=0.0, max_len_b=limit)
    candidates = [list(c) for n in range(limit) for c in itertools.product([UNK, 4, 5], repeat=n)]
    with torch.no_grad():
        scored = {
            tuple(c): sequence_logprob(model, src, c, limit) / (len(c) + 1) ** length_penalty
            for c in candidates
        }
    best = max(scored, key=scored.get)
    assert beam_search(model, src, config) == [list(best)]


@pytest.mark.parametrize("beam", [1, 4])
def test_translate_ids_keeps_order_empty_lines_and_batch_independence(beam):
    model = model_for(FAST, 30)
    srcs = sources(30, n=9)
    srcs[3] = []
    config = decode_config(beam=beam, batch_size=4, max_len_b=5)
    batched = translate_ids(model, srcs, config, torch.device("cpu"))
    alone = [translate_ids(model, [s], config, torch.device("cpu"))[0] for s in srcs]
    assert batched == alone
    assert batched[3] == []
    limits = [math.floor(config.max_len_a * (len(s) + 1)) + config.max_len_b for s in srcs]
    assert all(len(h) < lim for h, lim in zip(batched, limits))


@pytest.fixture
def random_checkpoint(tiny_spm, tmp_path):
    tok = Tokenizer(tiny_spm)
    model = model_for(FAST, len(tok))
    record = checkpoint.vocab_record(tok)
    path = tmp_path / "model.pt"
    arch, hparams, model = tiny_model(FAST, len(tok), dropout=0.0)
    checkpoint.save(path, FAST, arch, hparams, model, {"src": record, "tgt": record, "shared": True})
    return path


def test_translate_writes_one_line_per_source_line(random_checkpoint, tiny_spm, tmp_path):
    ids = tmp_path / "test.ids"
    ids.write_text("10 11 12\n\n13\n\n14 15\n\n")
    out = tmp_path / "out" / "test.txt"
    translate(random_checkpoint, ids, (tiny_spm, tiny_spm), out, decode_config(beam=2, max_len_b=4))
    lines = read_lines(out)
    assert len(lines) == 6
    assert {1, 3, 5} <= {i for i, line in enumerate(lines) if not line}


OTHER = next(name for name in TINY_MODELS if name != FAST)
D_MODEL = TINY_MODELS[FAST]["d_model"]


@pytest.mark.parametrize(
    ("model", "hparams", "message"),
    [
        (OTHER, {}, f"holds model {FAST!r}, not {OTHER!r}"),
        (FAST, {"arch": OTHER}, f"a {FAST!r} model, but models.{FAST}.arch is {OTHER!r}"),
        (
            FAST,
            {"d_model": 2 * D_MODEL},
            f"trained with models.{FAST}.d_model={D_MODEL}, but the config says {2 * D_MODEL}",
        ),
        (FAST, {"dropout": 0.3}, f"trained with models.{FAST}.dropout=0.0, but the config says 0.3"),
    ],
)
def test_checkpoint_not_matching_the_config_is_refused(
    random_checkpoint, tiny_spm, tmp_path, model, hparams, message
):
    ids = tmp_path / "test.ids"
    ids.write_text("10 11 12\n")
    out = tmp_path / "out" / "test.txt"
    config = {**TINY_MODELS[FAST], "dropout": 0.0, **hparams}  # the checkpoint's, but for `hparams`
    if "arch" in hparams:
        config = {"arch": hparams["arch"], **TINY_MODELS[hparams["arch"]]}
    with pytest.raises(MixnmtError, match=re.escape(message)):
        translate(random_checkpoint, ids, (tiny_spm, tiny_spm), out, decode_config(), model, config)
    assert not out.exists()


def test_checkpoint_with_another_vocabulary_is_refused(random_checkpoint, tiny_source, tmp_path):
    from mixnmt import tokenize

    other = tmp_path / "other.model"
    tokenize.train([tiny_source / "train.en"], other, vocab_size=40)
    tok = Tokenizer(other)
    with pytest.raises(MixnmtError, match="trained with a different src vocabulary"):
        checkpoint.load_model(random_checkpoint, tok, tok)
