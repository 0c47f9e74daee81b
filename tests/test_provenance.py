"""The code version recorded with every run, score, translation and table."""

import hashlib
import subprocess
from pathlib import Path

import pandas as pd

from mixnmt.provenance import code_version, committed_sha256, git_state, stamped, version


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True)


def test_dirty_means_edited_code_or_config_not_rewritten_results(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "results" / "run").mkdir(parents=True)
    (tmp_path / "src" / "model.py").write_text("x = 1\n")
    (tmp_path / "config.yaml").write_text("seeds: [1]\n")
    (tmp_path / "results" / "run" / "scores.tsv").write_text("bleu\t10\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "init")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True)
    folder = tmp_path / "src"  # asked from a subfolder, as the installed package does

    assert git_state(folder) == {"commit": head.stdout.strip(), "dirty": False}
    (tmp_path / "results" / "run" / "scores.tsv").write_text("bleu\t11\n")  # a rerun rewrote it
    assert git_state(folder)["dirty"] is False
    (tmp_path / "config.yaml").write_text("seeds: [1, 2]\n")
    assert git_state(folder)["dirty"] is True
    git(tmp_path, "checkout", "-q", "config.yaml")
    (tmp_path / "src" / "model.py").write_text("x = 2\n")
    assert git_state(folder)["dirty"] is True


def test_outside_a_checkout_nothing_is_claimed(tmp_path):
    assert git_state(tmp_path) == {"commit": None, "dirty": None}


def test_a_files_committed_texts_are_every_version_its_history_holds(tmp_path):
    """`committed_sha256`: the sha256 of each committed version of a file, not of an edit
    never committed, and none outside a checkout."""
    caption = tmp_path / "report" / "figure.rst"
    caption.parent.mkdir()
    assert committed_sha256(caption) == frozenset()
    git(tmp_path, "init", "-q")
    for text in ("first words\n", "second words\n"):
        caption.write_text(text)
        git(tmp_path, "add", ".")
        git(tmp_path, "commit", "-qm", text)
    caption.write_text("an edit never committed\n")
    committed_sha256.cache_clear()
    assert committed_sha256(caption) == {sha256(b"first words\n"), sha256(b"second words\n")}


def test_a_version_is_the_commit_marked_dirty_for_edited_code():
    assert version({"commit": "abc", "dirty": False}) == "abc"
    assert version({"commit": "abc", "dirty": True}) == "abc+dirty"
    assert version({"commit": None, "dirty": None}) is None


def test_a_stamped_table_ends_with_the_code_version_that_made_it():
    table = stamped(pd.DataFrame({"model": ["a", "b"], "bleu": [1.0, 2.0]}))
    assert list(table.columns) == ["model", "bleu", "commit"] and set(table.commit) == {code_version()}


def test_a_copy_without_git_records_the_commit_it_is_told(tmp_path, monkeypatch):
    """A tree copied to a GPU node has no .git: $MIXNMT_COMMIT names its commit."""
    monkeypatch.delenv("MIXNMT_COMMIT", raising=False)
    assert git_state(tmp_path) == {"commit": None, "dirty": None}
    monkeypatch.setenv("MIXNMT_COMMIT", "0123abc")
    assert git_state(tmp_path) == {"commit": "0123abc", "dirty": None}
    assert version(git_state(tmp_path)) == "0123abc"


def test_a_cpu_run_names_its_processor_and_the_instructions_bf16_runs_on(tmp_path, monkeypatch):
    """bf16 training on a processor with AMX rounds otherwise than on one without: the
    manifest says which processor, what PyTorch dispatched to, and how many threads."""
    import torch

    from mixnmt import manifest

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9R14 96-Core Processor\nflags\t: fpu\n" * 2)
    assert manifest.cpu_model(cpuinfo) == "AMD EPYC 9R14 96-Core Processor"
    assert manifest.cpu_model(tmp_path / "absent") != ""  # elsewhere: what `platform` knows
    monkeypatch.setattr(manifest, "cpu_model", lambda: "Some CPU")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 3)
    assert manifest.device_name(torch.device("cpu")) == "Some CPU, AVX512, AMX (3 threads)"


def test_mixnmt_version_names_the_package_and_the_code_every_output_records(capsys, monkeypatch):
    """`mixnmt --version`, as command-line tools have it: the package's version and the
    commit its outputs record, so that a user can tell which code a run will stamp."""
    import pytest

    from mixnmt.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"mixnmt 0.1.0 (code {code_version()})\n"
    monkeypatch.setattr("mixnmt.provenance.code_version", lambda: None)
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == "mixnmt 0.1.0 (code outside a git checkout)\n"
