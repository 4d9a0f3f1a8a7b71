"""Numeric checks of the attention theorems: uniform queries, witness queries, the
hull criterion, affinely independent keys, the three caveats and the demo threshold.

Scores are computed with one matrix product per batch; a gap is "resolvable" when it
exceeds four tolerances of its rounding scale (sum of |q_l k_l| terms), and only
resolvable gaps are held to a strict inequality.
"""

from __future__ import annotations

import math
from collections import Counter

import torch

from .checks_layernorm import resolvable
from .geometry import center, divide, normaliser_torch, safe_norm
from .outcome import Outcome
from .sampling import orthonormal_hyperplane_basis, random_gains, unit_vectors
from .sweep import sweep

__all__ = ["CHECKS", "DEMO_ANGLES_DEG", "DEMO_ADJUSTABLE", "DEMO_WATCHED"]

#: the demo configuration: unit keys at these angles, key index 2 scaled by m, key index 1 watched
DEMO_ANGLES_DEG = (0.0, 45.0, 90.0, 180.0)
DEMO_ADJUSTABLE = 2
DEMO_WATCHED = 1


def _kappa(x: torch.Tensor, eps: float) -> torch.Tensor:
    n = x.shape[-1]
    den = normaliser_torch(safe_norm(center(x)), n, eps)
    return 1.0 + math.sqrt(n) * x.abs().amax(-1, keepdim=True) / torch.where(den > 0, den, torch.ones_like(den))


def _never_wins(Q, K, watched, tol, message, extra_scale=0.0):
    """Failure counts when a key in ``watched`` (bool mask over keys) strictly wins a query beyond rounding."""
    S = Q @ K.T
    scale = (Q.abs() @ K.abs().T).amax(-1) + extra_scale
    top = torch.topk(S, 2, dim=-1)
    gap = top.values[:, 0] - top.values[:, 1]
    bad = watched[top.indices[:, 0]] & (gap > tol * scale)
    worst = (
        float(divide(gap, scale)[watched[top.indices[:, 0]]].max()) if bool(watched[top.indices[:, 0]].any()) else 0.0
    )
    return max(0.0, worst), ({message: int(bad.sum())} if bool(bad.any()) else {})


def uniform_query(ctx):
    def measure(x, a, b, eps):
        n = x.shape[-1]
        x = x[resolvable(x, _kappa(x, eps) - 1.0, eps)]
        k = ctx.layer_norm(x, (n,), a, b, eps)
        q = 1.0 / a
        scale = k.abs() @ q.abs() + float(q.abs() @ b.abs()) + n * _kappa(x, eps)[:, 0]
        return divide((k @ q - float(q @ b)).abs(), scale), {}

    return sweep(ctx, [(kind, eps) for kind in ("mixed", "positive", "clustered") for eps in (0.0, 1e-5, 1.0)], measure)


def _witness_outcome(ctx, family, width, K, Q, half_sq, extra, acc):
    """Compare gaps q_i.(k_i - k_j) with their predicted values and hold resolvable ones to strictness."""
    tol = ctx.tol(width)
    S = Q @ K.T
    A = Q.abs() @ K.abs().T
    gap = S.diagonal()[:, None] - S
    scale = A.diagonal()[:, None] + A + extra
    off = ~torch.eye(K.shape[0], dtype=torch.bool, device=K.device)
    err = divide((gap - half_sq).abs(), scale)[off]
    resolvable = (half_sq > 4 * tol * scale) & off
    bad = int((resolvable & (gap <= 0)).sum())
    count, worst, fails = acc.get((family, width), (0, 0.0, Counter()))
    if bad:
        fails["a witness query does not make its key win strictly"] += bad
    acc[(family, width)] = (count + int(off.sum()), max(worst, float(err.max())), fails)


def _sets(ctx, width, size=128):
    return max(2, ctx.rows(width) // size)


def sphere_witness(ctx):
    acc = {}
    for width in ctx.widths():
        for _ in range(_sets(ctx, width)):
            b = torch.randn((width,), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device) * 3.0
            rho = 10.0 ** (4 * float(torch.rand((), generator=ctx.gen, device=ctx.device)) - 2)
            # keys b + rho u on a sphere, and near each other (clustered directions)
            U = unit_vectors(64, width, **ctx.opts())
            K = b + rho * U
            extra = rho * rho + (b.abs().sum() * rho)
            half = 0.5 * ((K[:, None, :] - K[None, :, :]) ** 2).sum(-1)
            _witness_outcome(ctx, "sphere", width, K, K - b, half, float(extra), acc)
            U = unit_vectors(1, width, **ctx.opts()) + 1e-3 * unit_vectors(64, width, **ctx.opts())
            K = b + rho * U / torch.linalg.vector_norm(U, dim=-1, keepdim=True)
            half = 0.5 * ((K[:, None, :] - K[None, :, :]) ** 2).sum(-1)
            _witness_outcome(ctx, "clustered", width, K, K - b, half, float(extra), acc)
            # LayerNorm outputs with equal gains c: the sphere of radius |c| sqrt(n) centred at b
            c = random_gains(width, "equal", **ctx.opts())
            x = torch.randn((64, width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
            K = ctx.layer_norm(x, (width,), c, b, 0.0)
            s = K - b
            half = 0.5 * ((s[:, None, :] - s[None, :, :]) ** 2).sum(-1)
            kap = _kappa(x, 0.0)[:, 0]
            extra = float(c[0] ** 2) * width * (kap[:, None] + kap[None, :]) + float(
                b.abs().sum() * c[0].abs()
            ) * math.sqrt(width)
            _witness_outcome(ctx, "layernorm", width, K, s, half, extra, acc)
    return [Outcome(f, w, n, m, tuple(f"{k} ({v} pairs)" for k, v in fl.items())) for (f, w), (n, m, fl) in acc.items()]


def ellipsoid_witness(ctx):
    acc = {}
    for width in ctx.widths():
        for kind in ("mixed", "positive", "clustered"):
            for _ in range(_sets(ctx, width, 192)):
                a = random_gains(width, kind, **ctx.opts())
                b = torch.randn((width,), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
                x = torch.randn((64, width), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
                K = ctx.layer_norm(x, (width,), a, b, 0.0)
                s = (K - b) / a
                Q = s / a
                half = 0.5 * ((s[:, None, :] - s[None, :, :]) ** 2).sum(-1)
                spread = (Q.abs() @ b.abs())[:, None]
                kap = _kappa(x, 0.0)[:, 0]
                extra = width * (kap[:, None] + kap[None, :]) * (1 + float((1 / a.abs()).max())) + spread
                _witness_outcome(ctx, kind, width, K, Q, half, extra, acc)
    return [Outcome(f, w, n, m, tuple(f"{k} ({v} pairs)" for k, v in fl.items())) for (f, w), (n, m, fl) in acc.items()]


def _queries(ctx, count, dim, targets=None):
    """Random directions, plus each target direction and small perturbations of it."""
    Q = [unit_vectors(count, dim, **ctx.opts())]
    if targets is not None and targets.numel():
        t = targets / safe_norm(targets)
        Q += [
            t,
            t + 0.05 * unit_vectors(t.shape[0], dim, **ctx.opts()),
            t + 0.3 * unit_vectors(t.shape[0], dim, **ctx.opts()),
        ]
    return torch.cat(Q)


def selectable_iff_not_in_hull(ctx):
    acc = {}
    for dim in sorted({2, 3, min(ctx.width, 8)}):
        tol = ctx.tol(dim)
        for _ in range(max(2, ctx.rows(dim) // 256)):
            centre = torch.randn((dim,), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device)
            rho = 10.0 ** (2 * float(torch.rand((), generator=ctx.gen, device=ctx.device)) - 1)
            V = centre + rho * unit_vectors(12, dim, **ctx.opts())
            W = -torch.log(torch.rand((8, 12), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device))
            W = W / W.sum(-1, keepdim=True)
            I = W @ V
            K = torch.cat([V, I])
            fails = Counter()
            # the "not in hull" side: each vertex wins strictly for its witness v - centre
            Q = V - centre
            S = Q @ K.T
            A = Q.abs() @ K.abs().T
            idx = torch.arange(12, device=ctx.device)
            gap = S[idx, idx][:, None] - S
            gap[idx, idx] = math.inf
            resolvable = gap.min(-1).values.abs() > 4 * tol * A.amax(-1)
            fails.update({"a vertex does not win for its witness": int((resolvable & (gap.min(-1).values <= 0)).sum())})
            # the "in hull" side: exact-by-construction convex weights, re-evaluated in floating point
            residual = divide((W @ V - I).abs().amax(-1), (W @ V.abs()).amax(-1))
            err = max(float(residual.max()), float((W.sum(-1) - 1).abs().max()))
            if bool((W <= 0).any()):
                fails["a convex weight is not strictly positive"] += int((W <= 0).sum())
            # sampled queries: a key with convex weights never strictly wins
            Qs = _queries(ctx, max(64, ctx.samples // 8), dim, I - centre)
            watched = torch.zeros(K.shape[0], dtype=torch.bool, device=ctx.device)
            watched[12:] = True
            worst, f = _never_wins(Qs, K, watched, tol, "a key inside the hull of the others wins a sampled query")
            fails.update(f)
            err = max(err, worst)
            count, w0, fl = acc.get(dim, (0, 0.0, Counter()))
            fl.update({k: v for k, v in fails.items() if v})
            acc[dim] = (count + Qs.shape[0] * K.shape[0] + 12 * K.shape[0], max(w0, err), fl)
    return [Outcome("hull", d, n, m, tuple(f"{k} ({v})" for k, v in fl.items())) for d, (n, m, fl) in acc.items()]


def simplex_vertices(ctx):
    """Affinely independent keys (m + 1 <= d + 1 random points, generic): the theorem's query for
    key i, column i of the pseudo-inverse of [K | 1], gives k_i a score one more than every other key
    (the error of that solve measured against its scale times the condition number of [K | 1])."""
    acc = {}
    for dim in sorted({2, 3, min(ctx.width, 8), ctx.width}):
        tol = ctx.tol(dim)
        for m in sorted({1, dim // 2, dim}):
            K = torch.randn(
                (max(2, ctx.rows(dim) // 64), m + 1, dim), generator=ctx.gen, dtype=ctx.dtype, device=ctx.device
            )
            A = torch.cat([K, torch.ones(K.shape[:2] + (1,), dtype=ctx.dtype, device=ctx.device)], dim=-1)
            Q = torch.linalg.pinv(A)[:, :dim, :].transpose(1, 2)  # row i: the query of key i
            S = Q @ K.transpose(1, 2)  # S[b, i, j] = q_i . k_j
            own = torch.diagonal(S, dim1=1, dim2=2)[:, :, None]
            off = ~torch.eye(m + 1, dtype=torch.bool, device=ctx.device)
            sv = torch.linalg.svdvals(A)  # a solve's error grows with A's condition
            scale = ((Q.abs() @ K.abs().transpose(1, 2)).amax(-1, keepdim=True) + 1.0) * (sv[:, :1] / sv[:, -1:])[
                :, :, None
            ]
            err = divide(((own - S) - 1.0).abs()[:, off], scale.expand_as(S)[:, off])
            fails = Counter({"a key does not win its theorem query by 1": int((err > tol).sum())})
            count, worst, fl = acc.get(dim, (0, 0.0, Counter()))
            fl.update({k: v for k, v in fails.items() if v})
            acc[dim] = (count + int(K.shape[0]) * (m + 1), max(worst, float(err.max())), fl)
    return [Outcome("simplex", d, n, w, tuple(f"{k} ({v})" for k, v in fl.items())) for d, (n, w, fl) in acc.items()]


def _cross_polytope(t, plus, minus):
    """Strictly positive convex weights over the points ``plus[j]`` ~ R_j e_j and ``minus[j]`` ~ -R_j e_j
    reproducing sum_j t_j e_j, and the slack (positive exactly when the point is strictly inside)."""
    rp = safe_norm(plus)[:, 0]
    rm = safe_norm(minus)[:, 0]
    wp = t.clamp_min(0) / rp
    wm = (-t).clamp_min(0) / rm
    slack = 1.0 - (wp.sum() + wm.sum())
    share = slack / (2 * t.numel())
    return wp + share, wm + share, float(slack)


def _inside_outcome(ctx, width, point, plus, minus, fails, extra_scale=0.0):
    """Weights, residual and sampled queries for a point claimed strictly inside the cross-polytope."""
    tol = ctx.tol(width)
    t = (plus @ point) / safe_norm(plus)[:, 0]  # coordinates of the point along each direction plus_j
    wp, wm, slack = _cross_polytope(t, plus, minus)
    if slack <= 0:
        fails["the key is not strictly inside the hull of the others (no positive slack)"] += 1
    recon = wp @ plus + wm @ minus
    scale = float((wp @ plus.abs() + wm @ minus.abs()).max()) + float(point.abs().max()) + extra_scale
    err = max(float((recon - point).abs().max()) / scale, abs(float(wp.sum() + wm.sum()) - 1.0))
    K = torch.cat([plus, minus, point[None]])
    watched = torch.zeros(K.shape[0], dtype=torch.bool, device=ctx.device)
    watched[-1] = True
    Q = _queries(ctx, max(64, ctx.samples // 8), K.shape[1], point[None])
    worst, f = _never_wins(Q, K, watched, tol, "the caveat key wins a sampled query", extra_scale)
    fails.update(f)
    return max(err, worst), Q.shape[0] * K.shape[0] + K.shape[0]


def eps_caveat(ctx):
    out = []
    for width in ctx.widths():
        m = min(width - 1, 64)
        worst, count, fails = 0.0, 0, Counter()
        for eps in (1e-5, 1e-3, 1.0):
            for _ in range(max(1, ctx.rows(width) // 512)):
                U = orthonormal_hyperplane_basis(width, m, **ctx.opts())
                plus = ctx.layer_norm(U, (width,), None, None, eps)
                minus = ctx.layer_norm(-U, (width,), None, None, eps)
                coeff = unit_vectors(1, m, **ctx.opts())[0]
                c = 10.0 ** (2 * float(torch.rand((), generator=ctx.gen, device=ctx.device)) - 1)
                x0 = c + 0.1 * math.sqrt(eps) * (coeff @ U)
                k0 = ctx.layer_norm(x0[None], (width,), None, None, eps)[0]
                if float(safe_norm(k0[None])) >= math.sqrt(width):
                    fails["the near-constant key is not strictly inside the sphere"] += 1
                kappa = float(_kappa(x0[None], eps))  # centring sensitivity of the near-constant input
                point = k0 @ U.T  # coordinates in the basis; the key lies in its span up to rounding
                off_span = float((k0 - point @ U).abs().max())
                e, k = _inside_outcome(ctx, width, point, plus @ U.T, minus @ U.T, fails, extra_scale=kappa)
                worst = max(worst, e, off_span / (kappa + float(k0.abs().max())))
                count += k
        out.append(Outcome("near-constant", width, count, worst, tuple(f"{k} ({v})" for k, v in fails.items())))
    return out


def rank_deficient_caveat(ctx):
    out = []
    for width in ctx.widths():
        if width < 3:
            continue  # the LayerNorm image at width 2 is two points; the caveat needs width >= 3
        worst, count, fails = 0.0, 0, Counter()
        head = 1 if width == 3 else 2
        for _ in range(max(2, ctx.rows(width) // 256)):
            U = orthonormal_hyperplane_basis(width, head + 1, **ctx.opts())
            spread = U[:head]
            rest = math.sqrt(1.0 - 0.09 - (0.04 if head == 2 else 0.0))
            special = 0.3 * U[0] + (0.2 * U[1] if head == 2 else 0.0) + rest * U[head]
            plus = ctx.layer_norm(spread, (width,), None, None, 0.0)
            minus = ctx.layer_norm(-spread, (width,), None, None, 0.0)
            ks = ctx.layer_norm(special[None], (width,), None, None, 0.0)[0]
            # before the key map: the special key wins strictly for itself as query (sphere witness)
            K = torch.cat([plus, minus, ks[None]])
            s = K @ ks
            if not bool((s[-1] > s[:-1]).all()):
                fails["the LayerNorm key is not selectable before the key map"] += 1
            # after W_k (rows spanning the first basis directions): strictly inside, unselectable
            Wk = spread
            e, k = _inside_outcome(ctx, head, ks @ Wk.T, plus @ Wk.T, minus @ Wk.T, fails, extra_scale=1.0)
            worst, count = max(worst, e), count + k + K.shape[0]
        out.append(Outcome("key-map", width, count, worst, tuple(f"{k} ({v})" for k, v in fails.items())))
    return out


def duplicate_caveat(ctx):
    out = []
    for width in ctx.widths():
        tol = ctx.tol(width)
        worst, count, fails = 0.0, 0, Counter()
        for _ in range(max(2, ctx.rows(width) // 256)):
            K = unit_vectors(48, width, **ctx.opts()) * 2.0 + 0.5
            K[40:48] = K[0:8]  # eight duplicated pairs
            twins = torch.zeros(48, dtype=torch.bool, device=ctx.device)
            twins[0:8] = True
            twins[40:48] = True
            Q = _queries(ctx, max(64, ctx.samples // 8), width, K[:8] - 0.5)
            S = Q @ K.T
            A = Q.abs() @ K.abs().T
            tie = divide((S[:, 0:8] - S[:, 40:48]).abs(), A[:, 0:8])
            e, f = _never_wins(Q, K, twins, tol, "a duplicated key wins strictly")
            fails.update(f)
            # the witness of a duplicated key makes the pair tie at the top, strictly above the rest
            Wq = K[:8] - 0.5
            Sw = Wq @ K.T
            others = torch.ones(48, dtype=torch.bool, device=ctx.device)
            others[0:8] = False
            others[40:48] = False
            top_rest = Sw[:, others].max(-1).values
            diag = torch.arange(8, device=ctx.device)
            below = Sw[diag, diag] - top_rest
            resolvable = below.abs() > 4 * tol * (Wq.abs() @ K.abs().T).amax(-1)
            if bool((resolvable & (below <= 0)).any()):
                fails["the witness of a duplicated key does not put the pair strictly on top"] += 1
            worst, count = max(worst, float(tie.max()), e), count + S.numel()
        out.append(Outcome("duplicates", width, count, worst, tuple(f"{k} ({v})" for k, v in fails.items())))
    return out


def _demo_keys(m, dtype, device):
    rad = torch.tensor(DEMO_ANGLES_DEG, dtype=torch.float64) * (math.pi / 180.0)
    K = torch.stack([torch.cos(rad), torch.sin(rad)], dim=-1)
    K = torch.where(K.abs() < 1e-12, torch.zeros_like(K), K)  # cos 90 and sin 180 are exactly 0
    K[DEMO_ADJUSTABLE] *= m
    return K.to(dtype=dtype, device=device)


def demo_threshold(ctx):
    tol = ctx.tol(2)
    t = 1.0 + math.sqrt(2.0)
    h = math.sqrt(2.0) / 2.0
    others = [i for i in range(4) if i != DEMO_WATCHED]
    fails, worst, count = Counter(), 0.0, 0
    digits = int(math.log10(1.0 / ctx.u)) - 1
    ms = [1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 100.0, t]
    ms += [t * (1 + s * 10.0**-k) for k in range(1, digits) for s in (-1, 1)]
    angles = torch.linspace(0, 2 * math.pi, 8193, dtype=torch.float64)[:-1]
    dense = torch.stack([torch.cos(angles), torch.sin(angles)], -1).to(ctx.dtype).to(ctx.device)
    for m in ms:
        K = _demo_keys(m, ctx.dtype, ctx.device)
        q = torch.tensor([1.0, 1.0 / m], dtype=ctx.dtype, device=ctx.device)  # normal of the segment k1 -- m k3
        s = K @ q
        scale = float((K.abs() @ q.abs()).max())
        margin = float(s[DEMO_WATCHED] - s[others].max())
        predicted = h * (1 + 1 / m) - 1
        worst = max(worst, abs(margin - predicted) / scale)
        w3 = h / m
        w1, w4 = (1 - w3 + h) / 2, (1 - w3 - h) / 2
        combo = w1 * K[0] + w3 * K[2] + w4 * K[3]
        worst = max(worst, float((combo - K[DEMO_WATCHED]).abs().max()) / float(K.abs().max()))
        if predicted > 4 * tol * scale and margin <= 0:
            fails["key 2 should be selectable (m < 1 + sqrt(2)) but its witness fails"] += 1
        if predicted < -4 * tol * scale:
            if w4 <= 0:
                fails["the convex weights are not strictly positive above the threshold"] += 1
            watched = torch.zeros(4, dtype=torch.bool, device=ctx.device)
            watched[DEMO_WATCHED] = True
            e, f = _never_wins(
                torch.cat([dense, q[None] / q.norm()]),
                K,
                watched,
                tol,
                "key 2 wins a sampled query above the threshold",
            )
            fails.update(f)
            worst = max(worst, e)
        count += dense.shape[0] * 4 + 4
    # locate the threshold numerically by bisection on the witness margin's sign
    lo, hi = 1.5, 4.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        K = _demo_keys(mid, ctx.dtype, ctx.device)
        q = torch.tensor([1.0, 1.0 / mid], dtype=ctx.dtype, device=ctx.device)
        s = K @ q
        if float(s[DEMO_WATCHED] - s[others].max()) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-17 * t:
            break
    slope = h / (t * t)
    worst = max(worst, abs(0.5 * (lo + hi) - t) * slope / 2.0)
    return [Outcome("demo", 2, count, worst, tuple(f"{k} ({v})" for k, v in fails.items()))]


CHECKS = {
    "attention.uniform_query": uniform_query,
    "attention.sphere_witness": sphere_witness,
    "attention.ellipsoid_witness": ellipsoid_witness,
    "attention.selectable_iff_not_in_hull": selectable_iff_not_in_hull,
    "attention.eps_caveat": eps_caveat,
    "attention.rank_deficient_caveat": rank_deficient_caveat,
    "attention.duplicate_caveat": duplicate_caveat,
    "attention.demo_threshold": demo_threshold,
    "attention.simplex_vertices": simplex_vertices,
}
