import gzip

import pytest

from mixnmt import MixnmtError
from mixnmt.cli import main
from mixnmt.data import prepare
from mixnmt.files import read_lines


def write(path, lines, compress=False):
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def test_prepare_normalises_whitespace_and_line_endings(tmp_path):
    src = tmp_path / "s.gz"
    src.write_bytes(gzip.compress(b"  Two   dogs\tplay .\r\nA cat .\r\n"))
    tgt = write(tmp_path / "t", ["Zwei Hunde spielen .", " Eine  Katze . "])
    prepare(src, tgt, tmp_path / "out.en", tmp_path / "out.de")
    assert read_lines(tmp_path / "out.en") == ["Two dogs play .", "A cat ."]
    assert read_lines(tmp_path / "out.de") == ["Zwei Hunde spielen .", "Eine Katze ."]


def test_prepare_filters_training_pairs_and_logs_counts(tmp_path, caplog):
    src = write(tmp_path / "s", ["a b", "", "a b c d", "x", "ok"])
    tgt = write(tmp_path / "t", ["c d", "e", "f", "", "fine"])
    with caplog.at_level("INFO"):
        prepare(src, tgt, tmp_path / "o.en", tmp_path / "o.de", max_words=3)
    assert read_lines(tmp_path / "o.en") == ["a b", "ok"]
    assert read_lines(tmp_path / "o.de") == ["c d", "fine"]
    assert "kept 2 of 5 pairs (dropped 2 empty, 1 longer than 3 words)" in caplog.text


def test_prepare_keeps_every_test_line_in_order(tmp_path):
    lines = ["first", "", "a " * 500, "last"]
    src = write(tmp_path / "s", lines)
    tgt = write(tmp_path / "t", ["1", "", "3", ""])
    prepare(src, tgt, tmp_path / "o.en", tmp_path / "o.de")
    assert read_lines(tmp_path / "o.en") == ["first", "", ("a " * 500).strip(), "last"]
    assert read_lines(tmp_path / "o.de") == ["1", "", "3", ""]


def test_line_count_mismatch_is_a_one_line_error_without_output(tmp_path, capsys):
    src = write(tmp_path / "train.en", ["a", "b", "c"])
    tgt = write(tmp_path / "train.de", ["x", "y"])
    out = tmp_path / "out"
    code = main(["prepare", str(src), str(tgt), str(out / "train.en"), str(out / "train.de")])
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f"mixnmt prepare: error: {src} has 3 lines but {tgt} has 2: source and target must be parallel"
    )
    assert not out.exists() or list(out.iterdir()) == []


def test_invalid_utf8_in_corpus_is_an_error(tmp_path):
    src = tmp_path / "s"
    src.write_bytes(b"ok\n\xc3\x28\n")
    tgt = write(tmp_path / "t", ["a", "b"])
    with pytest.raises(MixnmtError, match="invalid UTF-8 at line 2"):
        prepare(src, tgt, tmp_path / "o.en", tmp_path / "o.de")
    assert not (tmp_path / "o.en").exists()
