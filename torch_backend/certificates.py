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

import torch

from lnproofs.kernel import CertificateFormatError, ShapeError, query_set_from_json

from .device import device_label, resolve_device, resolve_dtype
from .querysets import numeric_set
from .querysets.base import weights_of
from .sampling import make_generator, unit_vectors
from .tolerances import tolerance

__all__ = ["recheck_certificate", "SCHEMA", "STATUSES"]

SCHEMA = "lnproofs.selectability/1"
STATUSES = ("selectable", "tie-only", "unselectable", "undecided", "not-realisable")
NEVER_WINS = ("tie-only", "unselectable", "not-realisable")


def _witnesses(qs, K, pending, tol, gen, checked, notes, min_margin, rows_for):
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
        S, A = qs.scores(Qc, K), Qc.abs() @ K.abs().T + (0.0 if qs.offsets is None else qs.offsets.abs())
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
            S = qs.scores(Pc, K)
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
    from lnproofs.kernel import as_real_array

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
    # the set as the kernel's schema reads it, seen through its kind's numeric class
    qs = numeric_set(query_set_from_json(certificate.get("query_set", {"kind": "free"})), keys, t)
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
        w = qs.witness(result) if status in ("selectable", "tie-only") else None
        q, member = None, []
        if w is not None:  # in the set as far as floats tell, and the query its own evidence makes
            Q, A = qs.queries(w[None])
            q, member = Q[0], [qs.membership(w[None], tol_m)[0], qs.stated(result, Q[0], float(A.max()), tol_m)]
        elif status == "selectable" and qs.every_direction and N <= d + 1:
            if simplex is None:  # affinely independent keys (attention.simplex_vertices): the theorem's queries
                simplex = torch.linalg.pinv(torch.cat([K, torch.ones(N, 1, **t)], dim=1))[:d].T
            radius = qs.radius
            q = simplex[i] * (1.0 if radius is None else min(1.0, 0.5 * radius / max(float(simplex[i].norm()), 1e-300)))
        if q is None and status == "selectable":
            bad.append("certified selectable but carries no witness")
        elif q is None and status == "tie-only":
            notes.append(f"key {i}: tie-only without a query; only its convex combination was re-checked")
        if q is not None:
            checked["witnesses"] += 1
            bad.extend(m for m in member if m)
            pending.append((entry, bad, i, status, q, result.get("margin")))
        combo = result.get("combination")
        if status in ("unselectable", "tie-only"):
            if not isinstance(combo, dict):
                bad.append(f"certified {status} but carries no convex combination")
            else:
                idx, w = weights_of(combo, i, N, t)
                if i in idx:
                    bad.append("its convex combination uses the key itself")
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
        dual = result.get("dual") if qs.norm else result.get("combination")
        if status == "not-realisable" and isinstance(dual, dict):  # the largest score gap over the set
            checked["duals"] += 1
            why = qs.dual(K, i, dual, tol_c)
            if why:
                bad.append(why)
        per_key.append(entry)
        problems.append((entry, bad))
    min_margin = _witnesses(qs, K, pending, tol_m, gen, checked, notes, min_margin, max(1, (1 << 22) // max(N, 1)))
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
        c = qs.offsets  # against a bias, free queries are sampled at every scale from spread / 1000 up
        spread = 1.0 if c is None else max(float(c.abs().max()), 1e-300) / max(float(K.norm(dim=-1).mean()), 1e-300)
        Q = qs.queries(qs.sample(samples, gen, aims, spread))[0]
        Q = Q[qs.in_radius(Q)]
        ctop = 0.0 if c is None else 2 * float(c.abs().max())
        for start_row in range(0, Q.shape[0], rows):
            Qc = Q[start_row : start_row + rows]
            S = qs.scores(Qc, K)
            top = torch.topk(S, 2, dim=-1)
            scale = (Qc.abs() @ K.abs().T).amax(-1) + ctop
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
        "query_set": qs.qs.kind,
        "checked": checked,
        "max_combination_residual": worst_residual,
        "min_witness_margin": None if min_margin == math.inf else min_margin,
        "tolerance": {"margin": tol_m, "combination": tol_c},
        "seconds": time.perf_counter() - start,
        "per_key": per_key,
    }
