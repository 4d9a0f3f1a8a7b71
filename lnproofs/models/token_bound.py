"""A text's first tokens, without tokenising more of it than can yield them.

A run keeps at most ``limit`` tokens of a text (``--max-tokens``, or the model's maximum), and
needs ``limit + 1`` to know that it truncated.  A corpus line may hold up to 16 MiB
(:data:`lnproofs.io.corpus.MAX_LINE_BYTES`), and tokenising it whole costs the tokenizer
gigabytes; so a long text is tokenised by prefixes:

- a text of at most :data:`WHOLE_CHARS` characters is tokenised whole, as before;
- otherwise prefixes ending at a white space, of :data:`WHOLE_CHARS` characters (or at least
  16 per token needed) and then twice as many each time, until a prefix gives
  ``limit + 1 + MARGIN`` tokens *and* the next, twice as long, gives the same first ``limit + 1``
  (the tokens far from a cut do not depend on where the text was cut; where a tokenizer's
  first tokens do depend on text further on, the two disagree and the prefix grows);
- no prefix is longer than :data:`BUDGET_CHARS` characters.  A text that needs more (its
  first :data:`BUDGET_CHARS` characters give fewer tokens than the run keeps) is refused in one
  line naming the limit and ``--max-tokens``, which lowers what the run needs.

No token count depends on a cut: the ids returned are the whole text's first ``limit + 1``
(exactly its ids when it has no more), with the tokenizer's own special tokens.
"""

from __future__ import annotations

from ..kernel import LimitError

__all__ = ["WHOLE_CHARS", "BUDGET_CHARS", "MARGIN", "BoundedTokenizer", "first_ids"]

#: texts up to this many characters are tokenised whole (a few megabytes of tokenizer memory)
WHOLE_CHARS = 1 << 16
#: the longest prefix of a text ever tokenised (about 200 MB of tokenizer memory at most)
BUDGET_CHARS = 1 << 20
#: tokens kept clear of a cut before the tokens before it are compared
MARGIN = 16
_SPACE_WINDOW = 256


def _cut(text: str, end: int) -> int:
    """``end``, moved back to just after a white space within a short window when there is one."""
    if end >= len(text):
        return len(text)
    start = max(0, end - _SPACE_WINDOW)
    for position in range(end, start, -1):
        if text[position - 1].isspace():
            return position
    return end


def first_ids(tokenize, text: str, limit: int, *, number=None) -> list[int]:
    """The first ``limit + 1`` ids of ``tokenize(text)`` (all of them when there are fewer),
    tokenising prefixes of ``text`` as the module docstring says.  ``number``: the text's
    number, for the refusal."""
    need = int(limit) + 1
    if len(text) <= WHOLE_CHARS:
        return list(tokenize(text))[:need]
    sizes = [WHOLE_CHARS << k for k in range((BUDGET_CHARS // WHOLE_CHARS).bit_length())]
    sizes = [s for s in sizes[:-2] if s >= 16 * need] + sizes[-2:] if 16 * need > WHOLE_CHARS else sizes
    before, ids = None, []
    for size in sizes:  # the same cuts for every limit: a rerun meets the same prefixes
        before, end = ids, _cut(text, size)
        ids = list(tokenize(text[:end]))
        if end == len(text):
            return ids[:need]
        if len(before) >= need + MARGIN and before[:need] == ids[:need]:
            return ids[:need]
    which = "" if number is None else f"text {number}: "
    if len(before) < need + MARGIN:
        why, fewer = f"give only {len(ids)} tokens", len(before) - MARGIN - 1
    else:
        why, fewer = "give first tokens that change with where the text is cut", need // 2
    advice = f"give --max-tokens {fewer} or less, or split the text" if fewer >= 2 else "split the text"
    raise LimitError(
        f"{which}its first {end} characters {why}, and the run keeps up to {limit}; lnproofs "
        f"tokenises at most {BUDGET_CHARS} characters of a text: {advice}"
    )


class BoundedTokenizer:
    """A tokenizer whose call returns at most ``limit + 1`` ids of a text (:func:`first_ids`);
    everything else (``convert_ids_to_tokens`` ...) is the wrapped tokenizer's.  Transformers'
    logging is kept quiet while it tokenises (a prefix longer than the model's length is no
    reason for a warning line)."""

    def __init__(self, tokenizer, limit: int):
        self.tokenizer = tokenizer
        self.limit = int(limit)
        self.texts = 0

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text)["input_ids"])

    def __call__(self, text: str) -> dict:
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            ids = first_ids(self._ids, text, self.limit, number=self.texts)
        finally:
            hf_logging.set_verbosity(verbosity)
            self.texts += 1
        return {"input_ids": ids}

    def __getattr__(self, name):
        if name.startswith("__") or name in ("tokenizer", "limit", "texts"):
            raise AttributeError(name)
        return getattr(self.tokenizer, name)
