"""Certify the LayerNorm outputs of given inputs, with the centring and scaling done exactly.

Float LayerNorm outputs lie on the hyperplane 1.y = 0 only up to rounding, so an exact
tool certifying them decides about the floats, where keys can win through the rounding
alone.  Given the *inputs* instead, the keys are the exact real outputs
y_j = gain * z_j + bias, z_j = c_j sqrt(n) / sqrt(|c_j|^2 + n eps), c_j = x_j - mean(x_j) 1,
and every claim is checked by :mod:`lnproofs.kernel.layernorm_keys` (exact square-root
comparisons for witnesses, interval arithmetic for interior points).

What the tool says:

* eps = 0: every z_j lies on the sphere of radius sqrt(n) in the hyperplane, so every
  key with its own output is ``selectable``, with the witness q = c_j / gain
  (Cauchy-Schwarz: c_j.z_k < sqrt(n) |c_j| unless z_k = z_j); each witness is still
  checked.  Keys with the same output as another (c_j positive multiples of each other)
  are ``tie-only``; a constant input row has no output (0/0): that is an input error.
* eps > 0: the radii sqrt(n) |c_j| / sqrt(|c_j|^2 + n eps) differ, and keys with small
  |c_j| can fall inside the hull.  The same witnesses are tried first; the other keys go
  to the float linear-programming rounds of the engine on the float z_j, whose proposals
  (a witness, or n keys whose simplex holds z_j) are then proved or the key is
  ``undecided`` with the reason.  Keys with equal c_j are ``tie-only``.
* gain with zero entries: a witness q is read through gain * q; keys whose outputs
  coincide only because of a zero gain come out ``undecided``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..certificates.certificate import Certificate
from ..certificates.check import check_layernorm_range
from ..certificates.writers import layernorm_keys_to_json
from ..kernel import (
    Combination,
    ExactLayerNormKeys,
    InputError,
    KeyResult,
    LayerNormKeys,
    OptionError,
    ShapeError,
    as_real_array,
    check_ln_interior,
    check_ln_witnesses,
)

__all__ = ["certify_layernorm_outputs", "layernorm_spec"]


def layernorm_spec(width: int, gain=None, bias=None, eps=0.0) -> LayerNormKeys:
    """Validated LayerNorm parameters for inputs of ``width`` (one clear error otherwise)."""
    out = {}
    for name, value in (("gain", gain), ("bias", bias)):
        if value is None:
            out[name] = None
            continue
        arr = as_real_array(value, name=name).reshape(-1) if np.ndim(value) <= 1 else None
        if arr is None:
            raise ShapeError(f"{name} has shape {np.shape(value)}; give a vector of length {width}")
        if arr.shape[0] != width:
            raise ShapeError(
                f"{name} has length {arr.shape[0]} but the LayerNorm inputs have width {width}; they must match"
            )
        out[name] = tuple(float(v) for v in arr)
    try:
        value = float(eps)
    except (TypeError, ValueError):
        value = float("nan")
    if isinstance(eps, bool) or not np.isfinite(value) or value < 0:
        raise OptionError(f"eps {eps!r} is not allowed; give a finite eps >= 0")
    return LayerNormKeys(out["gain"], out["bias"], value)


def _groups(keys: ExactLayerNormKeys) -> dict[tuple, list[int]]:
    """Keys with the same exact output z (eps > 0: equal c; eps = 0: positive multiples)."""
    from math import gcd

    out: dict[tuple, list[int]] = {}
    for j, row in enumerate(keys.C):
        if keys.spec.eps == 0 and any(row):
            g = gcd(*row)
            row = [v // g for v in row]
        out.setdefault(tuple(row), []).append(j)
    return out


def _float_margins(keys: ExactLayerNormKeys, items) -> list[float]:
    """min_j q.(y_i - y_j) / ||q||_2 in float (informational)."""
    if keys.n_keys < 2:
        return [None] * len(items)
    gain = np.array([float(g) for g in keys.gain])
    if not items:
        return []
    Q = np.array([[float(v) for v in q] for _, q in items])
    idx = np.array([i for i, _ in items])
    S = keys.z @ (Q * gain).T
    cols = np.arange(len(items))
    own = S[idx, cols].copy()
    S[idx, cols] = -np.inf
    top = np.abs(Q).max(axis=1, initial=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # row norms without underflow or overflow
        norm = np.where(top > 0, top * np.linalg.norm(Q / np.where(top > 0, top, 1.0)[:, None], axis=1), 0.0)
        out = [float(g / m) if m else 0.0 for g, m in zip(own - S.max(axis=0), norm)]
    out = [m if m is None or np.isfinite(m) else None for m in out]
    scale = np.abs(Q * gain) @ np.abs(keys.z).max(axis=0)
    for c in np.flatnonzero(np.abs(own - S.max(axis=0)) <= 2.0**-40 * scale):
        out[c] = _interval_margin(keys, *items[c]) / float(norm[c])  # below float resolution
    return out


def _interval_margin(keys: ExactLayerNormKeys, i: int, q) -> float:
    """min_j q.(y_i - y_j) as the midpoint of an arb enclosure (256 bits)."""
    from flint import arb, ctx, fmpq

    from ..kernel import integer_vector_of_fractions

    Q, den = integer_vector_of_fractions([g * Fraction(v) for g, v in zip(keys.gain, q)])
    s = Fraction(1, den)
    A = keys.score_parts(q)  # Q.C_j for every key
    old = ctx.prec
    try:
        ctx.prec = 256
        root = arb(keys.n).sqrt() * arb(fmpq(s.numerator, s.denominator))
        t = [arb(a) * root / arb(fmpq(m.numerator, m.denominator)).sqrt() for a, m in zip(A, keys.M)]
        return float(min(t[i] - t[j] for j in range(len(t)) if j != i).mid())
    finally:
        ctx.prec = old


def _lp_round(keys: ExactLayerNormKeys, reps: list[int], open_keys: list[int], found: dict, seed: int):
    """Engine LP proposals on the float z (coordinates in the hyperplane) for ``open_keys``:
    (witnesses {i: q in y-space}, interior supports {i: [n keys]})."""
    from .engine import _Engine
    from .repair import independent_columns

    n = keys.n
    basis = np.linalg.qr(np.eye(n) - 1.0 / n)[0][:, : n - 1]  # orthonormal basis of 1.z = 0
    Zp = keys.z[reps] @ basis
    pos = {j: r for r, j in enumerate(reps)}
    engine = _Engine(Zp, seed)
    engine.vertices.update(pos[j] for j in found)
    gain = np.array([float(g) for g in keys.gain])
    safe = np.where(gain != 0, gain, 1.0)
    witnesses, supports = {}, {}
    for i in open_keys:
        kind, *data = engine.clarkson(pos[i])
        if kind == "witness":
            qz = basis @ data[0]
            witnesses[i] = tuple(float(v) for v in np.where(gain != 0, qz / safe, 0.0))
        elif kind == "inside":
            cols, w = list(data[0]), np.asarray(data[1])
            order = np.argsort(-w)
            M = np.vstack([Zp[cols].T, np.ones(len(cols))])[:, order]
            picked = [cols[order[c]] for c in independent_columns(M)]
            if len(picked) == n:
                supports[i] = [reps[c] for c in picked]
    return witnesses, supports


def certify_layernorm_outputs(inputs, gain=None, bias=None, eps=0.0, *, min_margin=None, seed: int = 0) -> Certificate:
    """Certify which LayerNorm outputs can win the attention argmax, from the inputs.

    ``inputs``: N x n array of LayerNorm inputs (one row per key); ``gain``, ``bias``:
    length-n vectors (None: ones, zeros); ``eps`` >= 0 (torch convention: the biased
    variance plus eps under the square root).  The keys are the exact real outputs
    gain * (x - mean x) / sqrt(var x + eps) + bias; queries are all of R^n.  Returns a
    :class:`~lnproofs.certificates.Certificate` whose ``keys_from`` names the
    parameters; ``check_certificate(cert, inputs)`` re-verifies it.  ``min_margin``:
    count apart the selectable keys whose witness margin (score gap for a unit query) is
    below it.  What is decided for eps = 0 and eps > 0: see the module docstring.
    """
    from ..io.exact import exact_float64
    from .certification import check_min_margin

    X = as_real_array(exact_float64(inputs, "inputs"), name="inputs", ndim=2)
    min_margin = check_min_margin(min_margin)
    spec = layernorm_spec(X.shape[1], gain, bias, eps)
    check_layernorm_range(X, spec.eps)
    keys = ExactLayerNormKeys(X, spec)
    N, n = X.shape
    results: dict[int, KeyResult] = {}
    groups = _groups(keys)
    reps = []
    bad = np.flatnonzero(~keys.defined)
    if bad.size:
        raise InputError(
            f"LayerNorm input row {int(bad[0])} is constant and eps is 0, so its output is 0/0 "
            f"({bad.size} such rows); give eps > 0 or drop those rows"
        )
    for members in groups.values():
        reps.append(members[0])
    gain_arr = np.array([float(g) for g in keys.gain])
    safe = np.where(gain_arr != 0, gain_arr, 1.0)
    proposals = {i: tuple(float(v) for v in np.where(gain_arr != 0, keys.z[i] / safe, 0.0)) for i in reps}
    shared = {members[0] for members in groups.values() if len(members) > 1}
    found: dict = {}
    for mode, part in (("strict", [i for i in reps if i not in shared]), ("tie", [i for i in reps if i in shared])):
        found.update(_verify(keys, {i: proposals[i] for i in part}, mode))
        # the exact direction of z_i where its float failed: c_i / gain
        exact = {
            i: tuple(Fraction(c) / g if g else Fraction(0) for c, g in zip(keys.C[i], keys.gain))
            for i in part
            if i not in found
        }
        found.update(_verify(keys, exact, mode))
    open_keys = [i for i in reps if i not in found and i not in shared]
    supports = {}
    if open_keys and len(reps) > n:
        witnesses, supports = _lp_round(keys, reps, open_keys, found, seed)
        found.update(_verify(keys, witnesses, "strict"))
    margins = dict(zip(found, _float_margins(keys, list(found.items()))))
    groups_of = {members[0]: members for members in groups.values()}
    for i in reps:
        if i in found and i in shared:
            results[i] = KeyResult(i, "tie-only", found[i], Combination((groups_of[i][1],), (1,)), "exact")
        elif i in found:
            results[i] = KeyResult(i, "selectable", found[i], None, "exact", margins[i])
        elif i in supports and check_ln_interior(keys, i, supports[i]) is None:
            results[i] = KeyResult(
                i, "unselectable", None, Combination(tuple(supports[i]), _midpoints(keys, i, supports[i])), "exact"
            )
        else:
            why = (
                "the search proposed an interior simplex but interval arithmetic did not prove it"
                if i in supports
                else "no witness and no interior simplex could be proved"
            )
            results[i] = KeyResult(i, "undecided", reason=why)
    for members in groups.values():
        head = results[members[0]]
        for j in members[1:]:
            twin = members[0]
            if head.status == "tie-only":
                ok = check_ln_witnesses(keys, [(j, head.witness)], mode="tie")[0] is None
                results[j] = (
                    KeyResult(j, "tie-only", head.witness, Combination((twin,), (1,)), "exact")
                    if ok
                    else KeyResult(j, "undecided", reason="its output equals another key's")
                )
            elif head.status == "unselectable":
                results[j] = KeyResult(
                    j,
                    "unselectable",
                    None,
                    Combination(tuple(head.combination.indices), head.combination.weights),
                    "exact",
                )
            else:
                results[j] = KeyResult(j, head.status, None, None, "none", reason=head.reason)
    return Certificate(
        N,
        n,
        {"kind": "free"},
        tuple(results[i] for i in range(N)),
        min_margin=min_margin,
        keys_from=layernorm_keys_to_json(spec),
    )


def _midpoints(keys: ExactLayerNormKeys, i: int, support: list[int]) -> tuple:
    """Float barycentric weights of z_i over the support (informational; the checker
    recomputes them with intervals)."""
    n = keys.n
    A = np.vstack([keys.z[support][:, : n - 1].T, np.ones(n)])
    w = np.linalg.solve(A, np.append(keys.z[i][: n - 1], 1.0))
    return tuple(float(v) for v in w)


def _verify(keys: ExactLayerNormKeys, proposals: dict, mode: str) -> dict:
    items = list(proposals.items())
    msgs = check_ln_witnesses(keys, items, mode=mode)
    return {i: q for (i, q), m in zip(items, msgs) if m is None}
