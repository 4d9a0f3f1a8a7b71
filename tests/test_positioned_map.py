"""A rotary head's exact query map at one position, built from the head's position-free exact
forms (``head_sets.positioned_map``, what a run uses), equals the map built from scratch for
that position's query set, and gives the same answers."""

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tiny_decoders import tiny_decoder  # noqa: E402

from lnproofs.kernel import ExactQueryMap, RMSNormQuerySet, RotaryLayerNormQuerySet  # noqa: E402
from lnproofs.models.extract import capture_layers  # noqa: E402
from lnproofs.models.head_sets import HeadSets, realisable_results  # noqa: E402
from lnproofs.models.loading import load_model  # noqa: E402
from lnproofs.propose.uniform import uniform_attention  # noqa: E402

IDS = np.array([3, 7, 1, 9, 12, 5, 7, 2, 30, 4, 4, 11])


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@pytest.fixture(scope="module", params=["llama", "gpt_neox"])
def capture(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    tiny_decoder(request.param, folder, width=16, heads=4)
    loaded = load_model(folder)
    return capture_layers(loaded, [IDS], [1])[1]


def test_the_map_at_a_position_equals_the_one_built_from_scratch(capture):
    sets = HeadSets()
    assert capture.rotary
    for head in range(capture.n_heads):
        for row in (0, 5, len(IDS) - 2):
            at, shared = sets.at_map(capture, head, row)
            assert at == sets.at(capture, head, row) and at.rotation is not None
            fresh = ExactQueryMap(at)
            for qm in (fresh, shared):
                qm.gram()
            assert set(vars(fresh)) <= set(vars(shared))
            for name, value in vars(fresh).items():
                assert _same(value, vars(shared)[name]), name
            assert _same(fresh.gram(), shared.gram())  # the rotated Gram matrix, the position's own
            # the rotation is the position's own: another position's map differs in R
            other = sets.at_map(capture, head, row + 1)[1]
            assert other.R != shared.R and other.Wq is shared.Wq


def test_answers_with_the_shared_map_equal_those_built_alone(capture):
    sets = HeadSets()
    kind = sets.get(capture, 0)[0]
    assert kind in (RMSNormQuerySet, RotaryLayerNormQuerySet)
    for head in range(capture.n_heads):
        keys = capture.rotated_keys(head)
        T = len(keys)
        at, shared = sets.at_map(capture, head, T - 1)
        assert uniform_attention(keys, at, query_map=shared).to_json() == uniform_attention(keys, at).to_json()
        assert realisable_results(keys, at, query_map=shared) == realisable_results(keys, at)
        prefix, mid = keys[:6], sets.at_map(capture, head, 5)
        assert realisable_results(prefix, mid[0], indices=[1, 4], query_map=mid[1]) == realisable_results(
            prefix, mid[0], indices=[1, 4]
        )
