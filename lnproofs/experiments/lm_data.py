"""Tokenizer and token streams for the language-model experiment.

The tokenizer is a byte-level BPE trained on the training documents with ``tokenizers``
(no download); documents are joined with an end-of-text token.  Held-out texts for the
measurement are consecutive windows of the held-out stream, of lengths drawn (seeded)
between 768 and 1,024 tokens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["train_tokenizer", "load_tokenizer", "encode_documents", "text_windows", "EOT"]

EOT = "<|endoftext|>"


def train_tokenizer(documents, vocab_size: int, path: Path):
    """Train a byte-level BPE on ``documents``, save it to ``path`` and return it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOT],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(documents, trainer=trainer)
    from ..certificates.writes import output_file, replacing

    output_file(path, None)
    with replacing(path) as handle:  # only a regular file of ours is replaced
        handle.write(tok.to_str(pretty=True))
    return tok


def load_tokenizer(path: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def encode_documents(tok, documents) -> np.ndarray:
    """One token stream: every document followed by the end-of-text token."""
    eot = tok.token_to_id(EOT)
    parts = []
    for enc in tok.encode_batch(list(documents)):
        parts.append(np.asarray(enc.ids, dtype=np.int32))
        parts.append(np.asarray([eot], dtype=np.int32))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


def text_windows(stream: np.ndarray, count: int, *, min_len: int, max_len: int, seed: int) -> list[np.ndarray]:
    """``count`` consecutive windows of the stream with lengths in [min_len, max_len];
    an :class:`~lnproofs.InputError` says how many tokens there are and how many are needed."""
    from ..kernel import InputError

    lengths = np.random.default_rng(seed).integers(min_len, max_len + 1, size=count)
    needed = int(lengths.sum())
    if needed > len(stream):
        raise InputError(
            f"the corpus is too small for {count} held-out texts of {min_len}-{max_len} tokens: "
            f"its held-out part has {len(stream):,} tokens and {needed:,} are needed; "
            "give a larger --corpus or fewer --texts"
        )
    out, pos = [], 0
    for n in lengths.tolist():
        out.append(stream[pos : pos + n])
        pos += n
    return out
