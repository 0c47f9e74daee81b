"""`latent`, the mixture of output distributions over source positions: its likelihood is
the exact marginal (checked against explicit loops), whatever chunks it is computed in,
and an exhaustive beam finds its best output."""

import itertools

import pytest
import torch

from conftest import VARIANTS, decode_config, sequence_logprob, tiny_model
from mixnmt.config import load
from mixnmt.decode import beam_search
from mixnmt.device import gpu_shares
from mixnmt.models import REGISTRY, latent, resolve
from mixnmt.readme import differences
from mixnmt.symbols import BOS, EOS, PAD, UNK

ARCH = next(arch for arch, cls in REGISTRY.items() if cls is latent.Latent)
LATENT = [name for name, entry in VARIANTS.items() if resolve(name, entry)[0] == ARCH]
VOCAB = 8  # PAD, UNK, BOS, EOS and four words


def model_for(name, seed=0):
    return tiny_model(name, VOCAB, seed, dropout=0.0)[2]


@torch.no_grad()
def explicit(model, src: list[int], target: list[int]) -> tuple[float, torch.Tensor]:
    """log p(target + EOS | src) = sum_t log sum_j a_tj p(y_t | j), by loops over steps and
    source positions, from the model's layers but none of its mixing code; and the
    posteriors q_tj (T, N) over its N candidates."""
    ids = torch.tensor([src + [EOS]])
    h, forward, backward = model.encoder(model.embed(model.src_embed, ids), ids != PAD)
    summary = torch.cat([forward, backward], -1) if model.candidates == "learned" else backward
    h = model.mixed(h, ids != PAD)[0][0]  # (N, 2H): the candidates (source positions, learned vectors)
    s, c, total, previous = torch.tanh(model.init(summary)), torch.zeros(1, h.size(1)), 0.0, BOS
    posteriors = []
    for y in [*target, EOS]:
        x = model.embed(model.tgt_embed, torch.tensor([previous]))
        s = model.cell(x if model.feed == "none" else torch.cat([x, c], -1), s)
        scores = torch.stack(
            [model.score(torch.tanh(model.query(s) + model.keys(h[j])))[0, 0] for j in range(len(h))]
        )
        prior = scores.softmax(0)
        kept = prior.topk(min(model.top_k, len(h))).indices.tolist() if model.top_k else list(range(len(h)))
        weight = prior[kept] / prior[kept].sum()
        likelihood = []
        for j in kept:  # p(y | j): a softmax over the vocabulary per position
            f = torch.tanh(model.from_state(s) + model.from_source(h[j]) + model.from_word(x))
            likelihood.append((f @ model.tgt_embed.weight.t()).softmax(-1)[0, y])
        joint = weight * torch.stack(likelihood)
        total += float(joint.sum().log())
        posteriors.append(torch.zeros(len(h)).index_put((torch.tensor(kept),), joint / joint.sum()))
        if model.feed == "posterior":
            c = (joint / joint.sum()) @ h[kept]
        elif model.feed == "prior":
            c = prior @ h
        c, previous = c.view(1, -1), y
    return total, torch.stack(posteriors)


@pytest.mark.parametrize("name", LATENT)
@pytest.mark.parametrize("chunk", [latent.CHUNK_ELEMENTS, 1])
def test_the_likelihood_is_the_exact_marginal_over_alignments(name, chunk, monkeypatch):
    """Teacher forcing's log p(y) equals explicit loops over steps and positions, also
    when every source position is its own chunk, and so do the posteriors it reports."""
    monkeypatch.setattr(latent, "CHUNK_ELEMENTS", chunk)
    model = model_for(name)
    g = torch.Generator().manual_seed(1)
    sources = [torch.randint(4, VOCAB, (n,), generator=g).tolist() for n in (5, 2, 4)]
    targets = [torch.randint(4, VOCAB, (n,), generator=g).tolist() for n in (3, 4, 1)]
    src = torch.nn.utils.rnn.pad_sequence([torch.tensor(s + [EOS]) for s in sources], batch_first=True)
    tgt_in = torch.nn.utils.rnn.pad_sequence([torch.tensor([BOS, *t]) for t in targets], batch_first=True)
    tgt_out = torch.nn.utils.rnn.pad_sequence([torch.tensor([*t, EOS]) for t in targets], batch_first=True)
    with torch.no_grad():
        logp = model(src, tgt_in).gather(-1, tgt_out[..., None])[..., 0].masked_fill(tgt_out == PAD, 0).sum(1)
    expected = [explicit(model, s, t) for s, t in zip(sources, targets)]
    assert logp.tolist() == pytest.approx([total for total, _ in expected], abs=1e-4)
    with torch.no_grad():
        posterior = model.analyse(src, tgt_in)["posterior"]  # (B, T, N)
        real = model.encode(src)["mask"]  # (B, N): the candidates that are not padding
    for i, (_, q) in enumerate(expected):
        assert torch.allclose(posterior[i, : q.size(0), real[i]], q, atol=1e-5)


def test_the_cpus_compiled_mixture_gives_the_eager_values_and_gradients():
    """On the CPU the per-position mixture of output distributions runs compiled: its
    values and its gradients are those of the eager code."""
    compiled = latent._compiled_chunk()
    assert compiled is not None  # this machine compiles
    g = torch.Generator().manual_seed(0)
    inputs = [
        torch.randn(3, 4, generator=g).log_softmax(-1),
        torch.randn(3, 4, 6, generator=g),
        torch.randn(9, 6, generator=g),
    ]
    results = []
    for mix in (latent._mixed_chunk, compiled):
        leaves = [x.clone().requires_grad_() for x in inputs]
        part, norm = mix(*leaves)
        (part.exp().sum() + norm.square().sum()).backward()
        results.append([part, norm, *(leaf.grad for leaf in leaves)])
    for eager, ours in zip(*results):
        torch.testing.assert_close(ours, eager)


def test_only_chunks_large_enough_to_repay_compiling_mix_in_compiled_code(monkeypatch):
    """Compiling costs a process seconds: a chunk of COMPILED_ELEMENTS logits or more mixes
    in the compiled code, a smaller one eagerly, with the same values."""
    used = []
    compiled = lambda *args: used.append(args[1].shape) or latent._mixed_chunk(*args)  # noqa: E731
    monkeypatch.setattr(latent, "_compiled_chunk", lambda: compiled)
    monkeypatch.setattr(latent, "COMPILED_ELEMENTS", 2 * 3 * 50)
    embeddings = torch.randn(50, 4)
    for b in (1, 2):
        log_prior, features = torch.randn(b, 3).log_softmax(-1), torch.randn(b, 3, 4)
        mixed, _ = latent.mixture_logprobs(log_prior, features, embeddings)
        torch.testing.assert_close(mixed, latent._mixed_chunk(log_prior, features, embeddings)[0])
    assert used == [(2, 3, 4)]


def test_a_compiled_step_leaves_the_mixing_out_so_a_new_batch_size_compiles_nothing(monkeypatch):
    """train.compile compiles `advance` with dynamic shapes; the mixing's chunks follow the
    batch's shape, and traced into the step they were guarded on, so each batch size
    compiled the step again until Dynamo's limit (the CPU study's latent-prior trained
    compiled at 0.89x eager's tokens/s in speed.py, fp32). Left out, the step's graph serves
    every size."""
    from torch._dynamo.utils import counters

    monkeypatch.setattr(latent, "CHUNK_ELEMENTS", 2 * 3 * 50)  # a chunk of (B, c) = (2, 3)...
    embeddings = torch.randn(50, 4)
    model = model_for(LATENT[0])
    model.compile_steps()
    mixing = model.mixing  # as the compiled step calls it

    @torch.compile(dynamic=True, backend="eager")
    def step(log_prior: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        mixed, _ = mixing(log_prior.log_softmax(-1), torch.tanh(features), embeddings)
        return mixed.exp().sum(-1)

    torch._dynamo.reset()
    counters.clear()
    graphs = []
    for b in (2, 3, 5, 7):  # ... (3, 2), (5, 1), (7, 1): other chunk sizes and counts
        torch.testing.assert_close(step(torch.randn(b, 9), torch.randn(b, 9, 4)), torch.ones(b))
        graphs.append(counters["stats"]["unique_graphs"])
    assert graphs[-1] == graphs[1] > 0  # the first size compiles, dynamic shapes from the second


@pytest.mark.parametrize(  # every variant; both length penalties on the first
    ("name", "length_penalty"), [(LATENT[0], 0.0), *((name, 1.0) for name in LATENT)]
)
def test_a_beam_as_wide_as_the_vocabulary_finds_the_best_two_token_output(name, length_penalty):
    """At most two tokens before EOS (forced at the limit): a beam of the vocabulary's size
    keeps every one-token prefix and the best two-token ones, so it finds the best of the
    31 outputs under the search's own scores."""
    model = model_for(name, seed=2)
    src = torch.tensor([[4, 5, 6, EOS]])
    config = decode_config(beam=VOCAB, length_penalty=length_penalty, max_len_a=0.0, max_len_b=3)
    words = [UNK, *range(4, VOCAB)]
    candidates = [list(c) for n in range(3) for c in itertools.product(words, repeat=n)]
    with torch.no_grad():
        scored = {
            tuple(c): sequence_logprob(model, src, c, 3) / (len(c) + 1) ** length_penalty for c in candidates
        }
    ((found,),) = beam_search(model, src, config)
    assert tuple(found.tokens) == max(scored, key=scored.get)
    assert found.score == pytest.approx(max(scored.values()), abs=1e-5)


@pytest.mark.parametrize("name", LATENT)
def test_the_memory_a_training_batch_holds_is_what_the_gpu_shares_count(name, monkeypatch):
    """Latent.held_bytes, by which a training job takes GPU shares (device.gpu_shares),
    bounds the V-wide tensors its backward pass keeps, within 10%: on the path a GPU runs
    (eagerly; the CPU's compiled mixture keeps tensors of its own choosing)."""
    monkeypatch.setattr(latent, "_compiled_chunk", lambda: None)
    vocab, b, s, t = 600, 4, 10, 12
    _, hparams, model = tiny_model(name, vocab)
    model.train()
    kept = {}

    def pack(x):
        if x.dim() and x.shape[-1] == vocab:  # one count per storage, however many views
            kept[x.untyped_storage().data_ptr()] = x.untyped_storage().nbytes()
        return x

    g = torch.Generator().manual_seed(0)
    src, tgt = torch.randint(4, vocab, (b, s), generator=g), torch.randint(4, vocab, (b, t), generator=g)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        model(src, tgt)
    held = latent.Latent.held_bytes(hparams, b * t, s, vocab)
    assert sum(kept.values()) <= held <= 1.1 * sum(kept.values())


def test_a_latent_training_takes_the_gpu_shares_its_widest_batch_needs(tmp_path):
    """device.gpu_shares: the widest batch of the id files sets a latent model's shares of
    the GPU (Snakemake's gpu_jobs); other models take one; never more than all."""
    config = load()
    entries = {name: resolve(name, entry) for name, entry in config["models"].items()}
    by_candidates = {
        h["candidates"]: n for n, (arch, h) in entries.items() if arch == ARCH and not h["top_k"]
    }
    source, both = by_candidates["source"], by_candidates["both"]
    other = next(name for name, (arch, _) in entries.items() if arch != ARCH)
    ids = [tmp_path / "train.en", tmp_path / "train.de"]
    ids[0].write_text("5 6 7\n" + " ".join(["9"] * 48) + "\n")  # widest: 48 ids, +1 for EOS
    ids[1].write_text("5 6\n8 9\n")
    gib = 2**30
    held = {name: latent.Latent.held_bytes(entries[name][1], 4096, 49, 8000) / gib for name in (source, both)}
    assert 12 < held[source] < 13 and 27 < held[both] < 28  # fp32 logits at a Multi30k width
    assert gpu_shares(config, source, ids, 80 * gib, 4) == 1  # 20 GiB a share
    assert gpu_shares(config, both, ids, 80 * gib, 4) == 2
    assert gpu_shares(config, both, ids, 80 * gib, 8) == 3
    assert gpu_shares(config, both, ids, 16 * gib, 4) == 4  # all, at most
    assert gpu_shares(config, other, ids, 16 * gib, 8) == 1


@pytest.mark.parametrize("candidates", ["source", "learned"])
def test_components_are_unused_exactly_where_the_model_has_no_learned_candidates(candidates):
    """Latent.unused says `components` is inert with the source's candidates alone: there
    two entries that differ only in it build the same weights from one seed, and a
    contrast between them changes nothing (mixnmt.readme.differences); with learned
    candidates it sizes them, and the contrast says so."""
    entries = {f"k{k}": {"arch": ARCH, "candidates": candidates, "components": k} for k in (4, 8)}
    built = {}
    for name, entry in entries.items():
        torch.manual_seed(0)
        built[name] = REGISTRY[ARCH](VOCAB, VOCAB, True, **resolve(name, entry)[1]).state_dict()
    same = built["k4"].keys() == built["k8"].keys() and all(
        torch.equal(built["k4"][key], built["k8"][key]) for key in built["k4"]
    )
    inert = "components" in latent.Latent.unused(resolve("k4", entries["k4"])[1])
    assert same == inert == (candidates == "source")
    assert differences({"models": entries, "train": {}, "decode": {}}, "k4", "k8") == (
        "" if inert else "components 4 → 8"
    )
