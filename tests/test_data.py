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


@pytest.mark.parametrize("shown", [[0, 4], [1], [-1]])
def test_the_sentences_the_analysis_shows_are_checked_with_the_test_data(tmp_path, capsys, shown):
    """analysis.sentences past the first test set, or on an empty line, is refused when the
    test set is prepared, before any model is trained (it failed in the last jobs)."""
    src = write(tmp_path / "test.en", ["first", "", "third", "last"])
    tgt = write(tmp_path / "test.de", ["1", "2", "3", "4"])
    out = tmp_path / "out"
    args = ["prepare", str(src), str(tgt), str(out / "test.en"), str(out / "test.de"), "--shown"]
    assert main([*args, *map(str, shown)]) == 1
    bad = next(i for i in shown if not 0 <= i < 4 or i == 1)
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"mixnmt prepare: error: analysis.sentences: {bad} is not a non-empty line of {src} "
        "(4 lines, counted from 0)"
    )
    assert not out.exists() or not any(out.iterdir())
    assert main([*args, "0", "2", "3"]) == 0


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
