"""Trained models as translators: files of ids, raw text, the Python API and the CLI."""

import dataclasses
import io
import re
import sys

import pytest

from conftest import FAST, ROOT, TINY_MODELS, decode_config
from mixnmt import MixnmtError, checkpoint
from mixnmt.cli import main
from mixnmt.files import read_json, read_lines, sha256sum
from mixnmt.provenance import git_state
from mixnmt.tokenize import Tokenizer
from mixnmt.translator import Translator, decode_settings, translate_file


def test_translate_writes_one_line_per_source_line(random_checkpoint, tiny_spm, tmp_path):
    ids = tmp_path / "test.ids"
    ids.write_text("10 11 12\n\n13\n\n14 15\n\n")
    out, record = tmp_path / "out" / "test.txt", tmp_path / "out" / "test.json"
    config = decode_config(beam=2, max_len_b=4)
    translate_file(Translator.load(random_checkpoint, tiny_spm, config, FAST), ids, out, record)
    lines = read_lines(out)
    assert len(lines) == 6
    assert {1, 3, 5} <= {i for i, line in enumerate(lines) if not line}
    # what made it: the code version, every input's sha256, the settings
    made = read_json(record)
    assert made["git"] == git_state() and made["model"] == FAST and made["sentences"] == 6
    assert made["inputs"] == {str(p): sha256sum(p) for p in (random_checkpoint, ids, tiny_spm)}
    assert made["decode"] == dataclasses.asdict(config)


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
        translate_file(Translator.load(random_checkpoint, tiny_spm, decode_config(), model, config), ids, out)
    assert not out.exists()


def test_checkpoint_with_another_vocabulary_is_refused(random_checkpoint, tiny_source, tmp_path):
    from mixnmt import tokenize

    other = tmp_path / "other.model"
    tokenize.train([tiny_source / "train.en"], other, vocab_size=40)
    tok = Tokenizer(other)
    with pytest.raises(MixnmtError, match="trained with a different src vocabulary"):
        checkpoint.load_model(random_checkpoint, tok, tok)


SENTENCES = ["a man sees the dog .", "", "the  child plays\tin the park .", "a dog runs ."]


def test_text_and_ids_translate_alike(random_checkpoint, tiny_spm, tmp_path):
    """The API on raw text gives what the workflow's path (spm-encode, translate_file) gives,
    one line per sentence, after the corpus's whitespace normalisation."""
    config = decode_config(beam=2, max_len_b=4)
    translator = Translator.load(random_checkpoint, tiny_spm, config)
    ids = tmp_path / "test.ids"
    encoded = Tokenizer(tiny_spm).encode(" ".join(s.split()) for s in SENTENCES)
    ids.write_text("".join(" ".join(map(str, line)) + "\n" for line in encoded))
    translate_file(translator, ids, tmp_path / "out.txt")
    text = translator.translate(SENTENCES)
    assert text == read_lines(tmp_path / "out.txt") and len(text) == 4 and text[1] == ""
    assert text[2] == translator.translate(["the child plays in the park ."])[0]


def stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def translate_cli(random_checkpoint, tiny_spm, *extra):
    return main(["translate", "--text", "--checkpoint", str(random_checkpoint),
                 "--spm", str(tiny_spm), str(tiny_spm), *extra])  # fmt: skip


def test_cli_translates_standard_input_line_by_line(random_checkpoint, tiny_spm, monkeypatch, capsys, caplog):
    stdin(monkeypatch, "\n".join(SENTENCES).encode() + b"\n")
    monkeypatch.chdir(ROOT)  # the default decoding settings: config.yaml's
    assert translate_cli(random_checkpoint, tiny_spm) == 0
    out = capsys.readouterr().out
    expected = Translator.load(random_checkpoint, tiny_spm, decode_config()).translate(SENTENCES)
    assert out == "".join(f"{line}\n" for line in expected)
    assert "<stdin>: line 2 is empty; its translation is an empty line" in caplog.text


def test_cli_reads_a_file_and_overlays_the_decoding_settings(random_checkpoint, tiny_spm, tmp_path):
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n")
    (tmp_path / "greedy.yaml").write_text("decode:\n  beam: 1\n")
    status = translate_cli(
        random_checkpoint, tiny_spm, str(tmp_path / "in.txt"), str(tmp_path / "out.txt"),
        "--configfile", str(ROOT / "config.yaml"), str(tmp_path / "greedy.yaml"),
    )  # fmt: skip
    assert status == 0
    expected = Translator.load(random_checkpoint, tiny_spm, decode_config(beam=1)).translate(SENTENCES)
    assert read_lines(tmp_path / "out.txt") == expected


def test_decoding_options_override_the_config(random_checkpoint, tiny_spm, tmp_path, monkeypatch, capsys):
    """`--beam 1 --max-len-b 3` decodes as config.yaml's settings with those two changed,
    and a value outside a setting's bounds is refused naming the setting."""
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n")
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out.txt"
    options = ["--beam", "1", "--max-len-b", "3"]
    assert translate_cli(random_checkpoint, tiny_spm, str(tmp_path / "in.txt"), str(out), *options) == 0
    expected = Translator.load(random_checkpoint, tiny_spm, decode_config(beam=1, max_len_b=3)).translate(
        SENTENCES
    )
    assert read_lines(out) == expected
    assert translate_cli(random_checkpoint, tiny_spm, "--beam", "0") == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "mixnmt translate: error: decode.beam: 0 is less than the minimum of 1"
    )


@pytest.mark.parametrize(
    ("data", "extra", "message"),
    [
        (b"a dog runs .\nein \xff hund\n", [], "<stdin>: invalid UTF-8 at line 2"),
        (b"a dog runs .\n", ["--model", "nonexistent"], f"holds model {FAST!r}, not 'nonexistent'"),
        (
            b"a dog runs .\n",
            ["--configfile", "missing.yaml"],
            "missing.yaml: cannot read the config (No such file or directory)",
        ),
        (
            b"a dog runs .\n" + b"x" * 10**7 + b"\n",
            [],
            "<stdin>: line 2 has 10000000 characters; lines of at most 2000 are translated",
        ),
        (
            b"a dog runs .\n",
            ["--manifest", "made.json"],
            "--manifest records a translated file of source ids",
        ),
    ],
)
def test_bad_input_gets_one_clear_line(
    random_checkpoint, tiny_spm, monkeypatch, capsys, data, extra, message
):
    stdin(monkeypatch, data)
    monkeypatch.chdir(ROOT)
    assert translate_cli(random_checkpoint, tiny_spm, *extra) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and message in captured.err, captured.err


def test_ids_go_from_file_to_file(random_checkpoint, tiny_spm, capsys):
    argv = ["translate", "--checkpoint", str(random_checkpoint), "--spm", str(tiny_spm), str(tiny_spm)]
    assert main(argv) == 1
    assert "for text on standard input or output, add --text" in capsys.readouterr().err


def test_decode_settings_overlay_config_yaml_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    (tmp_path / "a.yaml").write_text("decode:\n  beam: 2\n  length_penalty: 0.5\n")
    (tmp_path / "b.yaml").write_text("decode:\n  beam: 7\n")
    assert decode_settings(tmp_path / "a.yaml", tmp_path / "b.yaml") == decode_config(
        beam=7, length_penalty=0.5
    )
    assert decode_settings(tmp_path / "b.yaml") == decode_config(beam=7)  # on config.yaml, as Snakemake


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        ("decode: {max_len_a: -5}", "decode.max_len_a: -5 is less than the minimum of 0"),
        ("decode: {beam: 0}", "decode.beam: 0 is less than the minimum of 1"),
        ("decode: {batch_size: 0}", "decode.batch_size: 0 is less than the minimum of 1"),
        ("decode: {length_penalty: .nan}", "decode.length_penalty: expected a finite number, got nan"),
        ("decode: {beam: 2.0}", "decode.beam: 2.0 is not of type 'integer'"),
        ("decode: [1]", "decode: [1] is not of type 'object'"),
        ("- 1", "expected a config mapping, got a list"),
    ],
)
def test_decode_settings_are_checked_as_the_workflow_checks_them(overlay, message, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    (tmp_path / "bad.yaml").write_text(overlay + "\n")
    with pytest.raises(MixnmtError, match=re.escape(message)):
        decode_settings(tmp_path / "bad.yaml")


def test_an_alias_bomb_is_refused_in_one_short_line_at_once(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    levels = [
        f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}, *l{i - 1}, *l{i - 1}, *l{i - 1}, *l{i - 1}]"
        for i in range(1, 20)
    ]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("l0: &l0 [lol, lol]\n" + "\n".join(levels) + "\ndecode: {beam: *l19}\n")  # 6**19 values
    with pytest.raises(MixnmtError) as raised:
        decode_settings(bomb)
    assert str(raised.value) == f"{bomb}: expands to more than 100000 values (YAML aliases?); refused"


def test_cli_at_a_terminal_answers_each_line_as_typed(random_checkpoint, tiny_spm, monkeypatch, capsys):
    stdin(monkeypatch, "\n".join(SENTENCES).encode() + b"\n")
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.chdir(ROOT)
    asked = []
    translate = Translator.translate
    monkeypatch.setattr(
        Translator, "translate", lambda self, lines: asked.append(lines) or translate(self, lines)
    )
    assert translate_cli(random_checkpoint, tiny_spm) == 0
    assert asked == [[s] for s in SENTENCES]  # one sentence at a time
    expected = Translator.load(random_checkpoint, tiny_spm, decode_config()).translate(SENTENCES)
    assert capsys.readouterr().out == "".join(f"{line}\n" for line in expected)
