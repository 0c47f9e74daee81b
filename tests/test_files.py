import gzip

import pytest

from mixnmt import MixnmtError
from mixnmt.files import atomic_path, read_lines, write_lines


def test_read_lines_splits_only_on_line_breaks(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes("one\r\ntwo\u2028still two\rthree\n\nfive\n".encode())
    assert read_lines(path) == ["one", "two\u2028still two", "three", "", "five"]


def test_read_lines_final_line_without_break_and_empty_lines(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"a\nb")
    assert read_lines(path) == ["a", "b"]
    path.write_bytes(b"\n")
    assert read_lines(path) == [""]
    path.write_bytes(b"")
    assert read_lines(path) == []


def test_read_lines_decodes_gzip(tmp_path):
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress("Zwei Männer\nim Park\n".encode()))
    assert read_lines(path) == ["Zwei Männer", "im Park"]


def test_read_lines_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\nbroken \xff here\n")
    with pytest.raises(MixnmtError, match=r"bad\.txt: invalid UTF-8 at line 3"):
        read_lines(path)


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"

    def lines():
        yield "partial"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_lines(target, lines())
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_keeps_previous_version_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    write_lines(target, ["old"])
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("new")
        raise RuntimeError
    assert read_lines(target) == ["old"]
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_writes_get_the_usual_permissions(tmp_path):
    target = tmp_path / "out.txt"
    write_lines(target, ["x"])
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert target.stat().st_mode == plain.stat().st_mode


def test_an_input_read_while_writing_is_named_not_the_output(tmp_path):
    def lines():
        yield "first"
        (tmp_path / "gone.txt").read_text()

    with pytest.raises(FileNotFoundError) as error:
        write_lines(tmp_path / "out.txt", lines())
    assert error.value.filename == str(tmp_path / "gone.txt")
    assert list(tmp_path.iterdir()) == []
