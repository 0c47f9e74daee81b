"""Behaviour every registered architecture must show, on its small models of the tiny
experiment (tests/tiny.yaml): a new architecture only needs an entry there."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from conftest import (
    CONFIG,
    OPS_PER_STEP,
    ROOT,
    TINY,
    TINY_MODELS,
    VARIANTS,
    VOCAB,
    batch,
    make,
    recurrent_dtypes,
    with_grus,
)
from mixnmt import MixnmtError
from mixnmt.batching import ParallelData
from mixnmt.models import REGISTRY, build, resolve
from mixnmt.symbols import BOS, PAD


def test_every_architecture_has_a_tiny_model_that_the_tiny_experiment_runs():
    assert {resolve(name, entry)[0] for name, entry in TINY_MODELS.items()} == set(REGISTRY)
    # `only:` keeps config.yaml's variants out; a tiny model missing from it would never run.
    assert sorted(TINY["only"]) == sorted(TINY_MODELS)


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("shared", [True, False])
def test_forward_shape(name, shared):
    src, tgt = batch()
    assert make(name, shared)(src, tgt).shape == (3, 7, VOCAB)


@pytest.mark.parametrize("name", VARIANTS)
def test_incremental_decoding_matches_teacher_forcing(name):
    model = make(name).eval()
    src, tgt = batch()
    with torch.no_grad():
        full = model(src, tgt)
        state, steps = model.encode(src), []
        for t in range(tgt.size(1)):
            logits, state = model.step(state, tgt[:, t])
            steps.append(logits)
    assert (torch.stack(steps, 1) - full).abs().max() < 1e-4


@pytest.mark.parametrize("name", VARIANTS)
def test_padding_does_not_change_a_sentence(name):
    model = make(name).eval()
    src, tgt = batch()
    with torch.no_grad():
        padded = model(src, tgt)
        for i, length in enumerate([9, 6, 3]):
            alone = model(src[i : i + 1, :length], tgt[i : i + 1])
            assert (alone - padded[i : i + 1]).abs().max() < 1e-4
        extra = F.pad(src, (0, 5), value=PAD)  # more padding changes nothing either
        assert (model(extra, tgt) - padded).abs().max() < 1e-4


@pytest.mark.parametrize("name", VARIANTS)
def test_analysis_weights_are_distributions_that_skip_padding(name):
    model = make(name).eval()
    src, tgt = batch()
    tgt[2, 4:] = PAD
    hp = resolve(name, VARIANTS[name])[1]
    sizes = {"source": 9, "target": 7, "layer": hp.get("layers"), "head": hp.get("heads")}
    real = {"source": src != PAD, "target": tgt != PAD}
    # a latent model's candidates: the source positions, then its learned vectors
    learned = torch.ones(3, hp.get("components", 0), dtype=torch.bool)
    real["candidate"] = {"learned": learned, "both": torch.cat([src != PAD, learned], 1)}.get(
        hp.get("candidates")
    )
    sizes["candidate"] = None if real["candidate"] is None else real["candidate"].size(1)
    with torch.no_grad():
        weights = model.analyse(src, tgt)
    assert set(weights) == set(model.analysis_axes)
    axes_of = model.analysis_axes
    for key, axes in axes_of.items():
        w = weights[key]
        # candidates: "stay", the learned components, and the source positions where the
        # decoder's first mixture reads them
        first_decoder = next((k for k in axes_of if k.startswith("decoder")), None)
        reads_source = hp.get("source") == "states" and key == first_decoder
        sizes["component"] = 1 + model.learned_components + 9 * reads_source
        assert w.shape == (3, *(sizes[a] for a in axes)), key
        live = torch.ones(w.shape, dtype=torch.bool)  # entries at real positions
        for dim, axis in enumerate(axes, start=1):
            if real.get(axis) is not None:
                shape = [3 if i == 0 else w.size(dim) if i == dim else 1 for i in range(w.dim())]
                live &= real[axis].view(shape)
        rows = live.any(-1)  # rows whose time step is real
        assert torch.allclose(w.sum(-1)[rows], torch.ones(int(rows.sum()))), key
        assert (w[~live] == 0).all(), key
        assert (w >= 0).all(), key


@pytest.mark.parametrize("name", VARIANTS)
def test_every_mixture_can_knock_each_candidate_group_out_and_nothing_else_can(name):
    """The contract that `mixnmt reliance` relies on (Seq2Seq.knocked_out): a model whose
    weights have a "component" axis knocks out each group of it, the others renormalised,
    and is itself again after the block; a model without one refuses, naming itself."""
    model = make(name).eval()
    src, tgt = batch()
    mixtures = [w for w, axes in model.analysis_axes.items() if axes[-1] == "component"]
    with torch.no_grad():
        before = model.analyse(src, tgt)
        for weights in mixtures:
            for group in ("stay", "learned", "source"):
                with model.knocked_out(weights, group):
                    pi = model.analyse(src, tgt)[weights]
                real = pi.sum(-1) > 0
                assert torch.allclose(pi.sum(-1)[real], torch.ones(1), atol=1e-5), (weights, group)
                stay = pi[..., 0]
                assert group != "stay" or stay.abs().max() == 0, weights
            assert all(torch.equal(model.analyse(src, tgt)[w], before[w]) for w in before)  # restored
    if not mixtures:
        with pytest.raises(MixnmtError, match=f"{type(model).__name__} has no mixture to knock"):
            with model.knocked_out(next(iter(model.analysis_axes), "weights"), "learned"):
                pass


@pytest.mark.parametrize("name", VARIANTS)
def test_every_parameter_gets_a_gradient(name):
    model = make(name, shared=False).train()
    src, tgt = batch()
    model(src, tgt).logsumexp(-1).mean().backward()
    missing = [
        n for n, p in model.named_parameters() if p.numel() and (p.grad is None or not p.grad.abs().sum() > 0)
    ]
    assert missing == []


def select_nodes(root: torch.autograd.graph.Node) -> list[tuple[tuple[int, ...], int]]:
    """The sizes and dimension of the tensor that each `x[:, t]`-style select in the
    backward graph below `root` indexed."""
    seen, stack, found = set(), [root], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if type(node).__name__ == "SelectBackward0":
            found.append((tuple(node._saved_self_sym_sizes), node._saved_dim))
        stack.extend(child for child, _ in node.next_functions)
    return found


@pytest.mark.parametrize("name", VARIANTS)
def test_no_recurrence_takes_its_steps_one_select_at_a_time(name):
    """A step taken as x[:, t] has a gradient of x's whole size, zero but at t: a loop over
    T steps fills and adds T of them. Steps come from one `unbind`, whose gradient is one
    stack. Selecting a single position once (the backward GRU's first state) is fine."""
    src, tgt = batch()
    selects = select_nodes(make(name).train()(src, tgt).grad_fn)
    repeated = {(sizes, dim) for sizes, dim in selects if sizes[dim] > 1 and selects.count((sizes, dim)) > 1}
    assert repeated == set()


@pytest.mark.parametrize("name", TINY_MODELS)
def test_learns_a_copy_task(name):
    """300 steps on copying 2-6 of 12 symbols: the loss must fall below what any model
    blind to the source can reach (ln 12 per token), so the source is being read."""
    symbols = 12
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(2, 7, (256,), generator=g).tolist()
    seqs = [torch.randint(4, 4 + symbols, (n,), generator=g).tolist() for n in lengths]
    data = ParallelData(seqs, seqs)
    model = make(name).train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses: list[float] = []
    while len(losses) < 300:
        for indices in data.batches(max_tokens=320, generator=g):
            b = data.collate(indices)
            loss = F.cross_entropy(
                model(b.src, b.tgt_in).flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < 0.75 * math.log(symbols) < first, (first, last)


def test_resolve_rejects_unknown_architectures_and_hyperparameters():
    arch = next(iter(REGISTRY))
    with pytest.raises(MixnmtError, match=r"models.lstm.arch: 'lstm' is not one of \["):
        resolve("lstm", None)
    with pytest.raises(MixnmtError, match=r"models.x.arch: 'lstm' is not one of \["):
        resolve("x", {"arch": "lstm"})
    with pytest.raises(MixnmtError, match=r"models.x: .*'d_modle' was unexpected\) \(expected one of arch, "):
        resolve("x", {"arch": arch, "d_modle": 32})
    with pytest.raises(
        MixnmtError, match="models.x.dropout: 1.5 is greater than or equal to the maximum of 1"
    ):
        resolve("x", {"arch": arch, "dropout": 1.5})
    with pytest.raises(MixnmtError, match="models.x.d_model: 'big' is not of type 'integer'"):
        resolve("x", {"arch": arch, "d_model": "big"})


@pytest.mark.parametrize("arch", sorted(REGISTRY))
def test_a_variant_is_its_architecture_with_other_hyperparameters(arch):
    defaults = resolve(arch, None)[1]
    assert resolve(arch, {}) == resolve(f"{arch}-variant", {"arch": arch}) == (arch, defaults)
    assert resolve(f"{arch}-variant", {"arch": arch, "dropout": 0.3}) == (arch, {**defaults, "dropout": 0.3})


def test_impossible_hyperparameters_name_the_architecture():
    arch = next(a for a in REGISTRY if "heads" in resolve(a, None)[1])
    with pytest.raises(MixnmtError, match=f"models.{arch}: d_model=30 is not divisible by heads=4"):
        build(arch, {**resolve(arch, None)[1], "d_model": 30, "heads": 4}, VOCAB, VOCAB, True)
    arch = next(a for a in REGISTRY if "project" in resolve(a, None)[1])
    needs = "project: true needs bridge: false and source: every_step"
    with pytest.raises(MixnmtError, match=f"models.{arch}: {needs}"):
        build(arch, {**resolve(arch, None)[1], "project": True}, VOCAB, VOCAB, True)


def size_without_embeddings(name: str, models: dict, vocab: int) -> int:
    from mixnmt.models import parameter_counts

    with torch.device("meta"):
        return parameter_counts(build(*resolve(name, models[name]), vocab, vocab, shared_vocab=True))[1]


def test_every_architecture_has_a_comparable_size_in_config_yaml():
    vocab = CONFIG["spm"]["vocab_size"]
    sizes = {}
    for name in REGISTRY:
        arch, hparams = resolve(name, CONFIG["models"][name])
        sizes[name] = sum(
            p.numel() for p in build(arch, hparams, vocab, vocab, shared_vocab=True).parameters()
        )
    assert max(sizes.values()) <= 1.5 * min(sizes.values()), sizes


OVERLAYS = sorted(p.name for p in (ROOT / "experiments").glob("*.yaml"))
BASE = {"remedies.yaml": "cpu.yaml"}  # an overlay on another overlay (docs/configuration.md)
SIZE_APART = {  # contrasts declared to change the size, each with where it says so
    "cpu-width.yaml": {"mixture2-summary-gated vs mixture2-summary-gated-wide"},  # the width is the knob
    **{  # first order against second at equal width, not equal size (the file says why)
        f"cpu-order-width{tail}.yaml": {"mixture-summary-gated vs mixture2-summary-gated-wide"}
        for tail in ("", "-long", "-replication")
    },
    "cpu-rnn-attention.yaml": {"rnn vs attention"},  # 23%, declared without a width; its section says so
}


@pytest.mark.parametrize("overlay", [None, *OVERLAYS])
def test_every_contrast_is_within_ten_percent_of_parameters_without_embeddings(overlay, monkeypatch):
    """A contrast changes one thing: not the model's size as well (docs/models.md, section 6),
    unless its experiment declares the size as what it changes (SIZE_APART, which must not go stale)."""
    from mixnmt.config import load

    monkeypatch.chdir(ROOT)
    config = load(*(ROOT / "experiments" / name for name in (BASE.get(overlay), overlay) if name))
    vocab = config["spm"]["vocab_size"]
    apart = {}
    for a, b in config["analysis"]["contrasts"]:
        sizes = [size_without_embeddings(name, config["models"], vocab) for name in (a, b)]
        apart[f"{a} vs {b}"] = max(sizes) / min(sizes) - 1
    over = {k for k, v in apart.items() if v > 0.1}
    assert over == SIZE_APART.get(overlay, set()), {k: f"{v:.1%}" for k, v in apart.items() if v > 0.1}


@pytest.mark.parametrize(  # the mixtures: "stay", then K learned components, on a component axis
    "arch",
    [a for a, cls in REGISTRY.items() if any(ax[-1] == "component" for ax in cls.analysis_axes.values())],
)
def test_components_differ_from_the_first_step(arch):
    """At their default size, a fresh mixture's components start at the states' scale, so
    each step's responsibilities over them differ (components far smaller than the states
    all look alike to the query: a spread of 3e-4 of their mean, and the bank goes unused)."""
    torch.manual_seed(0)
    model = build(arch, resolve(arch, None)[1], 100, 100, shared_vocab=True).eval()
    src, tgt = torch.randint(4, 100, (8, 12)), torch.randint(4, 100, (8, 10))
    tgt[:, 0] = BOS
    with torch.no_grad():
        for key, pi in model.analyse(src, tgt).items():
            learned = pi[..., 1 : 1 + model.learned_components].flatten(0, -2)  # (steps x heads, K)
            spread = learned.std(-1) / learned.mean(-1)
            assert spread.mean() > 0.2, (key, float(spread.mean()))


@pytest.mark.parametrize("name", with_grus())
def test_grus_keep_fp32_states_under_autocast(name):
    """A GRU under the CPU's bf16 autocast would carry its state in bf16 when its inputs
    arrive in bf16: ours keep it in fp32 (cells run their products in bf16)."""
    src, tgt = batch()
    dtypes = recurrent_dtypes(make(name), src, tgt, "cpu", torch.bfloat16)
    assert dtypes and set(dtypes.values()) == {torch.float32}, dtypes


def test_the_bidirectional_encoder_is_a_packed_bidirectional_gru_and_loads_its_weights():
    """BiGRU runs its directions apart over padded sentences, the backward one over each
    sentence reversed within its length: it gives what a packed bidirectional nn.GRU
    gives (states zero at padding, last forward state, first backward state), and loads
    the weights of checkpoints saved when it was one."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    from mixnmt.models.recurrent import BiGRU

    torch.manual_seed(0)
    packed = torch.nn.GRU(6, 5, batch_first=True, bidirectional=True)
    encoder = BiGRU(6, 5)
    encoder.load_state_dict({f"gru.{k}": v for k, v in packed.state_dict().items()})
    x, lengths = torch.randn(4, 7, 6), torch.tensor([7, 3, 1, 5])
    mask = torch.arange(7) < lengths[:, None]
    states, final = packed(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
    states, _ = pad_packed_sequence(states, batch_first=True, total_length=7)
    for ours, theirs in zip(encoder(x, mask), (states, final[0], final[1])):
        torch.testing.assert_close(ours, theirs)
    incomplete = {f"gru.{k}": v for k, v in packed.state_dict().items() if "hh_l0_rev" not in k}
    with pytest.raises(RuntimeError, match="right_to_left.weight_hh_l0"):
        encoder.load_state_dict(incomplete)


def one_per_compiled_steps() -> list[str]:
    """The first tiny model of each kind of per-step compilation (recurrent models)."""
    kinds = {}
    for name in TINY_MODELS:
        kinds.setdefault(make(name).compiled_steps, name)
    return [name for steps, name in kinds.items() if steps]


@pytest.mark.parametrize("name", one_per_compiled_steps())
def test_compiled_steps_match_eager_for_every_batch_shape(name):
    """train.compile compiles the per-step parts of recurrent models with dynamic shapes:
    the same numbers as eager (loss and gradients), and no new graph for a new shape."""
    from torch._dynamo.utils import counters

    eager = make(name, seed=1)
    compiled = copy.deepcopy(eager)
    compiled.compile_steps()
    counters.clear()
    graphs = []
    for seed, rows, length in [(0, 3, 7), (1, 5, 4)]:  # a second batch and target length
        src, tgt = batch(seed)
        src, tgt = src.repeat(2, 1)[:rows], tgt.repeat(2, 1)[:rows, :length]
        losses = []
        for model in (eager, compiled):
            model.zero_grad()
            torch.manual_seed(0)  # the same dropout masks
            loss = model.train()(src, tgt).logsumexp(-1).sum()
            loss.backward()
            losses.append((loss, [p.grad for p in model.parameters() if p.grad is not None]))
        (loss_e, grads_e), (loss_c, grads_c) = losses
        assert torch.allclose(loss_c, loss_e, rtol=1e-5) and len(grads_c) == len(grads_e)
        assert all(torch.allclose(c, e, rtol=1e-4, atol=1e-5) for c, e in zip(grads_c, grads_e))
        graphs.append(counters["stats"]["unique_graphs"])
    assert graphs[1] == graphs[0] > 0  # the new shapes reuse the graphs


class Recorder(TorchDispatchMode):
    """Records the aten operators dispatched (views included): each kernel is a launch on a GPU."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append(func.overloadpacket)
        return func(*args, **(kwargs or {}))


def operators_per_step(model, src, tgt) -> int:
    """The aten operators one decoding step dispatches (after the first)."""
    with torch.no_grad():
        _, state = model.step(model.encode(src), tgt[:, 0])
        with Recorder() as ops:
            model.step(state, tgt[:, 1])
    return len(ops.calls)


def textbook_step_operators() -> int:
    """The aten operators of a textbook GRU decoder's step: embedding, GRU cell, projection."""
    embed, cell, project = torch.nn.Embedding(VOCAB, 16), torch.nn.GRUCell(16, 16), torch.nn.Linear(16, VOCAB)
    y, h = torch.tensor([4, 5, 6]), torch.zeros(3, 16)
    with torch.no_grad(), Recorder() as ops:
        project(cell(embed(y), h))
    return len(ops.calls)


@pytest.mark.parametrize("name", OPS_PER_STEP)
def test_operators_per_decoder_step_stay_within_their_count(name):
    """Counted in textbook steps of the same torch, so that a torch release that dispatches
    differently moves the bound with the count."""
    src, tgt = batch()
    assert operators_per_step(make(name).eval(), src, tgt) <= OPS_PER_STEP[name] * textbook_step_operators()


def test_additive_attention_is_bahdanaus_without_a_tanh_over_the_source():
    """a_t = softmax_j(v^T tanh(W s + U h_j)) over the real positions, as the textbook writes
    it, computed without a tanh over (B, S, H): tanh x = 2 sigmoid(2x) - 1 (sigmoid is the
    CPU's faster kernel)."""
    src, _ = batch()
    arch = next(a for a, cls in REGISTRY.items() if hasattr(cls, "attend"))  # additive attention
    model = build(arch, {"d_model": 32, "hidden": 48, "dropout": 0.0}, VOCAB, VOCAB, True)
    state = model.encode(src)
    s = torch.randn(3, 48)
    with Recorder() as ops:
        _, a = model.attend(state, s)
    h = state["h"]
    e = model.score(torch.tanh(model.query(s)[:, None] + model.keys(h))).squeeze(-1)
    textbook = e.masked_fill(src == PAD, -math.inf).softmax(-1)
    torch.testing.assert_close(a, textbook, rtol=0, atol=1e-6)
    assert a[src == PAD].eq(0).all()
    assert torch.ops.aten.tanh not in ops.calls and torch.ops.aten.tanh_ not in ops.calls


@pytest.mark.parametrize("weights", ["uniform", "final"])
def test_a_fixed_context_reads_what_it_says_whatever_the_query(weights):
    """`weights: uniform` is mean_j h_j and `weights: final` each direction's final state,
    [h_fwd_S ; h_bwd_1] (rnn's one vector before its bridge), as a sentence read alone
    gives them, the same for every decoder state; its alignment sums to 1 over the real
    positions. Both drop the scorer, so the two are one size: a one-knob contrast."""
    src, _ = batch()
    arch = next(a for a, cls in REGISTRY.items() if hasattr(cls, "attend"))  # additive attention
    hparams = {"d_model": 32, "hidden": 48, "dropout": 0.0}
    model = build(arch, {**hparams, "weights": weights}, VOCAB, VOCAB, True)
    state = model.encode(src)
    (c, a), (c_again, a_again) = (model.attend(state, torch.randn(3, 48)) for _ in range(2))
    assert torch.equal(c, c_again) and torch.equal(a, a_again)
    torch.testing.assert_close(a.sum(-1), torch.ones(3))
    assert a[src == PAD].eq(0).all()
    for b, sentence in enumerate(src):
        words = model.embed(model.src_embed, sentence[sentence != PAD][None])  # (1, S, d)
        forward = model.encoder.left_to_right(words)[0][0]  # (S, H)
        backward = model.encoder.right_to_left(words.flip(1))[0][0].flip(0)  # (S, H)
        h = torch.cat([forward, backward], dim=-1)  # (S, 2H)
        alone = h.mean(0) if weights == "uniform" else torch.cat([forward[-1], backward[0]])
        torch.testing.assert_close(c[b], alone, rtol=1e-5, atol=1e-6)
    sizes = {
        sum(p.numel() for p in build(arch, {**hparams, "weights": w}, VOCAB, VOCAB, True).parameters())
        for w in ("uniform", "final")
    }
    assert len(sizes) == 1


@pytest.mark.parametrize(("bridge", "project"), [(True, False), (False, False), (False, True)])
def test_the_simple_rnn_reads_its_bridge_or_the_final_states_and_starts_from_the_bridge(bridge, project):
    """`rnn` starts from s_0 = tanh(W [h_fwd_S ; h_bwd_1]) either way, and reads at every
    step that vector (`bridge: true`, Cho et al.), the final states themselves (`bridge:
    false`: attention's `weights: final` context) or their own tanh layer at their width
    (`project: true`, c = tanh(W_c [h_fwd_S ; h_bwd_1]))."""
    src, _ = batch()
    arch = next(a for a, cls in REGISTRY.items() if "bridge" in resolve(a, None)[1])  # the simple RNN
    hparams = {"d_model": 32, "hidden": 48, "dropout": 0.0, "bridge": bridge, "project": project}
    model = build(arch, hparams, VOCAB, VOCAB, True)
    state = model.encode(src)
    for b, sentence in enumerate(src):
        words = model.embed(model.src_embed, sentence[sentence != PAD][None])  # (1, S, d)
        ends = torch.cat(
            [
                model.encoder.left_to_right(words)[0][0, -1],
                model.encoder.right_to_left(words.flip(1))[0][0, -1],
            ]
        )  # [h_fwd_S ; h_bwd_1] (2H), the sentence read alone
        first = torch.tanh(model.bridge(ends))
        torch.testing.assert_close(state["s"][b], first, rtol=1e-5, atol=1e-6)
        c = first if bridge else torch.tanh(model.project(ends)) if project else ends
        torch.testing.assert_close(state["c"][b], c, rtol=1e-5, atol=1e-6)
        assert c.shape == (48 if bridge else 96,)


def test_attention_around_the_final_states_is_the_unbridged_rnn_but_for_its_first_state():
    """`weights: final` attention and `bridge: false` rnn (the contrast of the decoder
    studies) differ in one design besides their widths: attention starts from tanh(W_s
    h_bwd_1), rnn from its bridge tanh(W [h_fwd_S ; h_bwd_1]). Given the same weights and a
    bridge blind to h_fwd_S they give the same logits; with h_fwd_S seen, different ones."""
    src, tgt = batch()
    rnn = next(a for a in REGISTRY if "bridge" in resolve(a, None)[1])  # the simple RNN
    attention = next(a for a, cls in REGISTRY.items() if hasattr(cls, "attend"))  # additive attention
    hparams = {"d_model": 32, "hidden": 48, "dropout": 0.0}
    reading = build(rnn, {**hparams, "bridge": False}, VOCAB, VOCAB, True)
    attending = build(attention, {**hparams, "weights": "final"}, VOCAB, VOCAB, True)
    theirs = attending.state_dict()
    shared = {k: v for k, v in theirs.items() if k in reading.state_dict()}  # embeddings, encoder, output
    gru = zip(reading.decoder.state_dict(), attending.cell.state_dict().values())  # one GRU's weights
    w_s = theirs["init.weight"]  # (H, H)
    blind = {"bridge.weight": torch.cat([torch.zeros_like(w_s), w_s], 1), "bridge.bias": theirs["init.bias"]}
    reading.load_state_dict(shared | {f"decoder.{k}": v for k, v in gru} | blind)  # strict: every weight
    logits = attending.teacher_forcing(src, tgt)[0]
    torch.testing.assert_close(reading.teacher_forcing(src, tgt)[0], logits, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        reading.bridge.weight[:, : hparams["hidden"]].normal_()  # the bridge now reads h_fwd_S too
    assert not torch.allclose(reading.teacher_forcing(src, tgt)[0], logits, rtol=1e-3, atol=1e-3)


MIXTURE = next(
    arch for arch in REGISTRY if "qk_norm" in resolve(arch, None)[1]
)  # the first with the remedies


@pytest.mark.parametrize("causal", [False, True])
def test_the_transformers_written_out_attention_is_the_fused_kernels(causal, monkeypatch):
    """`attend` writes attention out where it keeps the weights, and on the CPU under
    autocast and for one query (a decoding step), where the fused kernel is slower: the
    same numbers as the fused kernel, masked positions get no weight, and neither
    autocast, with or without gradients, nor a single query reaches it."""
    from mixnmt.models import transformer

    q, k, v = torch.randn(3, 2, 3, 5, 4, requires_grad=True).unbind()  # (B, H, T, dk) each, T = S
    mask = None if causal else (torch.arange(5) < torch.tensor([[5], [3]]))[:, None, None]  # (B, 1, 1, S)
    fused, none = transformer.attend(q, k, v, mask, causal)
    written, weights = transformer.attend(q, k, v, mask, causal, keep_weights=True)
    assert none is None and (written - fused).abs().max() < 1e-6
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 5))
    hidden = torch.ones(5, 5).triu(1).bool() if causal else ~mask.expand(2, 3, 5, 5)
    assert weights.dtype == torch.float32 and (weights.masked_select(hidden) == 0).all()

    def refuse(*args, **kwargs):
        raise AssertionError("the fused kernel ran under the CPU's autocast")

    monkeypatch.setattr(transformer.F, "scaled_dot_product_attention", refuse)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low, none = transformer.attend(q, k, v, mask, causal)
        with torch.no_grad():
            assert torch.equal(transformer.attend(q, k, v, mask, causal)[0], low)
    assert none is None and low.dtype == torch.bfloat16 and (low.float() - fused).abs().max() < 0.05
    last, none = transformer.attend(q[:, :, -1:], k, v, mask)  # the last query, as a decoding step asks
    assert none is None and (last - fused[:, :, -1:]).abs().max() < 1e-6


def mixture_variant(**knobs):
    """A tiny MIXTURE (source: summary) with `knobs`, built from seed 0."""
    torch.manual_seed(0)
    entry = {**TINY_MODELS[MIXTURE], "arch": MIXTURE, "source": "summary", **knobs}
    return build(*resolve("x", entry), VOCAB, VOCAB, shared_vocab=True).eval()


def test_qk_norm_makes_responsibilities_blind_to_the_scale_of_queries_and_keys():
    model = mixture_variant(qk_norm=True)
    src, tgt = batch()
    with torch.no_grad():
        before = model.analyse(src, tgt)["decoder_responsibilities"]
        model.decoder.mixes[0].qkv.weight[: 2 * model.d_model] *= 100  # W_q and W_k
        model.decoder.mixes[0].qkv.bias[: 2 * model.d_model] *= 100
        after = model.analyse(src, tgt)["decoder_responsibilities"]
    assert torch.allclose(after, before, atol=1e-4)
    assert not (after == before).all()  # the values moved, only the scale was dropped


def test_a_learned_temperature_starts_as_the_fixed_one_and_sharpens_each_head():
    fixed, learned = mixture_variant(), mixture_variant(temperature="learned")
    learned.load_state_dict(fixed.state_dict(), strict=False)  # only the temperatures are new
    src, tgt = batch()
    with torch.no_grad():
        assert torch.equal(learned(src, tgt), fixed(src, tgt))
        for mix in [*learned.encoders, learned.decoder]:
            mix.mixes[0].tau[0] = 10.0  # head 0: scores times e^10
        pi = learned.analyse(src, tgt)["decoder_responsibilities"][tgt != PAD]  # (N, H, n)
    assert (pi[:, 0].max(-1).values > 0.99).all()  # head 0 picks one candidate
    assert (pi[:, 1].max(-1).values < 0.99).all()  # the others as before


@pytest.mark.parametrize("z, same_as", [(-1e4, "h0"), (1e4, "ungated")])
def test_the_gate_keeps_the_state_or_takes_the_mixture_cells_step(z, same_as):
    """z_t = 0: the decoder's state stays h_0 (every position predicts alike); z_t = 1:
    the gated decoder is the plain mixture cell."""
    gated, plain = mixture_variant(gate=True), mixture_variant()
    gated.load_state_dict(plain.state_dict(), strict=False)  # only W_z is new
    with torch.no_grad():
        gated.decoder.gate.weight.zero_()
        gated.decoder.gate.bias.fill_(z)
        src, tgt = batch()
        logits = gated(src, tgt)
        if same_as == "h0":
            assert torch.allclose(logits, logits[:, :1].expand_as(logits))
        else:
            assert torch.allclose(logits, plain(src, tgt), atol=1e-5)


@pytest.mark.parametrize("components", [5, 0])
def test_a_mix_is_models_md_attention_over_stay_the_components_and_the_source(components):
    """pi_t = softmax((W_q u) . (W_k g)^T / sqrt(dh)) per head over g = [u ; m_1..m_K ;
    e_1..e_S], padding masked, and the update pi . (W_v g), written out per sentence and
    head: `Mix` computes it with its candidates laid out per head (`heads_first`)."""
    from mixnmt.models.mixture import Memory, Mix, heads_first

    torch.manual_seed(0)
    d, heads, dh = 16, 4, 4
    mix = Mix(d, components, heads)
    u, states = torch.randn(3, d), torch.randn(3, 6, d)
    mask = torch.arange(6) < torch.tensor([[6], [4], [1]])  # (B, S)
    bank, source = (heads_first(*mix.keys_values(x)) for x in (mix.components, states))
    memory = Memory(*bank, *source, mask)
    with torch.no_grad():
        update, pi = mix(u, memory)
        w_q, w_k, w_v = mix.qkv.weight.split(d)
        b_q, b_k, b_v = mix.qkv.bias.split(d)
        for b in range(3):
            g = torch.cat([u[b, None], mix.components, states[b, mask[b]]])  # (candidates, d)
            for h in range(heads):
                part = slice(h * dh, (h + 1) * dh)
                query = u[b] @ w_q[part].T + b_q[part]
                keys, values = g @ w_k[part].T + b_k[part], g @ w_v[part].T + b_v[part]
                expected = (keys @ query / math.sqrt(dh)).softmax(0)
                assert torch.allclose(pi[b, h, : len(g)], expected, atol=1e-6)
                assert (pi[b, h, len(g) :] == 0).all()  # the padded source positions
                assert torch.allclose(update[b, part], expected @ values, atol=1e-5)


def test_balance_is_one_when_heads_spread_their_choices_and_k_when_they_lock_in():
    from mixnmt.models.mixture import balance

    choices, steps = 4, 8
    pick = torch.arange(steps) % choices  # step t picks candidate t mod 4, in both heads
    spread = F.one_hot(pick, choices).float()[None, :, None].expand(1, steps, 2, choices)
    locked = F.one_hot(torch.zeros(steps, dtype=torch.long), choices).float()[None, :, None].expand_as(spread)
    mask = torch.ones(1, steps, dtype=torch.bool)
    assert float(balance(spread, mask, choices)) == pytest.approx(1.0)
    assert float(balance(locked, mask, choices)) == pytest.approx(choices)
    padded = torch.cat([spread, torch.zeros(1, 3, 2, choices)], 1)  # padding: no steps
    assert float(balance(padded, torch.cat([mask, mask[:, :3] & False], 1), choices)) == pytest.approx(1.0)


def test_balance_joins_the_training_objective_only():
    from conftest import train_config
    from mixnmt.batching import Batch
    from mixnmt.trainer import Trainer

    src, tgt = batch()
    model = mixture_variant(balance=0.5).train()
    model(src, tgt)
    assert model.auxiliary_loss().requires_grad and float(model.auxiliary_loss().detach()) >= 0.5
    assert mixture_variant().train().auxiliary_loss() == 0.0
    grads = []
    for coefficient in (0.0, 0.5, 0.5):
        model = mixture_variant(balance=coefficient).train()
        model.decoder.mixes[0].components.register_hook(lambda g: grads.append(g.clone()))
        torch.manual_seed(1)  # the same dropout masks
        Trainer(model, train_config(), torch.device("cpu")).train_step(Batch(src, tgt, tgt.roll(-1, 1)))
    assert torch.equal(grads[1], grads[2]) and not torch.allclose(grads[0], grads[1])


class CudaAutocastRules(TorchDispatchMode):
    """CUDA's autocast dtype rules, emulated on the CPU (under `torch.autocast("cpu")`,
    which marks the regions): the operators CUDA runs in lower precision get bf16 inputs,
    those it keeps in fp32 get fp32 ones, every other one its inputs as they come, as
    CUDA would hand them (torch.lerp is on no list, and refuses mixed dtypes)."""

    LOWER = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "addmv", "mv", "addr", "einsum"}
    LOWER |= {
        "convolution",
        "_convolution",
        "gru_cell",
        "_thnn_fused_gru_cell",
        "scaled_dot_product_attention",
    }
    FP32 = {"native_layer_norm", "layer_norm", "_softmax", "softmax", "_log_softmax", "log_softmax"}
    FP32 |= {"exp", "log", "log1p", "expm1", "pow", "rsqrt", "reciprocal", "logsumexp", "sum", "cumsum"}
    FP32 |= {"nll_loss_forward", "nll_loss", "mse_loss", "kl_div", "norm", "linalg_vector_norm", "softplus"}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        to = torch.bfloat16 if name in self.LOWER else torch.float32 if name in self.FP32 else None
        if to is not None and torch.is_autocast_enabled("cpu"):

            def cast(x):
                return x.to(to) if isinstance(x, torch.Tensor) and x.is_floating_point() else x

            args, kwargs = tree_map(cast, (args, kwargs or {}))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("name", VARIANTS)
def test_every_variant_trains_under_cudas_autocast_rules(name):
    """What bf16 training on a GPU runs, checked without one: the gated mixture cell crashed
    at its first step there (its gate came from a linear layer in bf16, its states from layer
    norm in fp32, and lerp takes one dtype)."""
    model, (src, tgt) = make(name).train(), batch()
    with torch.autocast("cpu", dtype=torch.bfloat16), CudaAutocastRules():
        loss = model(src, tgt).float().logsumexp(-1).mean()
        loss.backward()
    assert torch.isfinite(loss) and any(p.grad is not None for p in model.parameters())
