"""Numeric re-check of a vocabulary certificate (schema ``lnproofs.vocab/1``).

``recheck_vocab(keys, certificate)`` takes the certificate as lnproofs read it
(:func:`lnproofs.certificates.vocab.load_vocab`: the manifest and its ``.npy`` arrays read within
limits, each array's SHA-256 compared; torch_backend reads no certificate file itself) and
recomputes, in floating point on the chosen device, every token's claim by its evidence code:

* ``SELF`` (its own key): the witness ``q = t_i k_i`` (free and box queries; the box bound and the
  bias per key when the set has them), or under a norm set the input ``u_i = t_i J_i`` with ``J_i``
  rebuilt from its definition (:func:`torch_backend.querysets.own_directions`) and the query
  ``q = R (W_q (g * u_i + beta) + b_q)``;
* ``QUERY``: the same with the token's row of the shared array (a query, or a ``u``);
* ``RESULT``: under free queries the results go, as a ``lnproofs.selectability/1`` certificate, to
  :func:`torch_backend.certificates.recheck_certificate`; under the other sets their witnesses are
  scored like the ones above and every ``not-realisable`` dual bound is evaluated.

Every key's score at every witness is computed in blocks (a 50,000-token vocabulary against all
its keys never builds more than a few million scores at once).  A token must beat every other by
more than the rounding scale (``certificate.margin`` of :mod:`torch_backend.tolerances`); a margin
inside it is a note, a rival that beats it past it a disagreement naming both.  Tokens claimed
never to win are then tested on sampled queries of the set (random ones, and ones aimed at each
such token): none may strictly win.  It never decides a status: the exact kernel does.

Returned dict::

    {"ok", "device", "dtype", "messages", "notes", "n_keys", "dim", "query_set", "evidence",
     "checked": {"self_witnesses", "shared_witnesses", "result_witnesses", "duals",
                 "sampled_queries", "undecided", "results_rechecked"},
     "min_witness_margin", "tolerance": {"margin"}, "seconds", "disagreeing": [token indices]}
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path

import numpy as np
import torch

from lnproofs.kernel import CertificateFormatError, FreeQueries, ShapeError, query_set_from_json

from .certificates import NEVER_WINS, STATUSES, recheck_certificate
from .device import device_label, resolve_device, resolve_dtype
from .querysets import numeric_set, own_directions
from .sampling import make_generator
from .tolerances import tolerance

__all__ = ["recheck_vocab", "SCHEMA"]

SCHEMA = "lnproofs.vocab/1"
NONE, SELF, QUERY, RESULT = 0, 1, 2, 3
_DTYPES = {"evidence": np.int8, "scale": np.float64, "queries": np.float64, "rows": np.int32, "bias": np.float64}


def _plain(value):
    """A frozen value (read-only mappings, tuples) as the JSON it was read from: dicts and lists."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def _from_object(cert) -> dict:
    """The fields of a loaded certificate object (``lnproofs.certificates.vocab.VocabCertificate``)."""

    def result(r):
        combo = r.combination
        return {
            **_plain(r.extras),
            "index": int(r.index),
            "status": r.status,
            "witness": None if r.witness is None else [str(Fraction(w)) for w in r.witness],
            "combination": None
            if combo is None
            else {"indices": list(combo.indices), "weights": [str(w) for w in combo.weights]},
        }

    return {
        "schema": SCHEMA,
        "n_keys": cert.n_keys,
        "dim": cert.dim,
        "query_set": dict(cert.query_set),
        "coverage": cert.coverage,
        "results": [result(r) for r in cert.results],
        **{name: getattr(cert, name) for name in _DTYPES},
    }


def _result_witness(vs, r: dict, d: int):
    """A selectable result's witness in the set's space (a query, or a norm input ``u``), or None."""
    w = vs.witness(r)
    return None if w is None else w.cpu().numpy()


def _score(vs, K, Knorm, W, idx, tol, rows_for):
    """``(margin, scale, rival)`` for witness rows ``W`` of tokens ``idx``: own score minus the best other."""
    margins, scales, rivals = [], [], []
    c = vs.offsets
    ctop = 0.0 if c is None else float(c.abs().max())
    for lo in range(0, W.shape[0], rows_for):
        Q, A = vs.queries(W[lo : lo + rows_for])
        ic = idx[lo : lo + rows_for]
        rc = torch.arange(Q.shape[0], device=Q.device)
        S = Q @ K.T if c is None else Q @ K.T + c
        own = S[rc, ic].clone()
        S[rc, ic] = -math.inf
        best = S.max(-1) if S.shape[1] > 1 else None
        margins.append(own - best.values if best is not None else torch.full_like(own, math.inf))
        rivals.append(best.indices if best is not None else ic)
        scale = torch.linalg.vector_norm(A, dim=-1) * (Knorm[ic] + Knorm.max())
        scales.append(scale if c is None else scale + c[ic].abs() + ctop)
    if not margins:
        return torch.zeros(0), torch.zeros(0), torch.zeros(0, dtype=torch.long)
    return torch.cat(margins), torch.cat(scales), torch.cat(rivals)


def _witness_rows(data, vs, keys, evidence, t):
    """Yield ``(label, tokens, W)`` blocks of the SELF and QUERY witnesses, in the set's space."""
    N = len(evidence)
    scale = np.ones(N) if data.get("scale") is None else np.asarray(data["scale"], dtype=np.float64)
    if scale.shape != (N,):
        raise CertificateFormatError(f"the scale array must hold one t_i per key ({N})")
    selves = np.flatnonzero(evidence == SELF)
    cols = vs.selection() if vs.norm else None
    for a in range(0, len(selves), 4096):
        part = selves[a : a + 4096]
        if vs.norm:
            W = own_directions(keys, cols, vs.g_np, part, vs.centred) * scale[part, None]
        else:
            W = keys[part] * scale[part, None]
        yield "own key", part, torch.as_tensor(W, **t)
    shared = np.flatnonzero(evidence == QUERY)
    if len(shared):
        Q, rows = data.get("queries"), data.get("rows")
        if (
            Q is None
            or rows is None
            or Q.ndim != 2
            or Q.shape[1] != vs.width
            or np.shape(rows) != (N,)
            or not np.all((rows[shared] >= 0) & (rows[shared] < len(Q)))
        ):
            raise CertificateFormatError(
                f"evidence 2 (a shared query) needs a queries array of rows of {vs.width} numbers and rows indexing it"
            )
        for a in range(0, len(shared), 4096):
            part = shared[a : a + 4096]
            yield "shared query", part, torch.as_tensor(Q[rows[part]], **t)


def recheck_vocab(keys, certificate, *, device="auto", dtype="float64", samples: int = 2048, seed: int = 0) -> dict:
    """Re-check the vocabulary certificate ``certificate`` (the object
    :func:`lnproofs.certificates.vocab.load_vocab` returns) against ``keys`` (N x d) in floating
    point; see the module docstring."""
    from lnproofs.kernel import as_real_array

    start = time.perf_counter()
    dev, dt = resolve_device(device), resolve_dtype(dtype)
    t = {"dtype": dt, "device": dev}
    if isinstance(certificate, (str, Path)):
        raise CertificateFormatError(
            f"recheck_vocab takes a loaded certificate, not the path {str(certificate)[:80]}: read it with "
            "lnproofs.certificates.vocab.load_vocab (its arrays are read within limits there)"
        )
    data = _from_object(certificate)
    keys = as_real_array(keys, name="keys", ndim=2)
    N, d = keys.shape
    if (data.get("n_keys"), data.get("dim")) != (N, d):
        raise ShapeError(
            f"the certificate is for {data.get('n_keys')} keys of dimension {data.get('dim')}, "
            f"but the keys have shape {keys.shape}"
        )
    if not isinstance(samples, int) or samples < 0:
        raise CertificateFormatError(f"samples {samples!r} must be a non-negative integer")
    evidence = np.asarray(data["evidence"])
    if evidence.shape != (N,) or not np.isin(evidence, (NONE, SELF, QUERY, RESULT)).all():
        raise CertificateFormatError(f"the evidence array must give one code 0..3 per key ({N} keys)")
    results = data.get("results")
    if not isinstance(results, list) or not all(isinstance(r, dict) and type(r.get("index")) is int for r in results):
        raise CertificateFormatError("certificate 'results' must be a list of objects with an integer 'index'")
    if sorted(r["index"] for r in results) != np.flatnonzero(evidence == RESULT).tolist():
        raise CertificateFormatError("the results must be exactly the tokens whose evidence is 3, each once")
    for r in results:
        if r.get("status") not in STATUSES:
            raise CertificateFormatError(
                f"token {r['index']}: status {r.get('status')!r} is not one of {', '.join(STATUSES)}"
            )
    messages, notes, bad = [], [], set()
    spec = dict(data.get("query_set") or {})
    if data.get("coverage") is not None:  # the kernel reads the evidence under free queries
        notes.append(
            "the coverage claim is not re-checked numerically; the evidence is re-checked under free "
            "queries, as the kernel reads it once the claim holds"
        )
        spec = {"kind": "free"}
    bias = {} if data.get("bias") is None else {"bias": np.asarray(data["bias"], dtype=np.float64).tolist()}
    vs = numeric_set(query_set_from_json(dict(spec, **bias)), keys, t)  # the kernel's reading of the set
    if vs.norm and np.any(evidence == SELF) and vs.selection() is None:
        raise CertificateFormatError("own-key witnesses under a norm set need W_q a 0/1 selection and no rotation")
    K = torch.as_tensor(keys, **t)
    Knorm = torch.linalg.vector_norm(K, dim=-1)
    tol = tolerance("certificate.margin", dt, max(d, vs.width))
    rows_for = max(1, (1 << 22) // max(N, 1))
    checked = {
        "self_witnesses": 0,
        "shared_witnesses": 0,
        "result_witnesses": 0,
        "duals": 0,
        "sampled_queries": 0,
        "undecided": int(np.sum(evidence == NONE)),
        "results_rechecked": 0,
    }
    min_margin = math.inf

    def witnesses(label, tokens, W):
        nonlocal min_margin
        idx = torch.as_tensor(np.asarray(tokens, dtype=np.int64), device=dev)
        for r, why in enumerate(vs.membership(W, tol)):
            if why:
                messages.append(f"token {int(tokens[r])} ({label}): {why}")
                bad.add(int(tokens[r]))
        margin, scale, rival = _score(vs, K, Knorm, W, idx, tol, rows_for)
        rel = torch.where(scale > 0, margin / scale, torch.zeros_like(margin))
        if rel.numel():
            min_margin = min(min_margin, float(rel.min()))
        for r in torch.nonzero(margin < -tol * scale).flatten().tolist():
            i, j = int(tokens[r]), int(rival[r])
            messages.append(
                f"token {i} ({label}): token {j} beats it at its witness by {-float(margin[r]):.3e} "
                f"(rounding scale {tol * float(scale[r]):.3e})"
            )
            bad.add(i)
        for r in torch.nonzero((margin >= -tol * scale) & (margin <= tol * scale)).flatten().tolist():
            notes.append(
                f"token {int(tokens[r])} ({label}): witness margin {float(margin[r]):.3e} is below the "
                f"rounding scale {tol * float(scale[r]):.3e}; floating point cannot confirm the strict win"
            )

    for label, tokens, W in _witness_rows(data, vs, keys, evidence, t):
        checked["self_witnesses" if label == "own key" else "shared_witnesses"] += len(tokens)
        witnesses(label, tokens, W)
    never = {r["index"]: r.get("status") for r in results if r.get("status") in NEVER_WINS}
    checked["undecided"] += sum(r.get("status") == "undecided" for r in results)
    if type(vs.qs) is FreeQueries and results:  # the selectability re-check reads these as they are
        sub = recheck_certificate(
            keys,
            {
                "schema": "lnproofs.selectability/1",
                "n_keys": N,
                "dim": d,
                "query_set": {"kind": "free"},
                "results": results,
            },
            device=dev,
            dtype=dt,
            samples=samples,
            seed=seed,
        )
        checked["results_rechecked"] = len(results)
        checked["sampled_queries"] += sub["checked"]["sampled_queries"]
        messages.extend("token " + m[4:] if m.startswith("key ") else m for m in sub["messages"])
        notes.extend("token " + m[4:] if m.startswith("key ") else m for m in sub["notes"])
        bad.update(e["index"] for e in sub["per_key"] if not e["ok"])
        if sub["min_witness_margin"] is not None:
            min_margin = min(min_margin, sub["min_witness_margin"])
    elif results:
        _results(vs, K, results, tol, messages, bad, checked, witnesses)
        _sampled(vs, K, Knorm, never, samples, make_generator(seed, dev), tol, rows_for, messages, bad, checked)
    counts = {
        name: int(np.sum(evidence == code))
        for name, code in (("none", NONE), ("own key", SELF), ("shared query", QUERY), ("full result", RESULT))
    }
    return {
        "ok": not messages,
        "device": device_label(dev),
        "dtype": str(dt).replace("torch.", ""),
        "messages": messages,
        "notes": notes,
        "n_keys": N,
        "dim": d,
        "query_set": vs.qs.kind,
        "evidence": counts,
        "checked": checked,
        "min_witness_margin": None if min_margin == math.inf else min_margin,
        "tolerance": {"margin": tol},
        "seconds": time.perf_counter() - start,
        "disagreeing": sorted(bad),
    }


def _results(vs, K, results, tol, messages, bad, checked, witnesses):
    """Full results under a box or a norm set: witnesses scored, dual bounds evaluated."""
    N, d = K.shape
    chosen = []
    for r in results:
        i, status = r["index"], r.get("status")
        if status == "selectable":
            w = _result_witness(vs, r, d)
            if w is None:
                messages.append(f"token {i} (selectable): its result carries no witness this re-check reads")
                bad.add(i)
            else:
                chosen.append((i, w))
        elif status in NEVER_WINS:
            dual = r.get("dual") if vs.norm else r.get("combination")
            if status != "not-realisable" or not isinstance(dual, dict):
                messages.append(
                    f"token {i} ({status}): under {vs.qs.kind} queries a token that never wins needs a "
                    f"not-realisable claim with its {'dual' if vs.norm else 'combination'}"
                )
                bad.add(i)
                continue
            why = vs.dual(K, i, dual, tol)
            checked["duals"] += 1
            if why:
                messages.append(f"token {i} (not-realisable): {why}")
                bad.add(i)
    if chosen:
        checked["result_witnesses"] += len(chosen)
        witnesses("full result", [i for i, _ in chosen], torch.as_tensor(np.array([w for _, w in chosen]), **vs.t))


def _sampled(vs, K, Knorm, never, samples, gen, tol, rows_for, messages, bad, checked):
    """Sampled queries of the set (random, and aimed at each token claimed never to win): none of
    those tokens may win by more than the rounding scale."""
    N = K.shape[0]
    if not samples or N < 2 or not never:  # nothing is claimed never to win
        return
    mask = torch.zeros(N, dtype=torch.bool, device=K.device)
    if never:
        mask[torch.as_tensor(list(never), device=K.device)] = True
    aims = torch.cat([K[mask], K[mask] - K.mean(0)]) if never else K[:0]
    c = vs.offsets
    spread = 1.0 if c is None else max(float(c.abs().max()), 1e-300) / max(float(Knorm.mean()), 1e-300)
    W = vs.sample(samples, gen, aims, spread)
    ctop = 0.0 if c is None else float(c.abs().max())
    wins = {}
    for lo in range(0, W.shape[0], rows_for):
        Q, A = vs.queries(W[lo : lo + rows_for])
        inside = vs.in_radius(Q)
        Q, A = Q[inside], A[inside]
        S = Q @ K.T if c is None else Q @ K.T + c
        top = torch.topk(S, 2, dim=-1)
        scale = torch.linalg.vector_norm(A, dim=-1) * 2 * Knorm.max() + 2 * ctop
        strict = (top.values[:, 0] - top.values[:, 1]) > tol * scale
        for j in top.indices[:, 0][strict & mask[top.indices[:, 0]]].tolist():
            wins[j] = wins.get(j, 0) + 1
        checked["sampled_queries"] += Q.shape[0]
    for j, count in sorted(wins.items()):
        messages.append(f"token {j} ({never[j]}): certified never to win, but it strictly wins {count} sampled queries")
        bad.add(j)
