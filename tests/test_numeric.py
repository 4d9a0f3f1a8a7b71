"""The numeric functions agree with the theorems on random inputs, and with an independent eigen-decomposition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lnproofs.derive.numeric import EllipsoidInfo, center, ellipsoid, layernorm, rmsnorm
from lnproofs.kernel import InputError, OptionError, ShapeError


def radial_scale(y, eps: float, convention: str) -> np.ndarray:
    """``g(y)``: ``sqrt(n) y / sqrt(|y|^2 + n eps)`` (torch) or ``sqrt(n) y / (|y| + eps sqrt(n))`` (std)."""
    n = y.shape[-1]
    norm = np.linalg.norm(y, axis=-1, keepdims=True)
    return np.sqrt(n) * y / (np.sqrt(norm**2 + n * eps) if convention == "torch" else norm + eps * np.sqrt(n))


FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
nonzero = st.floats(0.2, 5.0) | st.floats(-5.0, -0.2)


@st.composite
def problem(draw, min_n=2, max_n=9):
    n = draw(st.integers(min_n, max_n))
    x = draw(arrays(np.float64, (n,), elements=finite))
    assume(np.ptp(x) > 1e-3)  # a non-constant input, so that eps = 0 is defined
    gain = draw(arrays(np.float64, (n,), elements=nonzero))
    bias = draw(arrays(np.float64, (n,), elements=finite))
    eps = draw(st.sampled_from([0.0, 1e-5, 0.1, 2.0]))
    return x, gain, bias, eps


def _torch_formula(x, a, b, eps):
    d = x - x.mean()
    return a * d / np.sqrt(np.mean(d * d) + eps) + b


@FAST
@given(problem(), st.sampled_from(["torch", "std"]))
def test_decomposition(p, convention):
    x, a, b, eps = p
    z = layernorm(x, a, b, eps, convention)
    assert np.allclose(z, a * radial_scale(center(x), eps, convention) + b)  # decomposition.<convention>
    if convention == "torch":
        assert np.allclose(z, _torch_formula(x, a, b, eps))
    else:
        d = x - x.mean()
        assert np.allclose(z, a * d / (np.std(d) + eps) + b)


@FAST
@given(problem(), st.sampled_from(["torch", "std"]))
def test_sphere_and_interior(p, convention):
    x, _, _, eps = p
    n = x.size
    y = radial_scale(center(x), eps, convention)
    r = np.linalg.norm(center(x))
    assert abs(y.sum()) < 1e-9 * max(1.0, np.abs(y).max())  # in the hyperplane
    norm = np.linalg.norm(y)
    if eps == 0:
        assert np.isclose(norm, np.sqrt(n))  # sphere.radius
    else:
        closed = np.sqrt(n) * r / (np.sqrt(r * r + n * eps) if convention == "torch" else r + eps * np.sqrt(n))
        assert np.isclose(norm, closed)  # sphere.interior_<convention>
        assert norm < np.sqrt(n)


@FAST
@given(problem(), st.sampled_from(["torch", "std"]))
def test_hyperplane_and_equation(p, convention):
    x, a, b, eps = p
    n = x.size
    z = layernorm(x, a, b, eps, convention)
    u = (z - b) / a
    assert abs(u.sum()) < 1e-8 * max(1.0, np.abs(u).max())  # ellipsoid.hyperplane
    form = float(u @ u)
    if eps == 0:
        assert np.isclose(form, n)  # ellipsoid.equation
    else:
        assert form < n


@FAST
@given(problem())
def test_principal_axes_coordinates(p):
    x, a, b, _ = p
    info = ellipsoid(a, b)
    z = layernorm(x, a, b)
    coords = info.axes @ (z - b)
    assert np.isclose(np.sum((coords / info.semi_axes) ** 2), 1.0)  # on the ellipsoid in its own axes
    assert np.allclose(info.axes.T @ coords, z - b)  # z - b lies in the span of the axes


@FAST
@given(st.integers(2, 9).flatmap(lambda n: arrays(np.float64, (n,), elements=nonzero)))
def test_interlacing_and_secular_equation(a):
    n = a.size
    info = ellipsoid(a)
    lam = np.sort(info.semi_axes**2 / n)
    sq = np.sort(a * a)
    tol = 1e-9 * sq[-1]
    assert np.all(sq[:-1] - tol <= lam) and np.all(lam <= sq[1:] + tol)  # ellipsoid.interlacing
    gaps = np.abs(a[None, :] ** 2 - lam[:, None]).min(axis=1)
    ok = gaps > 1e-6 * sq[-1]  # roots away from the poles satisfy the secular equation
    terms = a[None, :] ** 2 / (a[None, :] ** 2 - lam[ok, None])
    secular = 1 - np.sum(terms, axis=1) / n
    # near a pole the terms are large and cancel: the rounding of lam is amplified by their size
    scale = 1 + np.abs(terms).sum(axis=1) / n
    assert np.all(np.abs(secular) <= 1e-9 + 1e-12 * scale**2)


@FAST
@given(problem(min_n=3), st.data())
def test_zero_gains(p, data):
    x, a, b, _ = p
    n = x.size
    zeros = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n - 1, unique=True))
    a = a.copy()
    a[zeros] = 0.0
    info = ellipsoid(a, b)
    k = n - len(zeros)
    assert info.dimension == k  # ellipsoid.zero_gains: rank k for k < n
    assert info.constant_coordinates == tuple(sorted(zeros))
    assert info.normal is None
    assert np.all(info.axes[:, zeros] == 0)
    z = layernorm(x, a, b)
    assert np.array_equal(z[zeros], b[zeros])
    assert np.linalg.matrix_rank(np.diag(a) @ (np.eye(n) - 1.0 / n) @ np.diag(a)) == k


@FAST
@given(st.integers(2, 9), nonzero, problem())
def test_equal_gains_sphere(n, c, p):
    info = ellipsoid(np.full(n, c))
    assert info.is_sphere and info.dimension == n - 1
    assert np.allclose(info.semi_axes, abs(c) * np.sqrt(n))  # ellipsoid.equal_gains
    x = p[0]
    z = layernorm(x, np.full(x.size, c))
    assert np.isclose(np.linalg.norm(z), abs(c) * np.sqrt(x.size))


@FAST
@given(problem())
def test_rmsnorm(p):
    x, a, _, _ = p
    n = x.size
    assert np.isclose(np.linalg.norm(rmsnorm(x)), np.sqrt(n))  # rmsnorm.sphere
    z = rmsnorm(x, a)
    assert np.isclose(np.sum(z**2 / a**2), n)  # rmsnorm.ellipsoid


@FAST
@given(problem())
def test_uniform_query(p):
    x, a, b, eps = p
    inputs = [x, -x, np.abs(x)]
    assume(all(np.ptp(v) > 1e-3 for v in inputs))
    keys = np.stack([layernorm(v, a, b, eps) for v in inputs])
    q = 1.0 / a
    assert np.allclose(keys @ q, q @ b)  # attention.uniform_query


@pytest.mark.parametrize("seed", [0, 1])
def test_ellipsoid_width_384_matches_independent_eigendecomposition(seed):
    rng = np.random.default_rng(seed)
    n = 384
    a = rng.normal(1.0, 0.3, size=n) * rng.choice([-1.0, 1.0], size=n)
    b = rng.normal(size=n)
    info = ellipsoid(a, b)
    assert info.dimension == n - 1
    # Riechers form: N = P2 diag(a)^-2 P2, P2 the projection orthogonal to w = 1/a; semi-axes sqrt(n / mu)
    w = 1.0 / a
    p2 = np.eye(n) - np.outer(w, w) / (w @ w)
    mat = p2 @ np.diag(w * w) @ p2
    mu, vec = np.linalg.eigh((mat + mat.T) / 2)
    keep = np.argsort(mu)[1:]  # drop the single zero eigenvalue (eigenvector w)
    semi = np.sqrt(n / mu[keep])
    order = np.argsort(semi)[::-1]
    assert np.allclose(info.semi_axes, semi[order], rtol=1e-8)
    overlap = np.abs(np.sum(info.axes * vec[:, keep][:, order].T, axis=1))
    assert np.allclose(overlap, 1.0, atol=1e-6)
    assert np.isclose(abs(info.normal @ (w / np.linalg.norm(w))), 1.0)
    # every axis is orthogonal to the normal and the axes are orthonormal
    assert np.allclose(info.axes @ info.normal, 0.0, atol=1e-10)
    assert np.allclose(info.axes @ info.axes.T, np.eye(n - 1), atol=1e-10)


def test_json_round_trip():
    info = ellipsoid([1.0, 2.0, 0.0, -1.5], [0.1, 0.2, 0.3, 0.4])
    again = EllipsoidInfo.from_json(info.to_json())
    assert again.to_json() == info.to_json()
    assert info.to_json()["constant_coordinates"] == [2]


def test_all_gains_zero():
    info = ellipsoid([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    assert info.dimension == 0 and info.semi_axes.size == 0 and info.constant_coordinates == (0, 1, 2)


def test_batches_of_rows():
    x = np.random.default_rng(3).normal(size=(5, 7))
    z = layernorm(x, eps=1e-5)
    assert z.shape == (5, 7)
    assert np.allclose(z[2], layernorm(x[2], eps=1e-5))


def test_bad_inputs():
    with pytest.raises(OptionError, match="convention"):
        layernorm([1.0, 2.0], convention="numpy")
    with pytest.raises(OptionError, match="eps"):
        layernorm([1.0, 2.0], eps=-1.0)
    with pytest.raises(ShapeError, match="length"):
        layernorm([1.0, 2.0, 3.0], gain=[1.0, 2.0])
    with pytest.raises(InputError, match="constant"):
        layernorm([2.0, 2.0, 2.0])
    with pytest.raises(ShapeError, match="n >= 2"):
        ellipsoid([1.0])
    with pytest.raises(ShapeError, match="length"):
        ellipsoid([1.0, 2.0], [1.0])
    with pytest.raises(InputError, match="inf"):
        ellipsoid([1.0, np.inf])


@pytest.mark.parametrize("n", [3, 5])
def test_semi_axes_match_the_exact_characteristic_polynomial(n):
    # the explicit-n theorems use these gains; the exact roots of charpoly(diag(a) P diag(a)) give the semi-axes
    import sympy as sp

    from lnproofs.derive.theorems.ellipsoid import sample_gains

    gains = sample_gains(n)
    a = sp.Matrix([sp.Rational(g.numerator, g.denominator) for g in gains])
    lam = sp.Symbol("lam")
    m = sp.diag(*a) * (sp.eye(n) - sp.ones(n, n) / n) * sp.diag(*a)
    roots = sorted(r for r in sp.Poly(m.charpoly(lam).as_expr(), lam).nroots(n=30) if abs(r) > 1e-20)
    exact = np.sqrt(n * np.array([float(r) for r in roots]))[::-1]
    info = ellipsoid([float(g) for g in gains])
    assert np.allclose(info.semi_axes, exact, rtol=1e-12)
