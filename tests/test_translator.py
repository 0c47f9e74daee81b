"""Trained models as translators: files of ids, raw text, the Python API and the CLI."""

import dataclasses
import io
import json
import logging
import re
import sys

import pytest
import torch

from conftest import FAST, ROOT, TINY_MODELS, decode_config, tiny_model
from mixnmt import MixnmtError, checkpoint
from mixnmt.cli import main
from mixnmt.files import read_json, read_lines, sha256sum
from mixnmt.models import REGISTRY, resolve
from mixnmt.provenance import git_state
from mixnmt.tokenize import Tokenizer
from mixnmt.translator import Translator, decode_settings, pharaoh, translate_file


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
                 "--spm", str(tiny_spm), *extra])  # fmt: skip


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
        "--configfile", str(ROOT / "config.yaml"), "--configfile", str(tmp_path / "greedy.yaml"),
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


def test_nbest_prints_scored_hypotheses_best_first(random_checkpoint, tiny_spm, monkeypatch, capsys, caplog):
    """`--beam 5 --nbest 3`: three INDEX<TAB>SCORE<TAB>TRANSLATION lines per input line, the
    best first and as plain decoding gives it, the scores as the search computed them;
    one empty hypothesis for an empty line, without a made-up score. The model's loading is announced."""
    caplog.set_level(logging.INFO, "mixnmt")
    stdin(monkeypatch, "\n".join(SENTENCES).encode() + b"\n")
    monkeypatch.chdir(ROOT)
    assert translate_cli(random_checkpoint, tiny_spm, "--beam", "5", "--nbest", "3") == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    translator = Translator.load(random_checkpoint, tiny_spm, decode_config(beam=5))
    sources = translator.inference.source.encode(" ".join(s.split()) for s in SENTENCES)
    expected = [
        [str(i), f"{h.score:.4f}", text]
        for i, hyps in enumerate(translator.search(sources, nbest=3))
        for h, text in zip(hyps, translator.detokenise(hyps))
    ]
    assert rows == expected
    assert [sum(row[0] == str(i) for row in rows) for i in range(4)] == [3, 1, 3, 3]
    assert rows[3] == ["1", "nan", ""]  # the empty line: never decoded, so no score
    scores = [float(row[1]) for row in rows if row[0] == "0"]
    assert scores == sorted(scores, reverse=True)
    assert [row[2] for row in rows if row[0] != "1"][::3] == [t for t in translator.translate(SENTENCES) if t]
    assert "loading" in caplog.text and f"{random_checkpoint} on cpu, beam 5, loaded in" in caplog.text
    with pytest.raises(SystemExit):
        translate_cli(random_checkpoint, tiny_spm, "--nbest", "0")
    assert "argument --nbest: '0': expected a positive integer" in capsys.readouterr().err


def test_alignments_hold_one_record_per_line(random_checkpoint, tiny_spm, tmp_path, monkeypatch):
    """`--alignments FILE`: one JSON record per input line, for its best translation: the
    subwords of source and translation (EOS included), and the model's weights along the
    axes it names, each a distribution; an empty line has none."""
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n")
    monkeypatch.chdir(ROOT)
    out, alignments = tmp_path / "out.txt", tmp_path / "alignments.jsonl"
    options = [str(tmp_path / "in.txt"), str(out), "--beam", "2", "--alignments", str(alignments)]
    assert translate_cli(random_checkpoint, tiny_spm, *options) == 0
    records = [json.loads(line) for line in read_lines(alignments)]
    tok = Tokenizer(tiny_spm)
    translations = read_lines(out)
    assert [r["index"] for r in records] == [0, 1, 2, 3]
    assert records[1] == {"index": 1, "score": None, "source": [], "target": [], "axes": {}, "weights": {}}
    for record, sentence, translation in zip(records, SENTENCES, translations):
        if not sentence:
            continue
        assert record["source"] == tok.pieces(tok.encode([" ".join(sentence.split())])[0]) + ["</s>"]
        assert record["target"][-1] == "</s>"
        assert "".join(record["target"][:-1]).replace("\u2581", " ").strip() == translation
        (weights,) = record["weights"].values()  # the Transformer's cross-attention
        axes = record["axes"]["cross_attention"]
        shape = torch.tensor(weights).shape
        assert axes[-2:] == ["target", "source"] and shape[-2:] == (
            len(record["target"]),
            len(record["source"]),
        )
        assert torch.tensor(weights).sum(-1) == pytest.approx(torch.ones(shape[:-1]), abs=1e-3)


def test_pharaoh_links_each_target_word_to_the_source_word_of_most_weight():
    """`pharaoh`: subword weights (a Transformer's averaged over layers and heads) to word
    links "i-j" as whitespace splits source and translation; EOS on either side links nothing."""
    record = {
        "source": ["\u2581a", "\u2581ma", "n", "</s>"],  # words: a, man
        "target": ["\u2581ein", "\u2581mann", "\u2581.", "</s>"],  # words: ein, mann, .
        "axes": {"cross": ["layer", "head", "target", "source"]},
        "weights": {
            "cross": [
                [[[0.9, 0.1, 0, 0], [0, 0.2, 0.7, 0.1], [0, 0, 0.1, 0.9], [0, 0, 0, 1]]],
                [[[0.7, 0.3, 0, 0], [0, 0.6, 0.3, 0.1], [0, 0, 0.3, 0.7], [0, 0, 0, 1]]],
            ]
        },
    }
    # ein: a; mann: "n" (0.5) over "ma" (0.4), both of man; ".": EOS, no link
    assert pharaoh(record, "cross") == "0-0 1-1"
    assert pharaoh({"weights": {}}, "cross") == ""  # an empty line: never decoded


def test_pharaoh_file_has_one_line_per_input_line(random_checkpoint, tiny_spm, tmp_path, monkeypatch):
    """`--pharaoh FILE` beside `--alignments FILE`: the same best translations, one line of
    links per input line, each within the words of its source and translation."""
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n")
    monkeypatch.chdir(ROOT)
    out, alignments, links = tmp_path / "out.txt", tmp_path / "alignments.jsonl", tmp_path / "links.txt"
    options = [str(tmp_path / "in.txt"), str(out), "--alignments", str(alignments), "--pharaoh", str(links)]
    assert translate_cli(random_checkpoint, tiny_spm, *options) == 0
    records = [json.loads(line) for line in read_lines(alignments)]
    (name,) = records[0]["weights"]
    assert read_lines(links) == [pharaoh(record, name) for record in records]
    for line, sentence, translation in zip(read_lines(links), SENTENCES, read_lines(out)):
        pairs = [tuple(map(int, pair.split("-"))) for pair in line.split()]
        assert all(i < len(sentence.split()) and j < len(translation.split()) for i, j in pairs)
    assert read_lines(links)[1] == ""


def test_pharaoh_of_a_model_without_alignment_is_refused_before_decoding(tiny_spm, tmp_path, capsys):
    """A model whose weights are not over source positions cannot align: one line, no file."""
    tok = Tokenizer(tiny_spm)
    record = checkpoint.vocab_record(tok)
    name = next(n for n in TINY_MODELS if REGISTRY[resolve(n, TINY_MODELS[n])[0]].alignment is None)
    arch, hparams, model = tiny_model(name, len(tok), dropout=0.0)
    path = tmp_path / "model.pt"
    checkpoint.save(path, name, arch, hparams, model, {"src": record, "tgt": record, "shared": True})
    (tmp_path / "in.txt").write_text("a dog runs .\n")
    settings = [
        "--beam",
        "2",
        "--length-penalty",
        "1",
        "--max-len-a",
        "1",
        "--max-len-b",
        "5",
        "--batch-size",
        "2",
    ]
    links, out = tmp_path / "links.txt", tmp_path / "out.txt"
    options = [str(tmp_path / "in.txt"), str(out), "--pharaoh", str(links), *settings]
    assert translate_cli(path, tiny_spm, *options) == 1
    said = capsys.readouterr().err
    assert f"{links}: the model of {path} ({type(model).__name__}) has no weights over source" in said
    assert not links.exists() and not out.exists()


def test_settings_without_config_yaml(random_checkpoint, tiny_spm, tmp_path, monkeypatch, capsys):
    """Away from the repository root, every decoding setting given as an option decodes
    without a config file; fewer is refused, naming what is missing."""
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n")
    monkeypatch.chdir(tmp_path)
    assert translate_cli(random_checkpoint, tiny_spm, "in.txt", "out.txt", "--beam", "3") == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"mixnmt translate: error: {random_checkpoint.parent.parent / 'decode.json'}: no decoding settings "
        "beside the checkpoint, and no config.yaml in the working directory; give --configfile, --config, "
        "or every setting (missing: --length-penalty --max-len-a --max-len-b --batch-size)"
    )
    missing = tmp_path / "missing" / "seed1.pt"  # the checkpoint is the fault, not its settings
    assert translate_cli(missing, tiny_spm, "in.txt", "out.txt", "--beam", "3") == 1
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert said == f"mixnmt translate: error: {missing}: not found"
    settings = {"beam": 3, "length_penalty": 0.5, "max_len_a": 1.0, "max_len_b": 4, "batch_size": 2}
    options = [f"--{k.replace('_', '-')}={v}" for k, v in settings.items()]
    assert translate_cli(random_checkpoint, tiny_spm, "in.txt", "out.txt", *options) == 0
    expected = Translator.load(random_checkpoint, tiny_spm, decode_config(**settings)).translate(SENTENCES)
    assert read_lines(tmp_path / "out.txt") == expected
    # or the project's config.yaml by its path, as the Python API takes it too
    assert decode_settings(ROOT / "config.yaml") == decode_config()
    configfile = ["--configfile", str(ROOT / "config.yaml"), "--beam", "3"]
    assert translate_cli(random_checkpoint, tiny_spm, "in.txt", "out.txt", *configfile) == 0


@pytest.mark.parametrize(
    "option",
    [
        ["--length-penalty", "nan"],
        ["--max-len-a", "nan"],
        ["--config", '{"beam": 2, "length_penalty": NaN, "max_len_a": 1, "max_len_b": 5, "batch_size": 2}'],
    ],
)
def test_a_setting_that_is_not_a_number_is_refused(option, random_checkpoint, tiny_spm, tmp_path, capsys):
    """NaN passed every bound: `--length-penalty nan` ranked beams by NaN and printed empty
    translations at status 0. Now the setting is named, and nothing is written."""
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n")
    out = tmp_path / "out.txt"
    assert translate_cli(random_checkpoint, tiny_spm, str(tmp_path / "in.txt"), str(out), *option) == 1
    setting = "length_penalty" if "length" in " ".join(option) else "max_len_a"
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert said.endswith(f"decode.{setting}: expected a finite number, got nan") and not out.exists()


def test_a_checkpoint_carries_its_experiments_decoding_settings(
    random_checkpoint, tiny_spm, tmp_path, monkeypatch, capsys
):
    """The workflow writes an experiment's decoding settings beside its checkpoints
    (`mixnmt decoding`); translate and the Python API decode with them from any directory,
    config files and options still overriding them; a broken file is named."""
    folder = tmp_path / "results" / "exp" / "checkpoints"
    (folder / FAST).mkdir(parents=True)
    saved = folder / FAST / "seed1.pt"
    saved.write_bytes(random_checkpoint.read_bytes())
    carried = {"beam": 2, "length_penalty": 0.5, "max_len_a": 1.0, "max_len_b": 3, "batch_size": 4}
    assert main(["decoding", "--config", json.dumps(carried), str(folder / "decode.json")]) == 0
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no config.yaml here

    def translated(*options: str) -> list[str]:
        assert translate_cli(saved, tiny_spm, str(tmp_path / "in.txt"), "out.txt", *options) == 0
        return read_lines("out.txt")

    def expected(**settings) -> list[str]:
        return Translator.load(saved, tiny_spm, decode_config(**settings)).translate(SENTENCES)

    assert translated() == expected(**carried) != expected()  # config.yaml's beam is 5
    assert Translator.load(saved, tiny_spm).config == decode_config(**carried)
    assert translated("--beam", "1") == expected(**carried | {"beam": 1})
    greedy = tmp_path / "greedy.yaml"
    greedy.write_text("decode:\n  beam: 1\n")
    overlays = ["--configfile", str(ROOT / "config.yaml"), "--configfile", str(greedy)]
    assert translated(*overlays) == expected(beam=1)
    (folder / "decode.json").write_text(json.dumps(carried | {"beam": 0}))
    assert translate_cli(saved, tiny_spm, str(tmp_path / "in.txt"), "out.txt") == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"mixnmt translate: error: {folder / 'decode.json'}: decode.beam: 0 is less than the minimum of 1"
    )
    assert main(["decoding", "--config", json.dumps({"beam": 2}), str(folder / "new.json")]) == 1
    assert "decode.length_penalty: missing setting" in capsys.readouterr().err
    assert not (folder / "new.json").exists()


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
        (
            b"a dog runs .\n",
            ["--nbest", "3", "--beam", "2"],
            "--nbest 3: beam search keeps 2; give --beam 3 or more",
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


def test_ids_go_from_file_to_file(random_checkpoint, tiny_spm, capsys, caplog):
    """Without --text, INPUT and OUTPUT are files: said before anything loads."""
    caplog.set_level(logging.INFO, logger="mixnmt.translate")
    argv = [
        "translate",
        "--checkpoint",
        str(random_checkpoint),
        "--spm",
        str(tiny_spm),
        "--spm",
        str(tiny_spm),
    ]
    assert main(argv) == 1
    assert "for text on standard input or output, add --text" in capsys.readouterr().err
    assert [r.getMessage() for r in caplog.records if r.name == "mixnmt.translate"] == []


def test_a_joint_sentencepiece_model_is_named_once_and_input_follows_it(
    random_checkpoint, tiny_spm, tmp_path, monkeypatch, capsys
):
    """`--spm MODEL INPUT OUTPUT`: one model (a joint one) and the files after it, not three
    models; a third --spm is refused."""
    monkeypatch.chdir(ROOT)
    source = tmp_path / "in.txt"
    source.write_text("\n".join(SENTENCES) + "\n")
    assert translate_cli(random_checkpoint, tiny_spm, str(source), str(tmp_path / "out.txt")) == 0
    assert len((tmp_path / "out.txt").read_text().splitlines()) == len(SENTENCES)
    twice = translate_cli(
        random_checkpoint, tiny_spm, "--spm", str(tiny_spm), str(source), str(tmp_path / "2.txt")
    )
    assert twice == 0 and (tmp_path / "2.txt").read_text() == (tmp_path / "out.txt").read_text()
    capsys.readouterr()
    thrice = ["--spm", str(tiny_spm), "--spm", str(tiny_spm), str(source)]
    assert translate_cli(random_checkpoint, tiny_spm, *thrice) == 1
    assert (
        "--spm: given 3 times; give one joint model, or the source's and the target's"
        in capsys.readouterr().err
    )


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


def test_cli_at_a_terminal_answers_each_line_as_typed(
    random_checkpoint, tiny_spm, monkeypatch, capsys, tmp_path
):
    stdin(monkeypatch, "\n".join(SENTENCES).encode() + b"\n")
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.chdir(ROOT)
    asked = []
    search = Translator.search
    monkeypatch.setattr(
        Translator,
        "search",
        lambda self, sources, nbest=1: asked.append(len(sources)) or search(self, sources, nbest),
    )
    alignments, links, precious = tmp_path / "alignments.jsonl", tmp_path / "links.txt", tmp_path / "keep"
    precious.write_text("keep me\n")
    alignments.symlink_to(precious)  # replaced by the file, never written through
    options = ["--alignments", str(alignments), "--pharaoh", str(links)]
    assert translate_cli(random_checkpoint, tiny_spm, *options) == 0
    assert asked == [1] * len(SENTENCES)  # one sentence at a time
    assert precious.read_text() == "keep me\n" and not alignments.is_symlink()
    records = [json.loads(line) for line in read_lines(alignments)]
    assert [r["index"] for r in records] == [0, 1, 2, 3]
    assert read_lines(links) == [pharaoh(r, next(iter(records[0]["weights"]))) for r in records]
    expected = Translator.load(random_checkpoint, tiny_spm, decode_config()).translate(SENTENCES)
    assert capsys.readouterr().out == "".join(f"{line}\n" for line in expected)


def test_a_hyperparameter_added_after_training_takes_its_default(tiny_spm, tmp_path):
    """A checkpoint that predates a hyperparameter was trained at its default (each model
    keeps a new knob's default equal to itself before the knob): it loads when the config
    keeps the default, and is refused, naming it, when it does not."""
    from mixnmt.models import defaults

    tok = Tokenizer(tiny_spm)
    name = next(n for n, e in TINY_MODELS.items() if any(e.get(k) == v for k, v in defaults(n).items()))
    arch, hparams, model = tiny_model(name, len(tok))
    key = next(k for k, v in hparams.items() if v == defaults(arch)[k])  # trained at its default
    older = tmp_path / "older.pt"
    record = checkpoint.vocab_record(tok)
    vocab = {"src": record, "tgt": record, "shared": True}
    checkpoint.save(older, name, arch, {k: v for k, v in hparams.items() if k != key}, model, vocab)
    loaded = checkpoint.load_model(older, tok, tok, name, TINY_MODELS[name])
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), model.state_dict().values()))
    changed = hparams[key] / 2 if isinstance(hparams[key], float) else hparams[key] + 1
    message = f"trained with models.{name}.{key}={hparams[key]!r}, but the config says {changed!r}"
    with pytest.raises(MixnmtError, match=re.escape(message)):
        checkpoint.load_model(older, tok, tok, name, {**TINY_MODELS[name], key: changed})


@pytest.mark.parametrize(
    "outputs",
    [
        ["IN", "IN"],  # the translation over its input
        ["IN", "CHECKPOINT"],  # over the checkpoint it loads
        ["IN", "OUT", "--alignments", "IN"],  # the alignments over the input
        ["IN", "OUT", "--alignments", "OUT"],  # two outputs in one file
        ["IN", "OUT", "--alignments", "LINK"],  # through a link to the input
    ],
)
def test_no_output_may_overwrite_an_input_or_another_output(
    random_checkpoint, tiny_spm, tmp_path, outputs, capsys
):
    """A rule of every command (files.distinct, applied by `mixnmt`): refused in one line
    before anything is read, and every file is left as it was."""
    files = {"IN": tmp_path / "in.txt", "OUT": tmp_path / "out.txt", "LINK": tmp_path / "link.txt"}
    files["IN"].write_text("\n".join(SENTENCES) + "\n")
    files["LINK"].symlink_to(files["IN"])
    files["CHECKPOINT"] = random_checkpoint
    kept = {name: path.read_bytes() for name, path in files.items() if path.exists()}
    args = [str(files.get(word, word)) for word in outputs]
    status = translate_cli(random_checkpoint, tiny_spm, *args, "--beam", "1", "--length-penalty", "1",
                           "--max-len-a", "1", "--max-len-b", "5", "--batch-size", "8")  # fmt: skip
    error = capsys.readouterr().err
    assert status == 1 and error.count("\n") == 1, error
    assert "both an input and an output" in error or "named as two outputs" in error
    assert {name: path.read_bytes() for name, path in files.items() if name in kept} == kept
    assert not files["OUT"].exists()


def test_configfile_takes_one_file_and_never_the_input(random_checkpoint, tiny_spm, tmp_path):
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n")
    (tmp_path / "greedy.yaml").write_text("decode:\n  beam: 1\n")
    status = translate_cli(
        random_checkpoint, tiny_spm, "--configfile", str(ROOT / "config.yaml"),
        "--configfile", str(tmp_path / "greedy.yaml"), str(tmp_path / "in.txt"), str(tmp_path / "out.txt"),
    )  # fmt: skip
    assert status == 0 and len(read_lines(tmp_path / "out.txt")) == len(SENTENCES)


@pytest.mark.parametrize(
    "where, message",
    [
        ("/dev/zero", "/dev/zero: more than 64 MiB; refused (split it)"),  # never ends
        ("closed", "standard input is closed: give the text as INPUT"),  # translate <&-
    ],
)
def test_an_endless_or_closed_input_is_refused_in_one_line(
    random_checkpoint, tiny_spm, monkeypatch, capsys, where, message
):
    monkeypatch.chdir(ROOT)
    if where == "closed":
        monkeypatch.setattr(sys, "stdin", None)
    assert translate_cli(random_checkpoint, tiny_spm, *([] if where == "closed" else [where])) == 1
    assert capsys.readouterr().err == f"mixnmt translate: error: {message}\n"


def test_threads_must_be_a_positive_count(random_checkpoint, tiny_spm, capsys):
    with pytest.raises(SystemExit):
        translate_cli(random_checkpoint, tiny_spm, "--threads", "-1")
    assert "argument --threads: '-1': expected a positive integer" in capsys.readouterr().err
