"""Faults and bad input, met as a hostile but fair user meets them: every case exits with
status 1 and one line naming the file or key and what was expected, leaves no output or
temporary file behind, and a rerun after fixing the input succeeds without cleanup.
(Configuration errors: test_workflow.py; a signal as training ends: test_train.py.)"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
import torch

from conftest import CONFIG, FAST, TINY_MODELS
from mixnmt import MixnmtError, checkpoint, tokenize
from mixnmt.cli import main
from mixnmt.config import TrainConfig
from mixnmt.download import download
from mixnmt.figures import FIGURES
from mixnmt.files import sha256sum
from mixnmt.inputs import INPUTS
from mixnmt.paths import METRICS
from mixnmt.tables import TABLES


def fails(capsys, argv: list, *named: object) -> str:
    """`mixnmt ARGV` exits with 1 and one line that names every one of `named`."""
    assert main([str(a) for a in argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"mixnmt {argv[0]}: error: "), err
    assert all(str(n) in err for n in named), err
    return err


def succeeds(capsys, argv: list) -> None:
    assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
    capsys.readouterr()


def leftovers(folder: Path) -> list[Path]:
    """Temporary files of interrupted or failed writes under `folder`."""
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


@pytest.fixture
def world(tiny_source, tiny_spm, random_checkpoint, tmp_path) -> dict[str, Path]:
    """Valid inputs of every command (`good/`), and an empty folder for outputs (`out/`)."""
    good = tmp_path / "good"
    good.mkdir()
    for split in ("train", "valid", "test_a"):
        for lang in ("en", "de"):
            shutil.copy(tiny_source / f"{split}.{lang}", good / f"{split}.{lang}")
            tokenize.encode_file(tiny_spm, good / f"{split}.{lang}", good / f"{split}.{lang}.ids")
    metrics = good / "metrics.tsv"
    metrics.write_text("\t".join(METRICS) + "\n" + "\t".join(["1"] * len(METRICS)) + "\n")
    (tmp_path / "out").mkdir()
    return {"good": good, "out": tmp_path / "out", "spm": tiny_spm, "checkpoint": random_checkpoint}


def train_argv(w: dict[str, Path], train_src: Path, **config: object) -> list:
    good, out = w["good"], w["out"]
    settings = {**TrainConfig.values(CONFIG | {"max_steps": 3}, seed=1), "epochs": 1, **config}
    return ["train", "--model", FAST, "--threads", "1", "--hparams", json.dumps(TINY_MODELS[FAST]),
            "--config", json.dumps(settings), "--train", train_src, good / "train.de.ids",
            "--valid", good / "valid.en.ids", good / "valid.de.ids", "--spm", w["spm"], w["spm"],
            "--checkpoint", out / "model.pt", "--metrics", out / "metrics.tsv",
            "--manifest", out / "manifest.json", "--state", out / "resume.pt"]  # fmt: skip


def inputs_argv(kinds: tuple[str, ...], path: Path) -> list:
    """`--<kind> PATH` (or MODEL=PATH) for each kind of a figure or table."""
    return [a for kind in kinds for a in (f"--{kind}", f"m={path}" if INPUTS[kind].per_model else path)]


def decoding() -> str:
    return json.dumps(CONFIG["decode"])


# command -> (its arguments with the input at M, the good input that fixes it, its output)
COMMANDS = {
    "prepare": (
        lambda w, m: ["prepare", m, w["good"] / "train.de", w["out"] / "c.en", w["out"] / "c.de"],
        "train.en", "c.en",
    ),
    "spm-train": (
        lambda w, m: ["spm-train", "--input", m, "--model", w["out"] / "m.model", "--vocab-size", 40,
                      "--model-type", "unigram", "--character-coverage", 1.0, "--seed", 1],
        "train.en", "m.model",
    ),
    "spm-encode": (
        lambda w, m: ["spm-encode", "--model", w["spm"], m, w["out"] / "x.ids"],
        "test_a.en", "x.ids",
    ),
    "train": (lambda w, m: train_argv(w, m), "train.en.ids", "model.pt"),
    "translate": (
        lambda w, m: ["translate", "--checkpoint", w["checkpoint"], "--spm", w["spm"],
                      "--config", decoding(), m, w["out"] / "t.txt"],
        "test_a.en.ids", "t.txt",
    ),
    "score": (
        lambda w, m: ["score", "--model", "m", "--testset", "t", "--seed", 1,
                      m, w["good"] / "test_a.de", w["out"] / "s.json"],
        "test_a.de", "s.json",
    ),
    "significance": (
        lambda w, m: ["significance", "--testset", "t", "--references", w["good"] / "test_a.de",
                      "--baseline", "a", "--resamples", 10, "--seed", 1, "--output", w["out"] / "sig.json",
                      f"a={w['good'] / 'test_a.de'}", f"b={m}"],
        "test_a.de", "sig.json",
    ),
    "lengths": (
        lambda w, m: ["lengths", "--testset", "t", "--sources", w["good"] / "test_a.en",
                      "--references", w["good"] / "test_a.de", "--edges", 5, "--resamples", 10,
                      "--output", w["out"] / "l.tsv", f"a={m}"],
        "test_a.de", "l.tsv",
    ),
    "table": (
        lambda w, m: ["table", "curves", *inputs_argv(TABLES["curves"].inputs, m),
                      "--output", w["out"] / "curves.tsv"],
        "metrics.tsv", "curves.tsv",
    ),
    "plot": (
        lambda w, m: ["plot", "learning_curves", *inputs_argv(FIGURES["learning_curves"].inputs, m),
                      "--output", w["out"] / "curves.png"],
        "metrics.tsv", "curves.png",
    ),
}  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_input_is_named_and_providing_it_is_enough(command, world, capsys, tmp_path):
    argv, good, output = COMMANDS[command]
    missing = tmp_path / "missing" / good
    fails(capsys, argv(world, missing), missing, "No such file")
    assert not list(world["out"].iterdir())
    missing.parent.mkdir()
    shutil.copy(world["good"] / good, missing)
    succeeds(capsys, argv(world, missing))
    assert (world["out"] / output).exists() and not leftovers(tmp_path)


@pytest.mark.parametrize(
    "text, message",
    [
        (b"", "not a readable tab-separated table (No columns to parse from file)"),
        (b"epoch\tstep\n1\t10\n", "expected the columns epoch, step, train_loss"),
        (b"epoch\xff\tstep\n1\t10\n", "not a readable tab-separated table ('utf-8' codec can't decode"),
    ],
)
def test_a_malformed_metrics_table_is_named_with_what_was_expected(text, message, world, capsys):
    metrics = world["good"] / "metrics.tsv"
    metrics.write_bytes(text)
    argv = [
        "table",
        "curves",
        *inputs_argv(TABLES["curves"].inputs, metrics),
        "--output",
        world["out"] / "c.tsv",
    ]
    fails(capsys, argv, metrics, message)
    assert not list(world["out"].iterdir())


def test_a_truncated_sentencepiece_model_is_named_and_how_to_rebuild_it(world, capsys):
    truncated = world["out"].parent / "truncated.model"
    truncated.write_bytes(world["spm"].read_bytes()[:1000])
    argv = ["spm-encode", "--model", truncated, world["good"] / "test_a.en", world["out"] / "x.ids"]
    fails(capsys, argv, truncated, "not a readable SentencePiece model", "delete it and rerun")
    assert not list(world["out"].iterdir())


def test_the_report_names_a_missing_input(world, capsys, tmp_path):
    missing = tmp_path / "missing.tsv"
    argv = ["report", "--experiment", "x", "--config", "{}", "--scores", missing, "--significance", missing,
            "--lengths", missing, "--manifests", missing, "--figures", missing, "--tables", missing,
            "--captions", tmp_path, "--output", world["out"] / "report.html"]  # fmt: skip
    fails(capsys, argv, missing, "No such file")
    assert not list(world["out"].iterdir())


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("epochs", "x", "train.epochs: 'x' is not of type 'integer'"),
        ("betas", [0.9, "a"], "train.betas.1: 'a' is not of type 'number'"),
        ("max_steps", 2.5, "train.max_steps: 2.5 is not of type 'integer', 'null'"),
        ("lr", 0, "train.lr: 0 is less than or equal to the minimum of 0"),  # bounds: the schema's
    ],
)
def test_a_training_setting_of_the_wrong_type_is_named(key, value, message, world, capsys):
    fails(capsys, train_argv(world, world["good"] / "train.en.ids", **{key: value}), message)
    assert not list(world["out"].iterdir())


def test_an_id_outside_the_vocabulary_is_named_with_its_line(world, capsys):
    ids = world["out"].parent / "bad.ids"
    ids.write_text("5 6\n7 99999 8\n")
    argv = COMMANDS["translate"][0](world, ids)
    fails(capsys, argv, f"{ids}: line 2: id 99999 is outside the vocabulary (0..63)")
    assert not list(world["out"].iterdir())
    shutil.copy(world["good"] / "test_a.en.ids", ids)
    succeeds(capsys, argv)


def spoil(payload: dict, how: str) -> dict:
    if how == "no weights":
        return {**payload, "state_dict": {}}
    if how == "no vocabulary":
        return {k: v for k, v in payload.items() if k != "vocab"} | {
            "vocab": {"src": payload["vocab"]["src"]}
        }
    name, weight = next(iter(payload["state_dict"].items()))  # "wrong shape"
    return {**payload, "state_dict": {**payload["state_dict"], name: torch.zeros(3, *weight.shape[1:])}}


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("no weights", "its weights do not fit its"),
        ("no vocabulary", "not a model checkpoint (no record of its vocabularies)"),
        ("wrong shape", "its weights do not fit its"),
    ],
)
def test_a_malformed_checkpoint_is_refused_in_one_line(how, message, world, capsys):
    good = world["checkpoint"]
    spoilt = good.with_name("spoilt.pt")
    checkpoint.write(spoilt, spoil(checkpoint.read(good), how))
    argv = COMMANDS["translate"][0](world, world["good"] / "test_a.en.ids")
    argv[argv.index("--checkpoint") + 1] = spoilt
    fails(capsys, argv, f"{spoilt}: {message}")
    assert not list(world["out"].iterdir())
    shutil.copy(good, spoilt)
    succeeds(capsys, argv)


class Payload:
    """What a malicious checkpoint would hold: an object whose unpickling runs a command."""

    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_a_pickle_payload_is_refused_in_one_line_that_never_advises_unsafe_loading(
    world, capsys, monkeypatch
):
    monkeypatch.chdir(world["out"].parent)
    evil = world["out"].parent / "evil.pt"
    torch.save({**checkpoint.read(world["checkpoint"]), "extra": Payload()}, evil)
    argv = COMMANDS["translate"][0](world, world["good"] / "test_a.en.ids")
    argv[argv.index("--checkpoint") + 1] = evil
    err = fails(capsys, argv, evil, "refused: it holds the Python object posix.system")
    assert "weights_only" not in err
    assert not list(world["out"].iterdir()) and not Path("pwned").exists()


def test_weights_garbled_on_disk_are_refused_and_the_training_manifest_records_the_file(world, capsys):
    good = world["checkpoint"]
    garbled = good.with_name("garbled.pt")
    data = bytearray(good.read_bytes())
    weight = next(iter(checkpoint.read(good)["state_dict"].values()))
    start = data.find(weight.numpy().tobytes())  # the weights are stored raw, uncompressed
    assert start > 0
    data[start : start + 64] = bytes(b ^ 0xFF for b in data[start : start + 64])
    garbled.write_bytes(bytes(data))
    argv = COMMANDS["translate"][0](world, world["good"] / "test_a.en.ids")
    argv[argv.index("--checkpoint") + 1] = garbled
    fails(capsys, argv, garbled, "corrupted (its tensors do not match the sha256 recorded")
    assert not list(world["out"].iterdir())

    succeeds(capsys, train_argv(world, world["good"] / "train.en.ids"))
    manifest = json.loads((world["out"] / "manifest.json").read_text())
    model = world["out"] / "model.pt"
    assert manifest["checkpoint"] == {"path": str(model), "sha256": sha256sum(model)}


def test_an_unreadable_state_is_moved_aside_and_training_starts_afresh(world, capsys, caplog):
    state = world["out"] / "resume.pt"
    state.write_bytes(b"PK\x03\x04 not a whole zip archive")
    succeeds(capsys, train_argv(world, world["good"] / "train.en.ids"))
    aside = world["out"] / "resume.pt.unreadable"
    assert aside.read_bytes() == b"PK\x03\x04 not a whole zip archive" and not state.exists()
    assert f"moved it to {aside} and starting afresh" in caplog.text
    assert (world["out"] / "model.pt").exists()


def test_empty_corpora_are_refused_where_they_enter(world, capsys, tmp_path):
    empty_en, empty_de, nothing = tmp_path / "empty.en", tmp_path / "empty.de", tmp_path / "nothing"
    empty_en.write_text("\n\n")  # lines, but no pair with two sides
    empty_de.write_text("\n\n")
    nothing.write_text("")
    argv = ["prepare", "--max-words", 80, empty_en, empty_de, world["out"] / "c.en", world["out"] / "c.de"]
    fails(capsys, argv, empty_en, empty_de, "no sentence pairs")
    argv_test = ["prepare", empty_en, empty_de, world["out"] / "t.en", world["out"] / "t.de"]
    fails(capsys, argv_test, "no sentence pairs")
    score = [
        "score",
        "--model",
        "m",
        "--testset",
        "t",
        "--seed",
        1,
        nothing,
        nothing,
        world["out"] / "s.json",
    ]
    fails(capsys, score, f"{nothing}: no reference sentences to score against")
    assert not list(world["out"].iterdir())
    shutil.copy(world["good"] / "train.en", empty_en)
    shutil.copy(world["good"] / "train.de", empty_de)
    succeeds(capsys, argv)


def test_temporary_files_of_killed_writers_go_with_the_next_write(world, capsys):
    """SIGKILL leaves `.<name>.<random>.tmp` files; the rerun that writes the same outputs
    removes them, the training state's included."""
    out = world["out"]
    orphans = [out / ".t.txt.k1l2x9.tmp", out / ".resume.pt.a8b7c6.tmp", out / ".model.pt.q1w2e3.tmp"]
    for orphan in orphans:
        orphan.write_bytes(b"half a file")
    succeeds(capsys, COMMANDS["translate"][0](world, world["good"] / "test_a.en.ids"))
    succeeds(capsys, train_argv(world, world["good"] / "train.en.ids", save_every=1))
    assert not leftovers(out) and not (out / "resume.pt").exists()


# --- a full disk -------------------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KiB tmpfs, filled up; yields (folder, free) where free() makes room again."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk needs a tmpfs: run the tests as root to include these cases")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    filler = mount / "filler"
    try:
        with contextlib.suppress(OSError), open(filler, "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        yield mount, lambda: filler.unlink()
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_is_one_line_naming_the_file(world, capsys, full_disk):
    disk, free = full_disk
    world["out"] = disk / "out"
    cases = [
        (COMMANDS["prepare"][0](world, world["good"] / "train.en"), disk / "out" / "c.en"),
        (COMMANDS["translate"][0](world, world["good"] / "test_a.en.ids"), disk / "out" / "t.txt"),
        (COMMANDS["score"][0](world, world["good"] / "test_a.de"), disk / "out" / "s.json"),
    ]
    for argv, output in cases:
        fails(capsys, argv, output, "could not write (No space left on device)")
    assert not leftovers(disk) and sorted(p.name for p in disk.rglob("*") if p.is_file()) == ["filler"]
    free()
    for argv, output in cases:
        succeeds(capsys, argv)
        assert output.exists()


def test_a_full_disk_is_not_retried_as_if_it_were_the_network(world, full_disk, caplog):
    disk, _ = full_disk
    source = world["good"] / "train.en"
    digest = sha256sum(source)
    with pytest.raises(MixnmtError, match=r"train.en: could not write \(No space left on device\)"):
        download(source.as_uri(), disk / "train.en", digest, source.stat().st_size, backoff=0)
    assert "retrying" not in caplog.text and not leftovers(disk)


# --- downloads ---------------------------------------------------------------------------


class Dribble(http.server.BaseHTTPRequestHandler):
    """Sends a byte every 0.1 s, forever (as far as a test cares)."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(600):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)

    def log_message(self, *args: object) -> None:
        pass


def test_a_download_that_never_ends_stops_at_its_deadline(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Dribble)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/file.gz"
    start = time.monotonic()
    try:
        with pytest.raises(MixnmtError, match=r"file.gz: download from .* did not finish within 1 s"):
            download(url, tmp_path / "file.gz", "0" * 64, 10**6, timeout=5, deadline=1)
    finally:
        server.shutdown()
    assert time.monotonic() - start < 5 and not list(tmp_path.iterdir())


def test_every_command_is_one_entry_with_its_own_small_argument_function():
    """cli.COMMANDS is the one list of subcommands: each `cmd_<name>` of a cli module is
    the entry of one command that names that module, with the function that declares its
    arguments, and each of those builds on its own."""
    import argparse
    import importlib
    import inspect
    import pkgutil

    from mixnmt import cli

    for found in pkgutil.iter_modules(cli.__path__):
        module = importlib.import_module(f"mixnmt.cli.{found.name}")
        runs = {name for name, f in vars(module).items() if name.startswith("cmd_") and inspect.isfunction(f)}
        named = {name for name, command in cli.COMMANDS.items() if command.module == found.name}
        assert runs == {f"cmd_{name.replace('-', '_')}" for name in named}, found.name
    for name, command in cli.COMMANDS.items():
        run, arguments = command.functions(name)
        assert run.__name__ == f"cmd_{name.replace('-', '_')}"
        arguments(argparse.ArgumentParser(prog=name))
        assert len(inspect.getsource(arguments).splitlines()) < 60


def test_every_table_and_figure_is_listed_with_a_whole_line_of_help(capsys):
    """`mixnmt table --help` listed each table by the first line of its builder's
    docstring, cut mid-sentence ("..., with the training run as the unit: each"); tables
    now declare a line of help, as figures do."""
    from mixnmt.cli import main
    from mixnmt.figures import FIGURES
    from mixnmt.tables import TABLES

    for name, table in TABLES.items():
        doc = " ".join((table.build.__doc__ or "").split())
        assert doc == table.help or not doc.startswith(table.help), name
    for command, registry in (("table", TABLES), ("plot", FIGURES)):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        listed = " ".join(capsys.readouterr().out.split())
        for name, spec in registry.items():
            assert len(spec.help) <= 100 and f"{name} {spec.help}" in listed


def test_every_option_of_every_command_says_what_it_takes():
    import argparse

    from mixnmt.cli import parser

    def silent(name: str, p: argparse.ArgumentParser) -> list[str]:
        found = []
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [x for n, sub in action.choices.items() for x in silent(f"{name} {n}", sub)]
            elif not action.help:
                found.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
        return found

    assert silent("mixnmt", parser()) == []


def refused(capsys, argv: list, message: str) -> None:
    """`mixnmt ARGV` stops at its command line (status 2) with `message`, before reading anything."""
    with pytest.raises(SystemExit) as stopped:
        main([str(a) for a in argv])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def contrasts_argv(w: dict[str, Path], resamples: object, *runs: str) -> list:
    return ["contrasts", "--testset", "t", "--references", w["good"] / "test_a.de", "--pairs", "a:b",
            "--resamples", resamples, "--margin", 1, "--statistic", "welch", "--output", w["out"] / "c.json",
            *runs]  # fmt: skip


def with_option(argv: list, option: str, value: str) -> list:
    return [str(a) for a in argv[: argv.index(option) + 1]] + [value] + argv[argv.index(option) + 2 :]


@pytest.mark.parametrize(
    "argv, option, value, expected",
    [  # before, these ran: sacreBLEU took 0 for its default of 1000 resamples; the contrasts
        # ended in an IndexError from an empty bootstrap; the lengths gave a -1.0 interval; the
        # download fetched nothing and exited 0
        (lambda w: COMMANDS["significance"][0](w, w["good"] / "test_a.de"), "--resamples", "0", "a positive"),
        (lambda w: contrasts_argv(w, 10, f"a/seed1={w['good'] / 'test_a.de'}"), "--resamples", "0",
         "a positive"),
        (lambda w: COMMANDS["lengths"][0](w, w["good"] / "test_a.de"), "--resamples", "0", "a positive"),
        (lambda w: ["download", "--sha256", "0" * 64, "--size", 10, "--retries", 4, w["good"],
                    w["out"] / "test_a.de"], "--retries", "-1", "a non-negative"),
        # an infinite margin made every contrast "equivalent"; none (0, -1, nan) made none so
        *[(lambda w: contrasts_argv(w, 10, f"a/seed1={w['good'] / 'test_a.de'}"), "--margin", margin,
           "a positive") for margin in ("inf", "nan", "0", "-1")],
    ],
)  # fmt: skip
def test_a_count_out_of_range_is_refused_at_the_command_line(argv, option, value, expected, world, capsys):
    """Counts and margins are checked as the config's schema checks them (a positive count
    of resamples, a non-negative one of retries, a positive finite margin), whoever calls
    the command."""
    refused(
        capsys, with_option(argv(world), option, value), f"argument {option}: '{value}': expected {expected}"
    )
    assert not list(world["out"].iterdir())


def test_no_numeric_option_takes_what_the_config_schema_refuses():
    """Every integer argument of every command is a count (>= 1) or an index (>= 0), never
    a bare `int`, which takes -3 and hands it on; no number is a bare `float`, which takes
    nan and inf. Checked elsewhere: a setting's option (`--beam`), by the config's schema
    once merged; the indices of the sentences shown, by the package against the test set,
    naming analysis.sentences; the character coverage, by SentencePiece, naming its bounds."""
    import argparse

    from mixnmt.cli import parser

    shown = {"mixnmt prepare --shown", "mixnmt analyse --sentences", "mixnmt spm-train --character-coverage"}

    def bare(p: argparse.ArgumentParser) -> list[str]:
        found = []
        settings = [
            a
            for g in p._action_groups
            if g.title.endswith("(each overrides the config's)")
            for a in g._group_actions
        ]
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [x for sub in action.choices.values() for x in bare(sub)]
            elif action.type in (int, float) and action not in settings:
                found.append(f"{p.prog} {'/'.join(action.option_strings) or action.dest}")
        return found

    assert sorted(bare(parser())) == sorted(shown)


@pytest.mark.parametrize(
    "argv, named",
    [
        (lambda w, a, b: COMMANDS["significance"][0](w, a)[:-2] + [f"a={a}", f"b={a}", f"b={b}"],
         "MODEL=PATH: b"),
        (lambda w, a, b: COMMANDS["lengths"][0](w, a)[:-1] + [f"a={a}", f"a={b}"], "MODEL=PATH: a"),
        (lambda w, a, b: contrasts_argv(w, 10, f"a/seed1={a}", f"b/seed1={a}", f"a/seed1={b}"),
         "MODEL/seedN=PATH: a/seed1"),
        (lambda w, a, b: ["table", "curves", "--metrics", f"m={a}", f"m={b}", "--output", w["out"] / "c.tsv"],
         "--metrics: m"),
    ],
)  # fmt: skip
def test_a_name_given_two_files_is_refused(argv, named, world, capsys):
    """MODEL=PATH lists: a model named twice would keep one of its files and silently
    drop the other."""
    a, b = world["good"] / "test_a.de", world["good"] / "metrics.tsv"
    refused(capsys, argv(world, a, b), f"argument {named} given twice ({a}, {b})")
    assert not list(world["out"].iterdir())


def test_a_file_given_twice_is_refused(world, capsys):
    """Lists of files whose rows are counted (one per run, or per test set): a file given
    twice counted its rows twice (a standard deviation of 0 over one run, at status 0)."""
    a, out = world["good"] / "metrics.tsv", world["out"]
    same = a.parent / ".." / a.parent.name / a.name
    table = ["table", "reliance", "--output", out / "r.tsv", "--reliance_runs", a]
    refused(capsys, [*table, a], f"argument --reliance_runs: {a} given twice")
    refused(capsys, [*table, same], f"argument --reliance_runs: {a} given twice, also as {same}")
    aggregate = ["aggregate", "--scores", a, "--significance", a, "--manifests", a, a]
    outputs = ["--output", out / "s.tsv", "--markdown", out / "s.md", "--metrics", out / "s.json"]
    refused(capsys, [*aggregate, *outputs], f"argument --manifests: {a} given twice")
    # the report names figures by their files' names: of two with one name, one was dropped
    figures = [a.parent / "cost.png", a.parent / "more" / "cost.png"]
    report = ["report", "--experiment", "x", "--config", "{}", "--scores", a, "--captions", a.parent]
    report += [x for kind in ("significance", "lengths", "manifests", "tables") for x in (f"--{kind}", a)]
    assert main([str(x) for x in [*report, "--figures", *figures, "--output", out / "r.html"]]) == 1
    assert f"--figures: two files named cost ({figures[0]}, {figures[1]})" in capsys.readouterr().err
    assert not list(out.iterdir())
