"""Shared fixtures: the tiny synthetic corpus, a SentencePiece model trained on it, and
the models and settings the tests use, taken from the configs (no roster of our own)."""

from __future__ import annotations

import ast
import functools
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import yaml

sys.path.insert(0, str(Path(__file__).parent))
import tinydata  # noqa: E402
from mixnmt.batching import Batch, pad  # noqa: E402
from mixnmt.decode import next_logprobs  # noqa: E402
from mixnmt.models import build, resolve  # noqa: E402
from mixnmt.symbols import BOS, EOS, PAD  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
TINY = yaml.safe_load((ROOT / "tests" / "tiny.yaml").read_text())
TINY_MODELS: dict[str, dict] = TINY["models"]  # small models of every architecture
FAST = "transformer"  # the tiny model that single-model tests train and decode: the quickest learner
# Operators dispatched per decoder step by the tiny recurrent models, as reached, in steps of
# a textbook GRU decoder (19 operators in torch 2.13: 37, 52, 96 and 42): they are
# launch-bound on a GPU, so a change that adds to these is a slowdown (train.compile fuses
# the step instead).
OPS_PER_STEP = {"rnn": 1.95, "mixture": 2.74, "mixture2": 5.06, "attention": 2.22}


def covering(
    settings: dict[str, list], strength: int = 3, allowed: Callable[[dict], bool] = lambda knobs: True
) -> list[dict]:
    """Combinations of the settings in which every `strength` knobs (or all of them, if
    fewer) take every combination of their values at least once that some `allowed`
    combination has: a covering array, greedily from the allowed part of the full
    product, first combination first."""
    import itertools

    names = list(settings)
    t = min(strength, len(names))

    def covers(values: tuple) -> set:
        return {tuple((k, values[k]) for k in ks) for ks in itertools.combinations(range(len(names)), t)}

    product = [v for v in itertools.product(*settings.values()) if allowed(dict(zip(names, v)))]
    uncovered = set().union(*map(covers, product))
    chosen = []
    while uncovered:
        best = max(product, key=lambda values: len(covers(values) & uncovered))
        chosen.append(dict(zip(names, best)))
        uncovered -= covers(best)
    return chosen


def knob_variants(models: dict[str, dict]) -> dict[str, dict]:
    """Every tiny model, and for those with knobs (enum and boolean hyperparameters, and
    counts that may be 0) the combinations of their settings in which every three knobs
    (two, if there are only three with more than 8 combinations) take all the joint
    settings the model accepts (`covering`; rnn's `project` needs `bridge: false`), named like
    "mixture[components=0,bidirectional=True,source=states,...]"."""
    from mixnmt import MixnmtError
    from mixnmt.models import check, hyperparameter_schemas

    def accepted(name: str, entry: dict, knobs: dict) -> bool:
        try:
            check(name, {**entry, **knobs})
        except MixnmtError:
            return False
        return True

    variants = {}
    for name, entry in models.items():
        arch, hparams = resolve(name, entry)
        settings = {}
        for key, schema in hyperparameter_schemas(arch).items():
            if "enum" in schema:
                settings[key] = schema["enum"]
            elif schema.get("type") == "boolean":
                settings[key] = [True, False]
            elif schema.get("type") == "integer" and schema.get("minimum") == 0:
                settings[key] = [0, hparams[key]]
        variants[name] = entry
        # three knobs with many settings (latent's feed, top_k, candidates): every pair of
        # them, 9 of the 18 combinations, since strength 3 would be the whole product; three
        # switches (rnn's source, bridge, project) are the whole product, 5 of 8 accepted
        strength = 2 if len(settings) == 3 and math.prod(map(len, settings.values())) > 8 else 3
        allowed = functools.partial(accepted, name, {"arch": arch, **entry})
        for knobs in covering(settings, strength, allowed) if settings else []:
            if any(hparams[k] != v for k, v in knobs.items()):
                variants[f"{name}[{','.join(f'{k}={v}' for k, v in knobs.items())}]"] = {
                    "arch": arch,
                    **entry,
                    **knobs,
                }
    return variants


VARIANTS = knob_variants(TINY_MODELS)  # the models the contract tests hold to


def tiny_model(name: str, vocab: int, seed: int = 0, **overrides):
    """(architecture, hyperparameters, model) of tiny model `name` (with `overrides`), in eval mode."""
    arch, hparams = resolve(name, {**VARIANTS[name], **overrides})
    torch.manual_seed(seed)
    return arch, hparams, build(arch, hparams, vocab, vocab, shared_vocab=True).eval()


def train_config(**overrides):
    """config.yaml's training settings (and seed, step cap) with `overrides`."""
    from mixnmt.config import TrainConfig

    return TrainConfig(**{**TrainConfig.values(CONFIG, CONFIG["seeds"][0]), **overrides})


def decode_config(**overrides):
    """config.yaml's decoding settings with `overrides`."""
    from mixnmt.decode import DecodeConfig

    return DecodeConfig(**{**CONFIG["decode"], **overrides})


# --- helpers the test modules share (none imports another) ----------------------------

VOCAB = 40  # the vocabulary of `make` and `batch`


def make(name, shared=True, seed=0):
    arch, hparams = resolve(name, VARIANTS[name])
    torch.manual_seed(seed)
    return build(arch, hparams, VOCAB, VOCAB, shared_vocab=shared)


def batch(seed=0):
    """Three sentences of different lengths, right-padded."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (3, 9), generator=g)
    src[1, 6:] = PAD
    src[2, 3:] = PAD
    tgt = torch.randint(4, VOCAB, (3, 7), generator=g)
    tgt[:, 0] = BOS
    return src, tgt


def recurrent_dtypes(model, src, tgt, device_type: str, dtype: torch.dtype) -> dict[str, torch.dtype]:
    """The dtype of every GRU's output during a training forward pass under autocast."""
    seen = {}

    def record(name):
        def hook(module, args, output):
            out = output[0] if isinstance(output, tuple) else output
            seen[name] = getattr(out, "data", out).dtype

        return hook

    for name, module in model.named_modules():
        if isinstance(module, torch.nn.RNNBase | torch.nn.RNNCellBase):
            module.register_forward_hook(record(name))
    with torch.autocast(device_type, dtype=dtype):
        model.train()(src, tgt).float().sum().backward()
    return seen


def with_grus() -> list[str]:
    """The tiny models that have a GRU."""
    rnn = torch.nn.RNNBase | torch.nn.RNNCellBase
    return [name for name in TINY_MODELS if any(isinstance(m, rnn) for m in make(name).modules())]


def synthetic_batches(vocab: int, n: int, seed: int = 0) -> list[Batch]:
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n):
        lengths = torch.randint(5, 30, (32, 2), generator=g).tolist()
        src = [torch.randint(4, vocab, (s,), generator=g).tolist() + [EOS] for s, _ in lengths]
        tgt = [torch.randint(4, vocab, (t,), generator=g).tolist() for _, t in lengths]
        batches.append(Batch(pad(src), pad([[BOS, *t] for t in tgt]), pad([[*t, EOS] for t in tgt])))
    return batches


def sequence_logprob(model, src, tokens, limit):
    """Log-probability of `tokens` + EOS under the search's own next-token rule."""
    state, y, total = model.encode(src), torch.tensor([BOS]), 0.0
    for t, tok in enumerate(tokens + [EOS]):
        logits, state = model.step(state, y)
        total += float(next_logprobs(logits, torch.tensor([t + 1 >= limit]))[0, tok])
        y = torch.tensor([tok])
    return total


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


@pytest.fixture(scope="session")
def tiny_ids(tiny_source, tiny_spm, tmp_path_factory) -> Path:
    """The tiny training and validation text as ids of `tiny_spm`: <split>.en / <split>.de."""
    from mixnmt import tokenize

    folder = tmp_path_factory.mktemp("ids")
    for split in ("train", "valid"):
        for lang in ("en", "de"):
            tokenize.encode_file(tiny_spm, tiny_source / f"{split}.{lang}", folder / f"{split}.{lang}")
    return folder


@pytest.fixture
def random_checkpoint(tiny_spm, tmp_path) -> Path:
    """An untrained checkpoint of the fast tiny model, on the tiny SentencePiece model."""
    from mixnmt import checkpoint
    from mixnmt.tokenize import Tokenizer

    tok = Tokenizer(tiny_spm)
    record = checkpoint.vocab_record(tok)
    path = tmp_path / "model.pt"
    arch, hparams, model = tiny_model(FAST, len(tok), dropout=0.0)
    checkpoint.save(path, FAST, arch, hparams, model, {"src": record, "tgt": record, "shared": True})
    return path


def published() -> list[Path]:
    """The results folders in git (a clone holds no others)."""
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "results"], capture_output=True, text=True)
    folders = (
        {Path(line).parts[1] for line in listed.stdout.splitlines()} if listed.returncode == 0 else set()
    )
    return [ROOT / "results" / name for name in sorted(folders)]


# --- what a `mixnmt` command imports, read from the source -------------------------------


def module_file(module: str) -> Path:
    path = ROOT / "src" / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported(tree: ast.AST, nested: bool = True) -> set[str]:
    """The mixnmt modules a piece of code imports, anywhere in it (also inside functions),
    or with `nested` false only at its top level (what importing a module runs)."""
    found = set()
    for node in ast.walk(tree) if nested else ast.iter_child_nodes(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mixnmt"):
            found.add(node.module)
            found |= {
                f"{node.module}.{a.name}"
                for a in node.names
                if module_file(f"{node.module}.{a.name}").exists()
            }
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("mixnmt")}
    return found


def closure(modules: set[str], nested: bool = True) -> set[str]:
    """`modules`, their packages and everything they import, transitively (with `nested`
    false, only what importing them runs)."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            parts = module.split(".")
            todo += [".".join(parts[:i]) for i in range(1, len(parts))]
            todo += imported(ast.parse(module_file(module).read_text()), nested)
    return seen


def rules() -> list[tuple[str, str, str]]:
    """(rule, environment, mixnmt subcommand) for every rule that runs one."""
    found = []
    for path in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"\n(?=\s*rule\b)", path.read_text()):
            env = re.search(r'conda:\s*(?:"\.\./\.\./envs/(\w+)\.yaml"|(TORCH_ENV))', block)
            command = re.search(r'"mixnmt ([\w-]+)', block)
            name = re.search(r"rule (\w+):|name:\s*f?\"([\w{}]+)\"", block)
            if env and command and name:
                environment = env.group(1) or "torch"  # TORCH_ENV: torch, or torch-cuda (its twin)
                found.append((name.group(1) or name.group(2), environment, command.group(1)))
    return found


CLI = ROOT / "src" / "mixnmt" / "cli"


def cli_definitions() -> dict[str, tuple[str, ast.AST]]:
    """Every top-level function and class of the mixnmt.cli package by its name (each name
    once in the package), with its module."""
    found: dict[str, tuple[str, ast.AST]] = {}
    for path in sorted(CLI.glob("*.py")):
        module = "mixnmt.cli" + ("" if path.stem == "__init__" else f".{path.stem}")
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                assert node.name not in found, f"{node.name} in {found[node.name][0]} and {module}"
                found[node.name] = (module, node)
    return found


def command_modules(command: str, nested: bool = True) -> set[str]:
    """Every mixnmt module `mixnmt <command>` imports: the cli modules that hold its
    `cmd_` and `_arguments` functions and the cli functions and classes they use (with what
    those modules import on import), what those functions import, and everything that
    imports, transitively (with `nested` false, only at their top level: what runs on import)."""
    definitions = cli_definitions()
    stem = command.replace("-", "_")
    todo, reached = [f"cmd_{stem}", f"{stem}_arguments"], set()
    while todo:
        if (name := todo.pop()) not in reached:
            reached.add(name)
            todo += [
                n.id
                for n in ast.walk(definitions[name][1])
                if isinstance(n, ast.Name) and n.id in definitions
            ]
    on_import = closure({"mixnmt.cli"} | {definitions[name][0] for name in reached}, nested=False)
    cli = {m for m in on_import if m == "mixnmt.cli" or m.startswith("mixnmt.cli.")}
    found = on_import - cli
    for name in reached:
        found |= imported(definitions[name][1], nested)
    return cli | closure(found, nested)


def snakemake(
    workdir: Path, *args: str, project: Path = ROOT, path: Path | None = None
) -> subprocess.CompletedProcess:
    """Run the workflow of `project` (with its package) in `workdir`, where config.yaml is
    a copy of the project's; `path` goes first on PATH."""
    first = [str(path)] if path else []
    env = {
        **os.environ,
        "PATH": os.pathsep.join([*first, str(Path(sys.executable).parent), os.environ["PATH"]]),
        "PYTHONPATH": str(project / "src"),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(project / "Snakefile"),
            "-d",
            str(workdir),
            "--cores",
            "2",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.fixture
def workdir(tmp_path) -> Path:
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    return tmp_path


def pytest_configure(config: pytest.Config) -> None:
    """Under `-n auto`, tests go to the workers one at a time rather than in chunks (xdist's
    --maxschedchunk 1), so that the slow ones, collected first, start on different workers;
    and each worker computes on one thread: `-n auto` already runs a worker per core, and two
    workers of two threads each on two cores spend their time waiting on each other (the bf16
    test of two tiny models took 134 s so, 17 s on one thread each)."""
    if getattr(config.option, "maxschedchunk", 1) is None:
        config.option.maxschedchunk = 1
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, longest first: under `-n auto` they start at once, spread over
    the workers, and the many short tests fill in around them."""

    def seconds(item: pytest.Item) -> float:
        slow = item.get_closest_marker("slow")
        return slow.kwargs["seconds"] if slow else 0

    items.sort(key=seconds, reverse=True)
