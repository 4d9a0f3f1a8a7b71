"""The Majority task's data: sequences built from integer partitions of the length.

A sequence of length ``L`` over ``C`` classes is drawn from a partition of ``L`` into at
most ``min(L, C)`` parts (parts in non-decreasing order): each part is the count of one
class, the classes are distinct and drawn at random, and the positions are shuffled.
Partitions whose largest part ties with the next one, or whose largest part exceeds the
next one by less than ``min_delta``, are skipped, so the majority class is well defined
and clear.  Every position of a sequence is labelled with its majority class.  Ten
sequences are drawn per partition (partitions taken in a seeded random order, cycling if
needed) until ``n_samples`` are reached; the split is 80/20, stratified by label.

Only numpy; no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["partitions", "valid_partitions", "MajorityData", "make_majority_data", "PER_PARTITION"]

#: sequences drawn from each partition
PER_PARTITION = 10


def partitions(total: int, max_parts: int):
    """Every partition of ``total`` into at most ``max_parts`` positive parts, each as a
    non-decreasing tuple."""

    def rec(remaining: int, smallest: int, parts_left: int):
        if remaining == 0:
            yield ()
            return
        if parts_left == 0:
            return
        for first in range(smallest, remaining + 1):
            rest = remaining - first
            if rest == 0:
                yield (first,)
            elif rest >= first and parts_left > 1:  # later parts are >= first
                for tail in rec(rest, first, parts_left - 1):
                    yield (first, *tail)

    yield from rec(total, 1, max_parts)


def valid_partitions(length: int, classes: int, min_delta: int) -> list[tuple[int, ...]]:
    """The partitions the task uses: at most ``min(length, classes)`` parts, a unique largest
    part that beats the second largest by at least ``min_delta`` (and by at least 1)."""
    out = []
    for parts in partitions(length, min(length, classes)):
        top = parts[-1]
        second = parts[-2] if len(parts) > 1 else 0
        if top - second >= max(1, min_delta):
            out.append(parts)
    return out


@dataclass(frozen=True)
class MajorityData:
    """Integer sequences (n x L), their per-sequence labels, and the train/test split."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int
    length: int
    n_partitions: int


def _sequences(parts, classes: int, count: int, rng) -> tuple[np.ndarray, np.ndarray]:
    k = len(parts)
    counts = np.asarray(parts)
    seqs = np.empty((count, int(counts.sum())), dtype=np.int64)
    labels = np.empty(count, dtype=np.int64)
    for r in range(count):
        chosen = rng.choice(classes, size=k, replace=False)
        seq = np.repeat(chosen, counts)
        rng.shuffle(seq)
        seqs[r] = seq
        labels[r] = chosen[-1]  # the last part is the largest
    return seqs, labels


def make_majority_data(
    n_samples: int, length: int, classes: int, *, min_delta: int, seed: int, test_fraction: float = 0.2
) -> MajorityData:
    """Build the data set; deterministic in ``seed``."""
    from ..kernel import OptionError

    parts_list = valid_partitions(length, classes, min_delta)
    if not parts_list:
        raise OptionError(
            f"no partition of L={length} into at most {min(length, classes)} parts has a top part "
            f"ahead of the second by min_delta={min_delta}; lower min_delta or raise L"
        )
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(parts_list))
    xs, ys, made, pos = [], [], 0, 0
    while made < n_samples:
        parts = parts_list[order[pos % len(order)]]
        pos += 1
        count = min(PER_PARTITION, n_samples - made)
        seqs, labels = _sequences(parts, classes, count, rng)
        xs.append(seqs)
        ys.append(labels)
        made += count
    x, y = np.concatenate(xs), np.concatenate(ys)
    test = np.zeros(len(y), dtype=bool)
    for label in np.unique(y):  # stratified by label
        idx = np.flatnonzero(y == label)
        idx = idx[rng.permutation(len(idx))]
        test[idx[: int(round(test_fraction * len(idx)))]] = True
    return MajorityData(x[~test], y[~test], x[test], y[test], classes, length, min(pos, len(parts_list)))
