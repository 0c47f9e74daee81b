"""The special token ids of every vocabulary: `tokenize.train` puts them first, and the
models, batching and decoding use them without importing SentencePiece."""

PAD, UNK, BOS, EOS = 0, 1, 2, 3
