import pytest

from mixnmt import MixnmtError, tokenize
from mixnmt.files import read_lines, sha256sum


def test_spm_training_is_deterministic(tiny_source, tiny_spm, tmp_path):
    again = tmp_path / "again.model"
    tokenize.train([tiny_source / "train.en", tiny_source / "train.de"], again, vocab_size=64)
    assert sha256sum(again) == sha256sum(tiny_spm)


def test_tokenizer_special_ids_and_round_trip(tiny_spm):
    tok = tokenize.Tokenizer(tiny_spm)
    assert len(tok) == 64
    assert (tok.sp.pad_id(), tok.sp.unk_id(), tok.sp.bos_id(), tok.sp.eos_id()) == (0, 1, 2, 3)
    text = ["Der rot hund sitzt .", "Ein kind rennt ."]
    assert tok.decode(tok.encode(text)) == text


def test_encode_file_keeps_one_line_per_line(tiny_spm, tmp_path):
    text = tmp_path / "t.en"
    text.write_text("A dog runs .\n\nThe man sits .\n")
    out = tmp_path / "t.ids"
    tokenize.encode_file(tiny_spm, text, out)
    lines = read_lines(out)
    assert len(lines) == 3 and lines[1] == ""
    assert all(int(tok) > 3 for tok in lines[0].split())


def test_vocabulary_too_large_is_a_clear_error(tiny_source, tmp_path):
    with pytest.raises(
        MixnmtError, match=r"big\.model: SentencePiece training failed: .*Vocabulary size too high"
    ):
        tokenize.train([tiny_source / "train.en"], tmp_path / "big.model", vocab_size=5000)
    assert not (tmp_path / "big.model").exists()
