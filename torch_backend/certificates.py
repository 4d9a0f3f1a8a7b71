"""Numeric re-check of a selectability certificate (schema ``lnproofs.selectability/1``).

``recheck_certificate(keys, certificate)`` recomputes, in floating point on the chosen
device, every witness margin and every convex-combination residual the certificate
states, perturbs every witness to confirm that its key keeps winning, and samples many
queries from the certificate's query set (random directions plus directions aimed at
each key that is claimed never to win) to confirm that no key certified
``unselectable``, ``tie-only`` or ``not-realisable`` ever strictly wins.  A key claimed
selectable without a witness (free or ball queries, affinely independent keys: theorem
``attention.simplex_vertices``) is re-checked with the theorem's own query, its column of the
pseudo-inverse of ``[K | 1]`` (key i scores one more than every other key).  It never
decides a status: it is a second line of evidence, and any disagreement with the
certificate makes ``ok`` False with a message naming the key.

Returned dict::

    {"ok": bool, "device": str, "dtype": str, "messages": [disagreements],
     "notes": [things a float cannot resolve], "n_keys": int, "dim": int,
     "query_set": kind, "checked": {"witnesses", "perturbed_witnesses",
     "combinations", "duals", "sampled_queries", "undecided"}, "max_combination_residual",
     "min_witness_margin", "tolerance": {"margin", "combination"}, "seconds",
     "per_key": [{"index", "status", "ok", "margin", "residual"}]}
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import torch

from lnproofs.kernel.errors import CertificateFormatError, ShapeError

from .device import device_label, resolve_device, resolve_dtype
from .geometry import safe_norm
from .sampling import make_generator, unit_vectors
from .tolerances import tolerance

__all__ = ["recheck_certificate", "SCHEMA", "STATUSES"]

SCHEMA = "lnproofs.selectability/1"
STATUSES = ("selectable", "tie-only", "unselectable", "undecided", "not-realisable")
NEVER_WINS = ("tie-only", "unselectable", "not-realisable")


def _weight(text, where):
    try:
        value = Fraction(str(text))
    except (ValueError, ZeroDivisionError):
        raise CertificateFormatError(f"{where}: weight {text!r} is not a rational number 'p/q'") from None
    return float(value)


def _vector(value, length, where, t):
    try:
        if isinstance(value, (list, tuple)):
            value = [float(Fraction(v)) if isinstance(v, str) else v for v in value]
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, ZeroDivisionError):
        raise CertificateFormatError(f"{where} is not a list of numbers") from None
    if arr.ndim != 1 or (length is not None and arr.shape[0] != length) or not np.all(np.isfinite(arr)):
        raise CertificateFormatError(f"{where} must be {length} finite numbers; got shape {arr.shape}")
    return torch.as_tensor(arr, **t)


class _QuerySet:
    """Map a certificate's query set to: a sampler, a projection of the keys, and a witness membership test."""

    def __init__(self, spec, dim, t):
        from lnproofs.kernel.querysets import query_set_from_json

        if not isinstance(spec, dict) or "kind" not in spec:
            raise CertificateFormatError("query_set must be an object with a 'kind' (free, subspace, ball, layernorm)")
        self.kind = spec["kind"]
        self.t = t
        self.dim = dim
        if self.kind not in ("free", "subspace", "ball", "layernorm"):
            raise CertificateFormatError(
                f"query_set kind {self.kind!r} is not re-checked numerically here; accepted: free, subspace, ball, layernorm"
            )
        qs = query_set_from_json(dict(spec))  # the kernel's reading of the set: fields, types, shapes
        if self.kind != "ball":
            qs.validate(dim)
        if self.kind == "subspace":
            self.W = torch.as_tensor(qs.matrix, **t)
        elif self.kind == "ball":
            self.radius = float(qs.radius)
        elif self.kind == "layernorm":
            arrays = qs.arrays()
            self.gamma, self.beta = torch.as_tensor(arrays["gamma"], **t), torch.as_tensor(arrays["beta"], **t)
            self.Wq, self.bq = torch.as_tensor(arrays["W_q"], **t), torch.as_tensor(arrays["b_q"], **t)
            self.n = qs.width
            self.radius = None if qs.radius is None else float(qs.radius)

    def sample(self, count, gen, aims):
        """``count`` random queries in the set, plus queries aimed along each row of ``aims`` (and perturbed)."""
        opts = {"gen": gen, **self.t}
        if self.kind == "subspace":
            z = unit_vectors(count, self.W.shape[0], **opts)
            if aims.numel():
                za = aims @ self.W.T
                z = torch.cat([z, za, za + 0.1 * safe_norm(za) * unit_vectors(za.shape[0], za.shape[1], **opts)])
            return z @ self.W
        if self.kind == "layernorm":
            n = self.n
            u = unit_vectors(count, n, **opts)
            if aims.numel():
                ua = (aims @ self.Wq) * self.gamma
                u = torch.cat([u, ua, ua + 0.1 * safe_norm(ua) * unit_vectors(ua.shape[0], n, **opts)])
            u = u - u.mean(-1, keepdim=True)
            rho = torch.rand((u.shape[0], 1), generator=gen, **self.t) ** (1.0 / max(n - 1, 1))
            u = math.sqrt(n) * rho * u / safe_norm(u)
            q = (self.gamma * u + self.beta) @ self.Wq.T + self.bq
            if self.radius is not None:
                q = q[safe_norm(q)[:, 0] <= self.radius]
            return q
        q = unit_vectors(count, self.dim, **opts)
        if aims.numel():
            a = aims / safe_norm(aims)
            q = torch.cat([q, a, a + 0.1 * unit_vectors(a.shape[0], self.dim, **opts)])
        return q * (self.radius / safe_norm(q) if self.kind == "ball" else 1.0)

    def project(self, K):
        """Keys as the query set sees them (W k for a subspace), for convex-combination residuals."""
        return K @ self.W.T if self.kind == "subspace" else K

    def membership(self, q, result, tol):
        """None if ``q`` is in the set (as far as floats tell), else a message."""
        if self.kind == "ball" or (self.kind == "layernorm" and self.radius is not None):
            norm = float(safe_norm(q[None]))
            if norm > self.radius * (1 + tol):
                return f"witness norm {norm:.17g} exceeds the ball radius {self.radius:.17g}"
        if self.kind == "subspace" and result.get("z") is not None:
            z = _vector(result["z"], self.W.shape[0], f"result {result['index']} z", self.t)
            res = float((z @ self.W - q).abs().max()) / max(float((z.abs() @ self.W.abs()).max()), 1e-300)
            if res > tol:
                return f"witness differs from W^T z by {res:.3e} (relative)"
        if self.kind == "layernorm" and result.get("u") is not None:
            u = _vector(result["u"], self.n, f"result {result['index']} u", self.t)
            if abs(float(u.sum())) > tol * float(u.abs().sum()) + tol:
                return f"u is not orthogonal to the ones vector (sum {float(u.sum()):.3e})"
            if float(safe_norm(u[None])) > math.sqrt(self.n) * (1 + tol):
                return f"u has norm {float(safe_norm(u[None])):.17g} > sqrt(n) = {math.sqrt(self.n):.17g}"
            qu = (self.gamma * u + self.beta) @ self.Wq.T + self.bq
            scale = float(((self.gamma.abs() * u.abs() + self.beta.abs()) @ self.Wq.abs().T).max()) + float(
                self.bq.abs().max()
            )
            res = float((qu - q).abs().max()) / max(scale, 1e-300)
            if res > tol:
                return f"witness differs from W_q(gamma * u + beta) + b_q by {res:.3e} (relative)"
        return None

    def witness_of(self, result):
        if result.get("witness") is not None:
            return _vector(result["witness"], self.dim, f"result {result['index']} witness", self.t)
        if self.kind == "subspace" and result.get("z") is not None:
            return _vector(result["z"], self.W.shape[0], f"result {result['index']} z", self.t) @ self.W
        if self.kind == "layernorm" and result.get("u") is not None:
            u = _vector(result["u"], self.n, f"result {result['index']} u", self.t)
            return (self.gamma * u + self.beta) @ self.Wq.T + self.bq
        return None


def _dual_bound(qs, K, i, dual):
    """For convex weights lambda over other keys, v = k_i - sum_j lambda_j k_j; every realisable query
    q = W_q(gamma * u + beta) + b_q (u orthogonal to 1, ||u|| <= sqrt(n)) has q.v <= sqrt(n) ||P(gamma * W_q^T v)|| + q0.v
    with q0 = W_q beta + b_q.  Returns (that bound, its rounding scale)."""
    idx, weights = dual.get("indices"), dual.get("weights")
    N = K.shape[0]
    if (
        not isinstance(idx, list)
        or not isinstance(weights, list)
        or len(idx) != len(weights)
        or not idx
        or not all(isinstance(j, int) and 0 <= j < N for j in idx)
    ):
        raise CertificateFormatError(f"key {i}: dual needs equal-length 'indices' (0..{N - 1}) and 'weights'")
    lam = torch.tensor([_weight(x, f"key {i} dual") for x in weights], dtype=K.dtype, device=K.device)
    sel = K[torch.tensor(idx, device=K.device)]
    v = K[i] - lam @ sel
    w = qs.gamma * (v @ qs.Wq)
    pw = w - w.mean()
    q0 = qs.beta @ qs.Wq.T + qs.bq
    bound = math.sqrt(qs.n) * float(safe_norm(pw[None])) + float(q0 @ v)
    vs = K[i].abs() + lam.abs() @ sel.abs()
    scale = math.sqrt(qs.n) * float(safe_norm((qs.gamma.abs() * (vs @ qs.Wq.abs()))[None])) + float(q0.abs() @ vs)
    return bound, scale


def _witnesses(K, pending, tol, gen, checked, notes, min_margin, rows_for):
    """Margins of every witness in one batched product; strict wins re-tested under perturbations
    no larger than half the margin over the largest key distance (bounded by the distances to the
    centroid), which cannot change the winner in exact arithmetic."""
    if not pending:
        return min_margin
    N, d = K.shape
    rows = torch.arange(len(pending), device=K.device)
    own_index = torch.tensor([p[2] for p in pending], device=K.device)
    Q = torch.stack([p[4] for p in pending])
    margins, scales, lows = [], [], []
    for lo in range(0, Q.shape[0], rows_for):
        Qc, ic, rc = Q[lo : lo + rows_for], own_index[lo : lo + rows_for], rows[: min(rows_for, Q.shape[0] - lo)]
        S, A = Qc @ K.T, Qc.abs() @ K.abs().T
        own, own_abs = S[rc, ic], A[rc, ic]
        S[rc, ic], A[rc, ic] = -math.inf, -math.inf
        margins.append(own - S.max(-1).values)
        scales.append(own_abs + A.max(-1).values)
        S[rc, ic] = math.inf
        lows.append(S.min(-1).values)
    margin, scale, low = torch.cat(margins), torch.cat(scales), torch.cat(lows)
    centre = K.mean(0)
    reach = torch.linalg.vector_norm(K - centre, dim=-1)
    perturb = []
    for r, (entry, bad, i, status, q, stated) in enumerate(pending):
        m, sc = float(margin[r]), float(scale[r])
        entry["margin"] = m
        if status == "selectable":
            min_margin = min(min_margin, m / sc if sc > 0 else 0.0)
            if m < -tol * sc:
                bad.append(
                    f"certified selectable, but in floating point another key beats it for the witness by {-m:.3e}"
                )
            elif m <= tol * sc:
                notes.append(
                    f"key {i}: witness margin {m:.3e} is below the rounding scale {tol * sc:.3e}; "
                    "floating point cannot confirm the strict win"
                )
            else:
                spread = float(reach[i] + reach.max())
                if spread > 0:
                    perturb.append((r, 0.5 * m / spread))
            if isinstance(stated, (int, float)) and abs(stated - m) > 1e-6 * max(abs(stated), sc):
                notes.append(
                    f"key {i}: stated margin {stated!r} differs from the recomputed q.k_i - max_j q.k_j = {m:.17g}"
                )
        else:  # tie-only: the key attains the maximum, and some key is strictly below
            if abs(m) > tol * sc:
                bad.append(f"certified tie-only, but its query gives margin {m:.3e} instead of a tie")
            elif not float(low[r]) < float(Q[r] @ K[i]) - tol * sc:
                notes.append(f"key {i}: no key is resolvably below the tie for its query")
    if perturb:
        copies = 16
        which = torch.tensor([r for r, _ in perturb], device=K.device).repeat_interleave(copies)
        radius = torch.tensor([rad for _, rad in perturb], dtype=K.dtype, device=K.device).repeat_interleave(copies)
        P = Q[which] + radius[:, None] * unit_vectors(which.numel(), d, gen=gen, dtype=K.dtype, device=K.device)
        ii = own_index[which]
        failed = set()
        for lo in range(0, P.shape[0], rows_for):
            Pc, ic = P[lo : lo + rows_for], ii[lo : lo + rows_for]
            rc = torch.arange(Pc.shape[0], device=K.device)
            S = Pc @ K.T
            own = S[rc, ic].clone()
            S[rc, ic] = -math.inf
            lose = own - S.max(-1).values <= -tol * scale[which[lo : lo + rows_for]]
            failed.update(which[lo : lo + rows_for][lose].tolist())
        checked["perturbed_witnesses"] += P.shape[0]
        for r in sorted(failed):
            pending[r][1].append("a perturbed witness (inside the margin's safety radius) does not make it win")
    return min_margin


def recheck_certificate(
    keys,
    certificate: dict,
    *,
    device="auto",
    dtype="float64",
    samples: int = 2048,
    seed: int = 0,
    chunk_rows: int | None = None,
) -> dict:
    """Re-check ``certificate`` (the JSON dict) against ``keys`` (N x d array) in floating point."""
    from lnproofs.kernel.arrays import as_real_array

    start = time.perf_counter()
    dev, dt = resolve_device(device), resolve_dtype(dtype)
    t = {"dtype": dt, "device": dev}
    keys = as_real_array(keys, name="keys", ndim=2)
    if not isinstance(certificate, dict):
        raise CertificateFormatError("the certificate must be a JSON object")
    if certificate.get("schema") != SCHEMA:
        raise CertificateFormatError(f"certificate schema {certificate.get('schema')!r} is not {SCHEMA!r}")
    N, d = keys.shape
    if certificate.get("n_keys", N) != N or certificate.get("dim", d) != d:
        raise ShapeError(
            f"the certificate is for {certificate.get('n_keys')} keys of dimension "
            f"{certificate.get('dim')}, but the keys have shape {keys.shape}"
        )
    results = certificate.get("results")
    if not isinstance(results, list):
        raise CertificateFormatError("certificate 'results' must be a list")
    if not isinstance(samples, int) or samples < 0:
        raise CertificateFormatError(f"samples {samples!r} must be a non-negative integer")
    K = torch.as_tensor(keys, **t)
    qs = _QuerySet(certificate.get("query_set", {"kind": "free"}), d, t)
    Kp = qs.project(K)
    tol_m = tolerance("certificate.margin", dt, d)
    tol_c = tolerance("certificate.combination", dt, max(d, 2))
    gen = make_generator(seed, dev)
    messages, notes, per_key = [], [], []
    checked = {
        "witnesses": 0,
        "perturbed_witnesses": 0,
        "combinations": 0,
        "duals": 0,
        "sampled_queries": 0,
        "undecided": 0,
    }
    status_of = {}
    worst_residual, min_margin = 0.0, math.inf
    pending, problems, simplex = [], [], None
    for result in results:
        if not isinstance(result, dict) or not isinstance(result.get("index"), int) or not 0 <= result["index"] < N:
            raise CertificateFormatError(f"every result needs an integer 'index' in 0..{N - 1}; got {result!r:.80}")
        i, status = result["index"], result.get("status")
        if status not in STATUSES:
            raise CertificateFormatError(f"key {i}: status {status!r} is not one of {', '.join(STATUSES)}")
        if i in status_of:
            raise CertificateFormatError(f"key {i} appears twice in the results")
        status_of[i] = status
        entry = {"index": i, "status": status, "ok": True, "margin": None, "residual": None}
        bad = []
        if status == "undecided":
            checked["undecided"] += 1
        q = qs.witness_of(result) if status in ("selectable", "tie-only") else None
        if q is None and status == "selectable" and qs.kind in ("free", "ball") and N <= d + 1:
            if simplex is None:  # affinely independent keys (attention.simplex_vertices): the theorem's queries
                simplex = torch.linalg.pinv(torch.cat([K, torch.ones(N, 1, **t)], dim=1))[:d].T
            q = simplex[i] * (
                min(1.0, 0.5 * qs.radius / max(float(simplex[i].norm()), 1e-300)) if qs.kind == "ball" else 1.0
            )
        if q is None and status == "selectable":
            bad.append("certified selectable but carries no witness")
        elif q is None and status == "tie-only":
            notes.append(f"key {i}: tie-only without a query; only its convex combination was re-checked")
        if q is not None:
            checked["witnesses"] += 1
            member = qs.membership(q, result, tol_m)
            if member:
                bad.append(member)
            pending.append((entry, bad, i, status, q, result.get("margin")))
        combo = result.get("combination")
        if status in ("unselectable", "tie-only"):
            if not isinstance(combo, dict):
                bad.append(f"certified {status} but carries no convex combination")
            else:
                idx, weights = combo.get("indices"), combo.get("weights")
                if (
                    not isinstance(idx, list)
                    or not isinstance(weights, list)
                    or len(idx) != len(weights)
                    or not idx
                    or not all(isinstance(j, int) and 0 <= j < N for j in idx)
                ):
                    raise CertificateFormatError(
                        f"key {i}: combination needs equal-length 'indices' (0..{N - 1}) and 'weights'"
                    )
                if i in idx:
                    bad.append("its convex combination uses the key itself")
                w = torch.tensor([_weight(x, f"key {i}") for x in weights], **t)
                checked["combinations"] += 1
                if bool((w < 0).any()) or (status == "unselectable" and bool((w <= 0).any())):
                    bad.append("a convex weight is negative" + (" or zero" if status == "unselectable" else ""))
                sel = Kp[torch.tensor(idx, device=dev)]
                recon = w @ sel
                scale = float((w.abs() @ sel.abs()).max()) + float(Kp[i].abs().max())
                residual = float((recon - Kp[i]).abs().max()) / scale if scale > 0 else 0.0
                residual = max(residual, abs(float(w.sum()) - 1.0))
                entry["residual"] = residual
                worst_residual = max(worst_residual, residual)
                if residual > tol_c * max(1.0, math.sqrt(len(idx))):
                    bad.append(
                        f"convex-combination residual {residual:.3e} exceeds the tolerance "
                        f"{tol_c * max(1.0, math.sqrt(len(idx))):.3e}"
                    )
        dual = result.get("dual")
        if status == "not-realisable" and qs.kind == "layernorm" and isinstance(dual, dict):
            bound, scale = _dual_bound(qs, K, i, dual)
            checked["duals"] += 1
            entry["residual"] = bound / scale if scale > 0 else 0.0
            if bound > tol_c * scale:
                bad.append(
                    f"dual bound sqrt(n)||P(gamma * W_q^T v)|| + q0.v = {bound:.3e} is positive "
                    f"(scale {scale:.3e}): the certificate does not rule out every realisable query"
                )
        per_key.append(entry)
        problems.append((entry, bad))
    min_margin = _witnesses(K, pending, tol_m, gen, checked, notes, min_margin, rows_for=max(1, (1 << 22) // max(N, 1)))
    for entry, bad in problems:
        if bad:
            entry["ok"] = False
            messages.extend(f"key {entry['index']} ({entry['status']}): {b}" for b in bad)
    # sampled queries: a key claimed never to win must never win strictly
    losers = [i for i, s in status_of.items() if s in NEVER_WINS]
    mask = torch.zeros(N, dtype=torch.bool, device=dev)
    if losers:
        mask[torch.tensor(losers, device=dev)] = True
    centroid = K.mean(0)
    aims = K[mask] - centroid if losers else K[:0]
    wins = {}
    rows = chunk_rows or max(1, (1 << 22) // max(N, 1))
    if samples and N >= 2:
        Q = qs.sample(samples, gen, aims)
        for start_row in range(0, Q.shape[0], rows):
            Qc = Q[start_row : start_row + rows]
            S = Qc @ K.T
            top = torch.topk(S, 2, dim=-1)
            scale = (Qc.abs() @ K.abs().T).amax(-1)
            strict = (top.values[:, 0] - top.values[:, 1]) > tol_m * scale
            winners = top.indices[:, 0][strict & mask[top.indices[:, 0]]]
            for j in winners.tolist():
                wins[j] = wins.get(j, 0) + 1
            checked["sampled_queries"] += Qc.shape[0]
    for j, count in sorted(wins.items()):
        messages.append(
            f"key {j} ({status_of[j]}): certified never to win, but it strictly wins {count} sampled queries"
        )
        for entry in per_key:
            if entry["index"] == j:
                entry["ok"] = False
    return {
        "ok": not messages,
        "device": device_label(dev),
        "dtype": str(dt).replace("torch.", ""),
        "messages": messages,
        "notes": notes,
        "n_keys": N,
        "dim": d,
        "query_set": qs.kind,
        "checked": checked,
        "max_combination_residual": worst_residual,
        "min_witness_margin": None if min_margin == math.inf else min_margin,
        "tolerance": {"margin": tol_m, "combination": tol_c},
        "seconds": time.perf_counter() - start,
        "per_key": per_key,
    }
