"""The float filter in front of a norm set's exact path (kernel/vocab.py) against that path, on every
input class: it never accepts a row the exact path refutes, and where its conditions hold (a 0/1
selection W_q, float32 keys and gains, float offsets, no rotation or radius) it accepts exactly
the rows on its grid that the exact path accepts.  This test reads the kernel's module on purpose."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lnproofs.kernel import (
    ExactKeys,
    KeyResult,
    LayerNormQuerySet,
    RMSNormQuerySet,
    Rotation,
    norm_directions,
)
from lnproofs.kernel.vocab import _grid_accepts

f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731


@st.composite
def cases(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    N, n = draw(st.integers(2, 10)), draw(st.integers(2, 6))
    keys = draw(st.sampled_from(["float32", "float64"]))
    gain = draw(st.sampled_from(["float32", "powers of two", "float64"]))
    shape = draw(st.sampled_from(["identity", "identity and a bias row", "not a selection"]))
    centred, offset = draw(st.booleans()), draw(st.sampled_from(["none", "b_q", "beta"]))
    extra = draw(st.sampled_from(["none", "none", "radius", "rotation"]))
    K = rng.normal(size=(N, n))
    K = f32(K) if keys == "float32" else K
    g = {"float32": f32(1 + 0.3 * rng.normal(size=n)), "float64": 1 + 0.3 * rng.normal(size=n)}.get(
        gain, 2.0 ** rng.integers(-2, 3, size=n)
    )
    W, b_q = np.eye(n), f32(0.2 * rng.normal(size=n)) if offset == "b_q" else np.zeros(n)
    if shape == "identity and a bias row":
        K = np.hstack([K, f32(0.3 * rng.normal(size=(N, 1)))])
        W, b_q = np.vstack([W, np.zeros((1, n))]), np.r_[b_q, 1.0]
    elif shape == "not a selection":
        W = W + 0.25 * np.eye(n, k=1)
    beta = f32(0.1 * rng.normal(size=n)) if offset == "beta" else np.zeros(n)
    d = W.shape[0]
    rotation = Rotation(np.cos([0.3] * 2), np.sin([0.3] * 2)) if extra == "rotation" else None
    if centred and extra != "rotation":
        qs = LayerNormQuerySet(g, beta, W, b_q, 0.0, 2.0 * n if extra == "radius" else None)
    else:
        qs = (RMSNormQuerySet if not centred else _rotary())(g, W, b_q, 0.0, rotation, beta)
    # rows: own directions scaled into the ball, a rival's direction, and rows off the grid or outside
    tokens = rng.integers(0, N, size=draw(st.integers(1, 6)))
    U = norm_directions(K, qs, tokens) * 2.0 ** -draw(st.integers(13, 16))  # 12-bit rows, into the ball
    for t, how in enumerate(
        draw(
            st.lists(
                st.sampled_from(["own", "rival", "off grid", "outside", "off 1.u"]),
                min_size=len(tokens),
                max_size=len(tokens),
            )
        )
    ):
        if how == "rival":
            U[t] = norm_directions(K, qs, [(tokens[t] + 1) % N])[0] * 2.0**-13
        elif how == "off grid":
            U[t, 0] = np.nextafter(U[t, 0], np.inf)
        elif how == "outside":
            U[t] *= 2.0**20
        elif how == "off 1.u":
            U[t, 0] += 2.0**-8
    assert d == K.shape[1]
    return K, qs, tokens, U


def _rotary():
    from lnproofs.kernel import RotaryLayerNormQuerySet

    return RotaryLayerNormQuerySet


def _exact(K, qs, tokens, U) -> list[bool]:
    """The norm set's exact path, one claim per row."""
    return [
        v.ok
        for v in qs.check(K, [KeyResult(int(i), "selectable", extras={"u": u.tolist()}) for i, u in zip(tokens, U)])
    ]


def _filter_applies(K, qs) -> bool:
    arrays = qs.arrays()
    W, g = arrays["W_q"], arrays[qs.G_NAME]
    selection = np.isin(W, (0, 1)).all() and (W.sum(axis=0) == 1).all()
    float32 = ExactKeys(K).single and np.array_equal(g.astype(np.float32), g)
    return selection and qs.rotation is None and qs.radius is None and float32


@settings(max_examples=200, deadline=None)
@given(cases())
def test_the_filter_accepts_only_what_the_exact_path_accepts_and_all_of_it_where_it_applies(case):
    K, qs, tokens, U = case
    accepted = _grid_accepts(ExactKeys(K), qs, tokens, U).tolist()
    exact = _exact(K, qs, tokens, U)
    assert all(e for a, e in zip(accepted, exact) if a)  # never a claim the exact path refutes
    if _filter_applies(K, qs):
        e = np.frexp(np.abs(U).max(axis=1, initial=0))[1] - 20
        on_grid = np.all(np.ldexp(np.rint(np.ldexp(U, -e[:, None])), e[:, None]) == U, axis=1)
        assert [a for a, on in zip(accepted, on_grid) if on] == [x for x, on in zip(exact, on_grid) if on]
    else:
        assert not any(accepted)
