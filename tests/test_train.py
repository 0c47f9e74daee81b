import dataclasses
import errno
import functools
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from conftest import FAST, TINY_MODELS, decode_config, synthetic_batches, train_config
from mixnmt import MixnmtError, checkpoint, tokenize
from mixnmt.batching import ParallelData
from mixnmt.cli import main
from mixnmt.config import config_section
from mixnmt.device import KERNEL_CACHES, autocast_dtype, bound_kernel_caches, native_bf16, pick_device
from mixnmt.files import sha256sum
from mixnmt.models import REGISTRY, build, resolve
from mixnmt.models.latent import Latent
from mixnmt.paths import METRICS
from mixnmt.runs import definition, fingerprint, identity
from mixnmt.train import TrainConfig, TrainFiles, train
from mixnmt.trainer import Trainer, inverse_sqrt, validate

HPARAMS = TINY_MODELS[FAST]
# config.yaml's settings, for the tiny corpus: small batches, a fast schedule, no extras
CONFIG = dataclasses.asdict(
    train_config(max_tokens=512, lr=3e-3, warmup=20, weight_decay=0.0, average=1, epochs=30)
)


@pytest.fixture
def files(tiny_ids, tiny_spm, tmp_path):
    return TrainFiles(
        train=(tiny_ids / "train.en", tiny_ids / "train.de"),
        valid=(tiny_ids / "valid.en", tiny_ids / "valid.de"),
        spm=(tiny_spm, tiny_spm),
        checkpoint=tmp_path / "out" / "model.pt",
        metrics=tmp_path / "out" / "metrics.tsv",
        manifest=tmp_path / "out" / "manifest.json",
        state=tmp_path / "state" / "resume.pt",
    )


def outputs(files):
    return [files.checkpoint, files.metrics, files.manifest]


def elsewhere(files, folder):
    """The same inputs, with every output and the state in `folder`."""
    return dataclasses.replace(
        files,
        checkpoint=folder / "model.pt",
        metrics=folder / "metrics.tsv",
        manifest=folder / "manifest.json",
        state=folder / "resume.pt",
    )


def run(files, **config):
    train(FAST, HPARAMS, TrainConfig(**{**CONFIG, **config}), files)
    return pd.read_csv(files.metrics, sep="\t"), checkpoint.load(files.checkpoint)


def test_training_writes_metrics_the_best_checkpoint_and_a_manifest(files, tiny_spm):
    metrics, ckpt = run(files, epochs=4)
    assert tuple(metrics.columns) == (*METRICS, "model", "seed", "fingerprint")
    assert list(metrics.epoch) == [1, 2, 3, 4]
    assert metrics.valid_loss.iloc[-1] < metrics.valid_loss.iloc[0]
    assert metrics.train_loss.iloc[-1] < metrics.train_loss.iloc[0]
    assert (metrics.valid_ppl - metrics.valid_loss.map(math.exp)).abs().max() < 1e-3
    assert (metrics.tokens_per_s > 0).all() and metrics.seconds.is_monotonic_increasing
    best = metrics.valid_loss.idxmin()
    assert ckpt["valid_loss"] == pytest.approx(metrics.valid_loss[best], rel=1e-5)
    assert ckpt["epoch"] == metrics.epoch[best]
    assert (ckpt["model"], ckpt["arch"], ckpt["hparams"]) == (FAST, FAST, HPARAMS)
    tok = tokenize.Tokenizer(tiny_spm)
    model = checkpoint.load_model(files.checkpoint, tok, tok)
    assert ckpt["params"] == sum(p.numel() for p in model.parameters())
    assert not files.state.exists()  # the resumable state goes once training is done

    manifest = json.loads(files.manifest.read_text())
    assert (manifest["model"], manifest["arch"], manifest["params"], manifest["hparams"]) == (
        FAST,
        FAST,
        ckpt["params"],
        HPARAMS,
    )
    assert manifest["best"] == {
        "epoch": ckpt["epoch"],
        "step": ckpt["step"],
        "valid_loss": ckpt["valid_loss"],
    }
    assert manifest["train"]["lr"] == 3e-3 and manifest["train"]["seed"] == 1
    assert manifest["inputs"] == {str(p): sha256sum(p) for p in [*files.train, *files.valid, *files.spm]}
    assert manifest["versions"]["torch"] == metadata.version("torch")
    assert set(manifest["git"]) == {"commit", "dirty"} and manifest["device"]
    # every file of the run names it: its fingerprint is the hash of its definition
    config = TrainConfig(**{**CONFIG, "epochs": 4})
    run_fingerprint = fingerprint(definition(FAST, HPARAMS, config, None))
    assert manifest["run"] == identity(FAST, 1, run_fingerprint, sha256sum(files.checkpoint))
    assert manifest["definition"] == definition(FAST, HPARAMS, config, None)
    assert manifest["metrics"]["sha256"] == sha256sum(files.metrics)
    assert set(metrics.fingerprint) == {run_fingerprint} and ckpt["fingerprint"] == run_fingerprint
    assert list(zip(metrics.model, metrics.seed))[0] == (FAST, 1)


def test_max_steps_caps_training_mid_epoch(files):
    metrics, ckpt = run(files, epochs=50, max_steps=7)
    assert list(metrics.step) == [7]
    assert ckpt["step"] == 7


def test_same_seed_gives_byte_identical_checkpoints_and_translations(files, tiny_ids, tiny_spm, tmp_path):
    from mixnmt.translator import Translator, translate_file

    digests = []
    for attempt in ("a", "b"):
        out = tmp_path / attempt
        again = elsewhere(files, out)
        train(FAST, HPARAMS, TrainConfig(**{**CONFIG, "epochs": 3}), again)
        translator = Translator.load(again.checkpoint, tiny_spm, decode_config(beam=3))
        translate_file(translator, tiny_ids / "valid.en", out / "t.txt")
        digests.append((sha256sum(again.checkpoint), sha256sum(out / "t.txt")))
    assert digests[0] == digests[1]
    other = elsewhere(files, tmp_path / "c")
    train(FAST, HPARAMS, TrainConfig(**{**CONFIG, "epochs": 3, "seed": 2}), other)
    assert sha256sum(other.checkpoint) != digests[0][0]  # the seed matters


def cli_train(files, **config) -> list[str]:
    """The `mixnmt train` command line for `files`, single-threaded."""
    return [
        sys.executable,
        "-m",
        "mixnmt",
        "train",
        "--model",
        FAST,
        "--threads",
        "1",
        "--entry",
        json.dumps(HPARAMS),
        "--config",
        json.dumps({**CONFIG, **config}),
        "--train",
        *map(str, files.train),
        "--valid",
        *map(str, files.valid),
        "--spm",
        *map(str, files.spm),
        "--checkpoint",
        str(files.checkpoint),
        "--metrics",
        str(files.metrics),
        "--manifest",
        str(files.manifest),
        "--state",
        str(files.state),
    ]


def start_and_stop(command: list[str], state, sig: signal.Signals) -> subprocess.CompletedProcess:
    """Start a training, send `sig` as soon as it has saved a state, and wait for it."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not state.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "training ended before it could be interrupted"
    process.send_signal(sig)
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


INTERRUPTIBLE = {"epochs": 6, "save_every": 20, "average": 3}  # the averaged weights resume too


@pytest.fixture(scope="module")
def uninterrupted(tiny_ids, tiny_spm, tmp_path_factory) -> str:
    """sha256 of the checkpoint of an uninterrupted command-line run."""
    folder = tmp_path_factory.mktemp("uninterrupted")
    files = TrainFiles(
        (tiny_ids / "train.en", tiny_ids / "train.de"),
        (tiny_ids / "valid.en", tiny_ids / "valid.de"),
        (tiny_spm, tiny_spm),
        folder / "model.pt",
        folder / "metrics.tsv",
        folder / "manifest.json",
        folder / "resume.pt",
    )
    subprocess.run(cli_train(files, **INTERRUPTIBLE), check=True, capture_output=True)
    return sha256sum(files.checkpoint)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_interrupted_training_resumes_to_a_byte_identical_checkpoint(files, uninterrupted, sig):
    stopped = start_and_stop(cli_train(files, **INTERRUPTIBLE), files.state, sig)
    assert stopped.returncode != 0
    if sig != signal.SIGKILL:  # a caught signal saves the state after the current step
        assert f"received {sig.name}" in stopped.stderr, stopped.stderr[-2000:]
        assert f"mixnmt train: error: {FAST}: interrupted at step" in stopped.stderr
        # standard output is the terminal under Snakemake (standard error is the job's log)
        assert "its state is saved, and the same command resumes it" in stopped.stdout
    assert files.state.exists() and not any(p.exists() for p in outputs(files))

    resumed = subprocess.run(cli_train(files, **INTERRUPTIBLE), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {files.state}" in resumed.stderr
    assert f"{files.state}: resuming at epoch " in resumed.stdout
    assert sha256sum(files.checkpoint) == uninterrupted
    assert not files.state.exists()
    assert len(pd.read_csv(files.metrics, sep="\t")) == INTERRUPTIBLE["epochs"]


@pytest.mark.parametrize("moment", ["epoch 3  step", ": kept "])  # writing the outputs; about to exit
def test_a_signal_as_training_ends_keeps_the_finished_outputs(files, moment):
    """SLURM's SIGTERM after the budget is spent (a requeue, a cancelled job) must not fail
    the finished job: Snakemake would delete its outputs, and the state is gone."""
    process = subprocess.Popen(cli_train(files, epochs=3), stderr=subprocess.PIPE, text=True)
    seen = []
    for line in process.stderr:
        seen.append(line)
        if moment in line:
            process.send_signal(signal.SIGTERM)
            break
    seen += process.stderr.read()
    assert process.wait(timeout=120) == 0, "".join(seen)
    assert all(p.exists() for p in outputs(files)) and not files.state.exists()
    assert len(pd.read_csv(files.metrics, sep="\t")) == 3


def test_a_state_from_another_configuration_is_not_resumed(files, tmp_path, caplog):
    with pytest.raises(MixnmtError, match="loss became nan"):
        fail_at_step(files, 5, lambda loss: loss * math.nan, save_every=4)
    assert files.state.exists()
    with caplog.at_level("WARNING"):
        run(files, epochs=2, lr=1e-3)
    assert "belongs to a different run" in caplog.text
    fresh = elsewhere(files, tmp_path / "fresh")
    run(fresh, epochs=2, lr=1e-3)
    assert sha256sum(files.checkpoint) == sha256sum(fresh.checkpoint)  # trained from scratch


def fail_at_step(files, step, corrupt, **config):
    """Train, replacing the loss of training step `step` by corrupt(loss)."""
    import mixnmt.trainer as training

    calls = {"n": 0}
    real = training.token_loss

    def token_loss(model, batch, label_smoothing, dtype):
        loss = real(model, batch, label_smoothing, dtype)
        if model.training:
            calls["n"] += 1
            if calls["n"] == step:
                return corrupt(loss)
        return loss

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training, "token_loss", token_loss)
        train(FAST, HPARAMS, TrainConfig(**{**CONFIG, "epochs": 2, **config}), files)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_non_finite_loss_stops_and_keeps_the_last_good_state(files, value):
    with pytest.raises(MixnmtError) as error:
        fail_at_step(files, 9, lambda loss: loss * value, save_every=4)
    assert str(error.value) == (
        f"{FAST}: the training loss became {value} at step 9; the last good state (step 8) "
        f"is in {files.state}; lower train.lr or raise train.warmup"
    )
    assert checkpoint.read(files.state)["progress"]["step"] == 8
    assert not any(p.exists() for p in outputs(files))


def test_a_non_finite_loss_before_the_first_save_leaves_no_state(files):
    with pytest.raises(MixnmtError) as error:
        fail_at_step(files, 3, lambda loss: loss * math.nan, save_every=4)
    assert str(error.value) == (
        f"{FAST}: the training loss became nan at step 3; no state was saved; "
        "lower train.lr or raise train.warmup"
    )
    assert not files.state.exists() and not any(p.exists() for p in outputs(files))


def test_a_stop_after_the_last_capped_step_resumes_to_validate_it(files, tmp_path):
    """Stopped after its last step under max_steps, mid-epoch, before that step's validation:
    the rerun validates and ships the same weights as a run never stopped."""
    config = TrainConfig(**{**CONFIG, "epochs": 50, "max_steps": 7})
    straight = elsewhere(files, tmp_path / "straight")
    train(FAST, HPARAMS, config, straight)
    calls = iter(range(1, 10**6))  # asked once per step: a SIGTERM after step 7, the last
    with pytest.raises(MixnmtError, match="interrupted at step 7"):
        train(FAST, HPARAMS, config, files, lambda: signal.SIGTERM if next(calls) == 7 else None)
    train(FAST, HPARAMS, config, files)
    assert files.checkpoint.read_bytes() == straight.checkpoint.read_bytes()
    assert list(pd.read_csv(files.metrics, sep="\t").step) == [7]


def test_a_state_saved_on_a_gpu_resumes_on_a_cpu(files, caplog):
    """The saved CUDA random state is left alone where there is no GPU to restore it to."""
    calls = iter(range(1, 10**6))  # asked once per step: a SIGTERM after step 4
    with pytest.raises(MixnmtError, match="interrupted at step 4"):
        train(
            FAST,
            HPARAMS,
            TrainConfig(**{**CONFIG, "epochs": 2}),
            files,
            lambda: signal.SIGTERM if next(calls) == 4 else None,
        )
    state = checkpoint.read(files.state)
    state["rng"]["cuda"] = [torch.zeros(16, dtype=torch.uint8)]  # as a GPU node saves it
    checkpoint.write(files.state, state)
    with caplog.at_level("WARNING"):
        run(files, epochs=2)
    assert "CUDA random state is not restored" in caplog.text
    assert all(p.exists() for p in outputs(files)) and not files.state.exists()


def test_disk_full_while_saving_keeps_the_previous_state(files, monkeypatch):
    real_write = Path.write_bytes
    writes = {"n": 0}

    def write_bytes(path, data):
        writes["n"] += 1
        if writes["n"] == 2:  # the second periodic save runs out of space half way
            real_write(path, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(path, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    with pytest.raises(MixnmtError) as error:
        train(FAST, HPARAMS, TrainConfig(**{**CONFIG, "epochs": 2, "save_every": 5}), files)
    assert str(error.value) == (
        f"{files.state}: could not write (No space left on device); the previous version is kept"
    )
    assert checkpoint.read(files.state)["progress"]["step"] == 5
    assert sorted(p.name for p in files.state.parent.iterdir()) == ["resume.pt"]  # no temporary left
    assert not any(p.exists() for p in outputs(files))


def test_impossible_hyperparameters_fail_before_training(files, capsys):
    command = cli_train(files)[3:]  # drop "python -m mixnmt"
    command[command.index("--entry") + 1] = json.dumps({**HPARAMS, "d_model": 30, "heads": 4})
    assert main(command) == 1
    err = capsys.readouterr().err
    assert err == f"mixnmt train: error: models.{FAST}: d_model=30 is not divisible by heads=4\n"
    assert not any(p.exists() for p in [*outputs(files), files.state])


def test_inverse_sqrt_schedule():
    f = inverse_sqrt(100)
    assert f(0) == pytest.approx(0.01)
    assert f(99) == pytest.approx(1.0)
    assert f(399) == pytest.approx(0.5)


def test_unknown_or_missing_training_settings_are_named():
    with pytest.raises(MixnmtError, match="train.learning_rate: unknown setting"):
        config_section(TrainConfig, "train", {**CONFIG, "learning_rate": 0.1})
    with pytest.raises(MixnmtError, match="train.average: missing setting"):
        config_section(TrainConfig, "train", {k: v for k, v in CONFIG.items() if k != "average"})


def test_checkpoint_averaging_keeps_what_validation_prefers(files, tmp_path):
    _, single = run(elsewhere(files, tmp_path / "single"), epochs=6)
    _, chosen = run(files, epochs=6, average=3)
    assert chosen["valid_loss"] <= single["valid_loss"]
    if "averaged_epochs" in chosen:  # the mean of the last three epochs won
        assert chosen["averaged_epochs"] == [4, 5, 6] and chosen["valid_loss"] < single["valid_loss"]
    else:  # the best single epoch's weights, as without averaging
        assert chosen["epoch"] == single["epoch"]
        assert all(torch.equal(v, single["state_dict"][k]) for k, v in chosen["state_dict"].items())
    # The recorded loss is the loss of the weights shipped, measured as training does
    # (in its precision, on the GPU of a GPU machine).
    tok = tokenize.Tokenizer(files.spm[1])
    device = pick_device()
    model = checkpoint.load_model(files.checkpoint, tok, tok).to(device)
    valid = ParallelData.load(*files.valid, (len(tok), len(tok)))
    loss, _ = validate(model, valid, 512, device, autocast_dtype(device, CONFIG["precision"]))
    assert loss == pytest.approx(chosen["valid_loss"], rel=1e-6)
    assert json.loads(files.manifest.read_text())["best"]["valid_loss"] == chosen["valid_loss"]


def test_compiled_training_saves_the_plain_model(files, monkeypatch):
    """torch.compile wraps the training forward only: the checkpoint is the model's own.
    Dynamo's wrapping is what renames keys, whatever the backend: the eager one spares the
    test inductor's C++ builds (about two minutes on a fresh CI machine); test_models
    checks inductor's numbers."""
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    _, ckpt = run(files, epochs=1, max_steps=3, compile=True)
    assert not any(k.startswith("_orig_mod") for k in ckpt["state_dict"])


def test_deterministic_mode_leaves_attention_to_the_math_kernel():
    """Flash, memory-efficient and cuDNN attention have non-deterministic backward passes
    (and warn_only would let them through); torch.empty need not be filled either."""
    from mixnmt import determinism

    determinism.setup(seed=1, deterministic=True)
    cuda = torch.backends.cuda
    assert not (cuda.flash_sdp_enabled() or cuda.mem_efficient_sdp_enabled() or cuda.cudnn_sdp_enabled())
    assert cuda.math_sdp_enabled()
    assert torch.utils.deterministic.fill_uninitialized_memory is False


@pytest.mark.parametrize("name", TINY_MODELS)
def test_a_training_step_never_waits_for_the_device(name):
    """No scalar read (.item(), float(), bool()) and no nonzero or boolean indexing in a
    training step: on a GPU each would wait for the device. A packed GRU encoder reads its
    PackedSequence's batch sizes twice, but those live on the host by construction."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from mixnmt.models import build, resolve
    from mixnmt.models.recurrent import BiGRU

    class Waits(TorchDispatchMode):
        count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = str(func)
            self.count += any(w in name for w in ("_local_scalar_dense", "nonzero", "masked_select"))
            return func(*args, **(kwargs or {}))

    arch, hparams = resolve(name, TINY_MODELS[name])
    model = build(arch, hparams, 40, 40, True)
    trainer = Trainer(model, train_config(), torch.device("cpu"))
    first, second = synthetic_batches(40, 2)
    trainer.train_step(first)
    with Waits() as waits:
        trainer.train_step(second)
    assert waits.count <= 2 * sum(isinstance(m, BiGRU) for m in model.modules())  # packed GRUs' host reads


@pytest.mark.parametrize("name", sorted(TINY_MODELS))
def test_decay_of_matrices_only_leaves_vectors_undecayed(name):
    """`decay: matrices` (nanoGPT's choice): one step with no gradient, only the weight
    decay, shrinks every 2-D weight and leaves every bias, gain and other vector as it was;
    `decay: all` shrinks them all."""
    arch, hparams = resolve(name, TINY_MODELS[name])
    for decay in ("matrices", "all"):
        model = build(arch, hparams, 40, 40, True)
        trainer = Trainer(model, train_config(decay=decay, weight_decay=0.5, warmup=0), torch.device("cpu"))
        before = {k: p.detach().clone() for k, p in model.named_parameters()}
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        trainer.optimizer.step()
        for k, p in model.named_parameters():
            shrunk = p.abs().sum() < before[k].abs().sum() or not before[k].any()  # zeros stay
            unchanged = torch.equal(p, before[k])
            assert shrunk if decay == "all" or p.dim() >= 2 else unchanged, (decay, k, p.dim())


def test_progress_at_the_terminal_counts_to_max_steps(files, capsys, monkeypatch):
    """Under Snakemake a job's standard output reaches the terminal: a line per model says
    where it is, with the total and the time left that max_steps allows (not the epoch's).
    A line counts the step it follows: on a clock where each step takes a second, the
    first line's speed is the first batch's tokens a second, not a step's tokens over no
    time (4e12 tokens/s, "about 0 s left" at step 1 before)."""
    import mixnmt.train

    clock = itertools.count()  # perf_counter: a second a call, so a second a step
    monkeypatch.setattr(
        mixnmt.train,
        "time",
        SimpleNamespace(perf_counter=lambda: float(next(clock)), monotonic=time.monotonic),
    )
    monkeypatch.setattr(mixnmt.train, "SHOW_EVERY", 0.0)  # a line every step, however few settle
    run(files, epochs=40, max_steps=5)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"{FAST} seed ")]
    steps = [int(line.split(", step ")[1].split("/")[0]) for line in lines]
    assert steps == [1, 2, 3, 4, 5, 5] and all("/5, loss " in line for line in lines)  # and validation's
    assert all(line.startswith(f"{FAST} seed 1: epoch 1/40, step ") for line in lines)  # 5 < one epoch
    assert [line.split("tokens/s, ")[1] for line in lines[:5]] == [f"about {5 - s} s left" for s in steps[:5]]
    speeds = [int(line.split(", ")[-2].split()[0]) for line in lines]
    assert 0 < speeds[0] < 1000 and lines[-1].endswith("tokens/s, about 0 s left")  # tiny batches


def affordable(name: str) -> bool:
    """Whether the bf16 test trains tiny model `name`: not a second-order cell (mixture's
    cell twice over: 3 minutes here) nor the latent model (GRU cells as attention's, its
    mixture's log-sum-exp in fp32 anyway: 2.5 minutes), to keep CI under its 20 minutes."""
    cls = REGISTRY[resolve(name, TINY_MODELS[name])[0]]
    return getattr(getattr(cls, "Cell", None), "order", 1) == 1 and not issubclass(cls, Latent)


def bf16_case(name: str):
    """Tiny model `name` as a case of the bf16 test. Where the CPU emulates bf16 (there
    `auto` trains in fp32, and bf16 only when insisted on) a run takes 5-20 times fp32's:
    the test trains the fast model only, and says so of the others (a GRU's dtypes under
    CPU autocast: tests/test_models.py)."""
    emulated = not native_bf16(pick_device())
    why = "bf16 is emulated on this CPU: the fast model stands for the rest"
    return pytest.param(name, marks=pytest.mark.skipif(emulated and name != FAST, reason=why))


@pytest.mark.slow(seconds=60)  # 35-115 s beside another test where the CPU emulates bf16
@pytest.mark.parametrize("name", [bf16_case(name) for name in TINY_MODELS if affordable(name)])
def test_bf16_trains_the_tiny_corpus_within_the_fp32_seeds_spread(name, files, tmp_path):
    """Mixed precision (bf16 autocast, the CPU's default where it has AVX-512 BF16) moves
    the validation loss after the same updates less than the seed does: each seed's bf16
    run lands closer to its fp32 run than the fp32 seeds are to each other, and their mean
    within the fp32 seeds' range. Each run records its precision, which its fingerprint
    and its translations' autocast follow."""
    seeds, losses = (1, 2, 3), {}
    for setting in ("fp32", "bf16"):
        for seed in seeds:
            out = elsewhere(files, tmp_path / f"{setting}{seed}")
            config = TrainConfig(**{**CONFIG, "epochs": 6, "seed": seed, "precision": setting})
            train(name, TINY_MODELS[name], config, out)
            losses[setting, seed] = pd.read_csv(out.metrics, sep="\t").valid_loss.iloc[-1]
            manifest = json.loads(out.manifest.read_text())
            assert manifest["compute"]["precision"] == setting
            assert manifest["definition"]["train"].get("precision", "fp32") == setting
            inference = checkpoint.load_for_inference(out.checkpoint, files.spm)
            assert inference.dtype == autocast_dtype(inference.device, setting)
    fp32 = [losses["fp32", seed] for seed in seeds]
    bf16 = [losses["bf16", seed] for seed in seeds]
    spread = max(fp32) - min(fp32)
    assert all(abs(b - f) < spread for b, f in zip(bf16, fp32)), (fp32, bf16)
    assert min(fp32) <= sum(bf16) / len(bf16) <= max(fp32), (fp32, bf16)


@pytest.mark.parametrize(
    "device, native, setting, expected",
    [
        ("cpu", True, "auto", torch.bfloat16),  # AVX-512 BF16 or AMX
        ("cpu", False, "auto", None),  # bf16 would be emulated: fp32
        ("cpu", False, "bf16", torch.bfloat16),  # unless asked for
        ("cpu", True, "fp32", None),
        ("cuda", True, "auto", torch.bfloat16),
        ("cuda", False, "auto", torch.float16),  # a GPU without bf16: fp16, the loss scaled
        ("cuda", False, "bf16", torch.float16),
        ("cuda", True, "fp32", None),
    ],
)
def test_autocast_follows_the_precision_setting_and_what_the_device_computes(
    monkeypatch, device, native, setting, expected
):
    import mixnmt.device

    monkeypatch.setattr(mixnmt.device, "native_bf16", lambda d: native)
    assert autocast_dtype(torch.device(device), setting) == expected


def test_kernel_caches_are_bounded_unless_the_environment_sizes_them(monkeypatch):
    unset, sized = KERNEL_CACHES
    monkeypatch.delenv(unset, raising=False)
    monkeypatch.setenv(sized, "7")
    bound_kernel_caches()
    assert (os.environ[unset], os.environ[sized]) == (str(KERNEL_CACHES[unset]), "7")


GROWTH = """
import torch
from mixnmt.device import ready_memory
ready_memory()  # after torch's import, as mixnmt's commands call it
rss = lambda: int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
linear = torch.nn.Linear(256, 768)
with torch.autocast("cpu", dtype=torch.bfloat16):
    linear(torch.randn(8, 256))
    start = rss()
    for rows in range(1, 301):  # a kernel for each shape
        linear(torch.randn(rows, 256)).sum().item()
print(rss() - start)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads the process's memory from /proc")
@pytest.mark.skipif(
    not torch.ops.mkldnn._is_mkldnn_bf16_supported(), reason="oneDNN computes no bf16 products on this CPU"
)
def test_bounded_kernel_caches_keep_bf16_products_of_new_shapes_from_growing_the_process():
    """bf16 products of 300 shapes grow a process less than half as much with the caches
    bounded as at oneDNN's default of 1,024 kernels each (63 MB against 200 on an AMD EPYC
    with AVX-512 BF16)."""

    def growth(**caches: int) -> float:
        env = {k: v for k, v in os.environ.items() if k not in KERNEL_CACHES} | {
            k: str(v) for k, v in caches.items()
        }
        run = subprocess.run([sys.executable, "-c", GROWTH], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return float(run.stdout)

    bounded, default = growth(), growth(**dict.fromkeys(KERNEL_CACHES, 1024))
    assert bounded < default / 2, (bounded, default)


@pytest.mark.parametrize(
    "setting, native, warned",
    [
        ("bf16", False, True),  # emulated: several times slower than fp32
        ("bf16", True, False),
        ("auto", False, False),  # auto is fp32 there
        ("fp32", False, False),
    ],
)
def test_training_in_bf16_on_a_cpu_that_emulates_it_says_so_and_how_to_train_in_fp32(
    files, monkeypatch, caplog, setting, native, warned
):
    import mixnmt.device

    if pick_device().type != "cpu":
        pytest.skip("a GPU trains here")
    monkeypatch.setattr(mixnmt.device, "native_bf16", lambda d: native)
    with caplog.at_level("WARNING"):
        run(files, precision=setting, max_steps=1)
    said = [r.getMessage() for r in caplog.records if "emulates bf16" in r.getMessage()]
    assert len(said) == warned
    assert not warned or "--config 'train={precision: fp32}'" in said[0]
