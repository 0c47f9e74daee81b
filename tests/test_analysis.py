import json
import math

import numpy as np
import pytest
import torch

from conftest import TINY_MODELS, VARIANTS, tiny_model
from mixnmt import MixnmtError, checkpoint, tokenize
from mixnmt.alignment import parse
from mixnmt.analysis import align, analyse
from mixnmt.batching import read_ids
from mixnmt.files import read_lines
from mixnmt.models import REGISTRY, architecture
from mixnmt.usage import ComponentUsage


@pytest.fixture(scope="module")
def test_set(tiny_source, tiny_spm, tmp_path_factory):
    """Source ids of a tiny test set and a 'translation' of it (its references)."""
    folder = tmp_path_factory.mktemp("analysis")
    tokenize.encode_file(tiny_spm, tiny_source / "test_a.en", folder / "test.ids")
    (folder / "test.en").write_bytes((tiny_source / "test_a.en").read_bytes())  # beside the ids
    return folder / "test.ids", tiny_source / "test_a.de"


def saved(name, tiny_spm, folder):
    tok = tokenize.Tokenizer(tiny_spm)
    arch, hparams, model = tiny_model(name, len(tok))
    record = checkpoint.vocab_record(tok)
    path = folder / f"{name}.pt"
    checkpoint.save(path, name, arch, hparams, model, {"src": record, "tgt": record, "shared": True})
    return path


def weights_on(axis: str) -> list[str]:
    """The tiny models with analysis weights over `axis` (their last axis)."""
    return [
        n
        for n, e in TINY_MODELS.items()
        if any(a[-1] == axis for a in REGISTRY[architecture(n, e)].analysis_axes.values())
    ]


@pytest.mark.parametrize("name", TINY_MODELS)
def test_analysis_labels_every_weight_and_summarises_components(name, tiny_spm, test_set, tmp_path):
    source_ids, translation = test_set
    out = tmp_path / "analysis.json"
    path = saved(name, tiny_spm, tmp_path)
    references = translation  # the references stand in for a translation
    loaded = checkpoint.load_for_inference(path, (tiny_spm, tiny_spm), name, TINY_MODELS[name])
    analyse(loaded, source_ids, translation, references, [0, 3], out)
    result = json.loads(out.read_text())
    assert result["model"] == name and [s["index"] for s in result["sentences"]] == [0, 3]
    tok = tokenize.Tokenizer(tiny_spm)
    for sentence in result["sentences"]:
        text = sentence["text"]
        assert text["reference"] == text["translation"] == read_lines(references)[sentence["index"]]
        assert text["source"] == tok.decode([read_ids(source_ids, len(tok))[sentence["index"]]])[0]
        assert sentence["source"][-1] == "</s>" and sentence["target"][-1] == "</s>"
        for weight, axes in result["axes"].items():
            shape = np.asarray(sentence["weights"][weight]).shape
            lengths = {"source": len(sentence["source"]), "target": len(sentence["target"])}
            assert [shape[axes.index(a)] for a in lengths if a in axes] == [
                lengths[a] for a in lengths if a in axes
            ]
    assert "reference" not in result  # every run's alignments are `align`'s
    aligned = align(loaded, source_ids, references, tmp_path / "aligned.json")
    assert json.loads((tmp_path / "aligned.json").read_text()) == aligned
    assert aligned["model"] == name and aligned["run"] == loaded.run
    check_reference_alignments(result, aligned, tiny_spm, source_ids, references)
    mixtures = {w for w, axes in result["axes"].items() if axes[-1] == "component"}
    assert set(result["components"]) == mixtures  # every mixture summarised
    if not mixtures:
        return
    steps = {"source": 0, "target": 0}
    refs = read_lines(translation)
    ids = read_lines(source_ids)
    for i, line in enumerate(ids):
        if line:  # empty sources are never translated
            steps["source"] += len(line.split()) + 1
            steps["target"] += len(tokenize.Tokenizer(tiny_spm).encode([refs[i]])[0]) + 1
    for weight, stats in result["components"].items():
        k = TINY_MODELS[name]["components"] + 1
        assert len(stats["usage"]) == k and sum(stats["usage"]) == pytest.approx(1, abs=1e-3)
        assert 0 < stats["entropy"] <= math.log(k)
        split = stats["stay"] + stats["learned"] + stats["source"]
        assert split == pytest.approx(1, abs=1e-3) and 0 <= stats["mi"] <= math.log(k)
        heads = TINY_MODELS[name]["heads"]
        assert all(len(values) == heads for values in stats["heads"].values())
        assert all(1 <= n <= k for n in stats["heads"]["leading"])
        assert stats["steps"] == steps[result["axes"][weight][0]] == sum(stats["led"].values())
        assert all(
            len(tokens) <= 8 and tokens[0][1] >= tokens[-1][1] for tokens in stats["top_tokens"].values()
        )


def check_reference_alignments(result: dict, reference: dict, tiny_spm, source_ids, references) -> None:
    """Of a run's `align` file (`reference`), against its analysis (`result`): word counts
    are the raw text's; every weight over source positions (a Transformer's per head and
    averaged) links words within them, no more links than target subwords; a prior and a
    posterior have entropies within [0, log S] and KL(posterior || prior) >= 0 on every
    target token (EOS included)."""
    ids = read_lines(source_ids)
    raw = zip(read_lines(source_ids.parent / "test.en"), read_lines(references))
    tok = tokenize.Tokenizer(tiny_spm)
    counts = [[len(s.split()), len(r.split())] if i else [0, 0] for i, (s, r) in zip(ids, raw)]
    assert reference["words"] == counts
    expected = set()
    for weight, axes in result["axes"].items():
        if axes == ["target", "source"]:
            expected.add(weight)
        elif axes == ["layer", "head", "target", "source"]:
            layers, heads = np.asarray(result["sentences"][0]["weights"][weight]).shape[:2]
            expected |= {f"{weight} mean"} | {
                f"{weight} layer {a + 1} head {b + 1}" for a, b in np.ndindex(layers, heads)
            }
    assert set(reference["links"]) == expected
    subwords = [len(tok.encode([r])[0]) if i else 0 for i, r in zip(ids, read_lines(references))]
    for links in reference["links"].values():
        for line, (n_src, n_tgt), n in zip(links, counts, subwords, strict=True):
            pairs = parse(line)
            assert all(0 <= i < n_src and 0 <= j < n_tgt for i, j in pairs) and len(pairs) <= n
    if {"prior", "posterior"} <= result["axes"].keys():
        tokens = reference["tokens"]
        assert all(len(v) == sum(n + 1 for n, i in zip(subwords, ids) if i) for v in tokens.values())
        longest = math.log(max(len(i.split()) + 1 for i in ids))
        assert all(0 <= h <= longest + 1e-3 for h in tokens["prior_entropy"] + tokens["posterior_entropy"])
        assert min(tokens["kl"]) >= -1e-4 and max(tokens["kl"]) > 0
    else:
        assert "tokens" not in reference


def test_a_latent_model_with_learned_candidates_reports_its_posterior_but_aligns_nothing(
    tiny_spm, test_set, tmp_path
):
    """Its weights lie over candidates (source positions, then learned vectors), not over
    source positions alone: no word alignments, but the posterior's statistics."""
    source_ids, translation = test_set
    name = next(n for n in VARIANTS if "candidates=both" in n)
    loaded = checkpoint.load_for_inference(
        saved(name, tiny_spm, tmp_path), (tiny_spm, tiny_spm), name, VARIANTS[name]
    )
    result = analyse(loaded, source_ids, translation, translation, [0], tmp_path / "a.json")
    assert result["axes"] == {"prior": ["target", "candidate"], "posterior": ["target", "candidate"]}
    reference, k = align(loaded, source_ids, translation, tmp_path / "b.json"), VARIANTS[name]["components"]
    assert reference["links"] == {} and min(reference["tokens"]["kl"]) >= -1e-4
    longest = math.log(max(len(line.split()) + 1 for line in read_lines(source_ids)) + k)
    assert max(reference["tokens"]["prior_entropy"]) <= longest + 1e-3


def test_analysis_refuses_a_sentence_not_in_the_test_set(tiny_spm, test_set, tmp_path):
    source_ids, translation = test_set
    name = weights_on("source")[0]
    loaded = checkpoint.load_for_inference(saved(name, tiny_spm, tmp_path), (tiny_spm, tiny_spm), name)
    for index in (5, 99):  # test_a's line 5 is empty
        with pytest.raises(MixnmtError, match=f"analysis.sentences: {index} is not a non-empty sentence"):
            analyse(loaded, source_ids, translation, translation, [index], tmp_path / "a.json")
    assert not (tmp_path / "a.json").exists()


def test_align_refuses_references_of_another_length_and_writes_nothing(tiny_spm, test_set, tmp_path):
    source_ids, translation = test_set
    name = weights_on("source")[0]
    loaded = checkpoint.load_for_inference(saved(name, tiny_spm, tmp_path), (tiny_spm, tiny_spm), name)
    short = tmp_path / "short.de"
    short.write_text("\n".join(read_lines(translation)[:-1]) + "\n")
    n = len(read_lines(source_ids))
    with pytest.raises(MixnmtError, match=f"^{short} has {n - 1} lines but {source_ids} has {n}$"):
        align(loaded, source_ids, short, tmp_path / "aligned.json")
    assert not (tmp_path / "aligned.json").exists()


def hand_set(choice: torch.Tensor, candidates: int) -> torch.Tensor:
    """Responsibilities (1, steps, heads, candidates) that put all mass on choice[t, h]."""
    return torch.nn.functional.one_hot(choice, candidates).float()[None]


def test_heads_that_each_sit_on_one_fixed_candidate_do_not_mix():
    """Mass spread over candidates by heads, one fixed candidate per head: a constant
    bias, with no information about the step."""
    k, heads, steps = 8, 4, 50
    usage = ComponentUsage(learned=k - 1)
    usage.add(hand_set(torch.arange(heads).repeat(steps, 1), k), torch.full((1, steps), 5))
    stats = usage.heads()
    assert stats["mi"].tolist() == pytest.approx([0] * heads, abs=1e-5)
    assert stats["entropy"].tolist() == pytest.approx([0] * heads, abs=1e-5)
    assert stats["leading"].tolist() == [1] * heads
    assert usage.split()["mi"] == pytest.approx(0, abs=1e-5)


def test_heads_that_pick_by_input_carry_log_k_nats_about_the_step():
    k, heads, steps = 8, 4, 8 * 50
    tokens = torch.arange(steps) % k + 4  # the input decides the candidate
    choice = (tokens[:, None] + torch.arange(heads)) % k  # (steps, heads)
    usage = ComponentUsage(learned=k - 1)
    usage.add(hand_set(choice, k), tokens[None])
    stats = usage.heads()
    assert stats["mi"].tolist() == pytest.approx([math.log(k)] * heads, rel=1e-4)
    assert stats["entropy"].tolist() == pytest.approx([0] * heads, abs=1e-5)
    assert stats["leading"].tolist() == [k] * heads


def test_source_positions_are_one_candidate_whose_spread_is_measured_apart():
    """A head reading the source uniformly over 4 positions: one candidate for mixing,
    log 4 nats over positions."""
    learned, positions, steps = 2, 4, 10
    pi = torch.zeros(1, steps, 1, 1 + learned + positions)
    pi[..., 1 + learned :] = 1 / positions
    usage = ComponentUsage(learned=learned)
    usage.add(pi, torch.full((1, steps), 5))
    stats = usage.heads()
    assert usage.usage().tolist() == pytest.approx([0, 0, 0, 1])
    assert stats["mi"].item() == pytest.approx(0, abs=1e-6) and stats["entropy"].item() == pytest.approx(0)
    assert stats["source_entropy"].item() == pytest.approx(math.log(positions), rel=1e-5)
