"""The search behind :func:`lnproofs.propose.certification.certify` for free queries.

Works on distinct keys.  Stages, cheapest first:

1. cheap witness queries for all keys at once (k_i minus the centroid, k_i itself,
   random directions whose winners are hull vertices, a few projection steps), checked
   exactly in bulk by :func:`lnproofs.kernel.check_witnesses`;
2. simplex sweeps (:mod:`lnproofs.propose.sweep`): simplices of hull vertices extreme along
   rotated regular-simplex directions; every remaining key inside one gets exact weights
   from one integer solve;
3. for the keys left, small linear programs (:mod:`lnproofs.propose.lp_rounds`) against a
   growing candidate set, Clarkson style: a separating query or convex weights;
4. weights are repaired exactly (:mod:`lnproofs.propose.repair`) and checked: strictly positive
   weights over a support spanning the keys' affine hull prove ``unselectable``;
   otherwise a supporting query is computed exactly and ``tie-only`` is checked;
5. keys still open go to the exact simplex (:mod:`lnproofs.propose.fallback`).

Proposal coordinates.  The float search runs on coordinates ``X`` of the keys, by default
the keys themselves (centred and rescaled).  When the keys lie on an affine subspace up
to rounding (:func:`lnproofs.certificates.findings.rank_finding`), it runs twice: first on the
keys' coordinates in that subspace, where the keys that are vertices in the subspace get
witnesses inside it (margins of the size of the keys), then on *stretched* coordinates
(:mod:`lnproofs.propose.degenerate`), an exactly computed invertible linear image of the
keys in which the rounding directions are scaled up to the size of the others.  The hull
of an invertible linear image is the image of the hull, so every status is the same
there, and the float search is as well conditioned as on generic keys; a query q' in
those coordinates is the query A^T q' for the keys, computed exactly.  Its LPs keep the
part of q' across the subspace small, so that the part within the subspace is often a
witness by itself; otherwise a Clarkson search within the subspace comes first (always
when most open keys so far were vertices there, else only for keys the stretched search
found selectable), and the stretched witness is kept only for keys that are no vertex
within the subspace: those win through the rounding alone.

Margins.  Every selectable result carries the margin of its witness:
min_j q.(k_i - k_j) / ||q||_2 (a float; see :func:`lnproofs.propose.degenerate.witness_margins`).
Keys whose margin is below ``improve_below`` get one more Clarkson search for a query
with a larger margin (in the subspace coordinates when there are any).

Nothing is reported unless the checker accepted it; the rest is ``undecided``.
"""

from __future__ import annotations

import numpy as np

from ..kernel import ExactKeys, KeyResult, check_witnesses
from .fallback import decide_inside, exact_fallback, repair_witness
from .lp_rounds import LPRounds
from .sweep import SimplexSweep

__all__ = ["unique_results"]


def _witness_vectors(Q: np.ndarray, exponent: int, bits: int = 30) -> list[tuple]:
    """Short dyadic witnesses along the rows of Q, scaled by a power of two so scores stay near 1."""
    top = np.max(np.abs(Q), axis=1, keepdims=True)
    r = np.round(Q / np.where(top == 0, 1.0, top) * 2.0**bits)
    return [tuple(row) for row in np.ldexp(r, -bits - exponent).tolist()]


class _Engine(LPRounds):
    """Works on the distinct keys P (m x d); indices here are rows of P.

    ``coords`` (m x r floats) and ``lift`` (r x d, dyadic floats) give other proposal
    coordinates: coords_j = lift . k_j + constant (up to rounding of coords), so a query
    q' there is the query lift^T q' for the keys."""

    def __init__(
        self, P: np.ndarray, seed: int, coords=None, lift=None, ek: ExactKeys | None = None, exact_lift: bool = False
    ):
        self.P = P
        self.exact_lift = exact_lift  # witnesses are lift^T q' exactly (stretched coordinates)
        self.ek = ek if ek is not None else ExactKeys(P)
        top = float(np.max(np.abs(P))) if P.size else 0.0
        self.exponent = int(np.clip(np.frexp(top)[1] if top else 0, -990, 990))
        Ps = np.ldexp(P, -self.exponent)  # exact power-of-two rescaling: no overflow below
        self.uncentred = None
        if coords is None:
            X = Ps - Ps.mean(axis=0)
            self.uncentred = Ps if np.any(Ps.mean(axis=0) != 0) else None
        else:
            X = coords - coords.mean(axis=0)
        self.lift = None if lift is None else np.asarray(lift, dtype=np.float64)
        self.m, self.d = X.shape
        span = float(np.max(np.abs(X))) if X.size else 0.0
        self.X = X / (span or 1.0)  # float copy for proposals only
        self.candidate_directions: list = []  # (weights, offset) of extra first LP candidates
        self.box = np.ones(self.d)  # |q_l| <= box_l in the separation LPs
        self.rng = np.random.default_rng(seed)
        self.vertices: set[int] = set()
        self._spanning = None
        self._lp = None
        self._pool = None
        self._exact_span = False
        self.last_candidates: dict[int, list] | None = None  # kept (a dict) on stretched coordinates
        self.tried: set[int] = set()  # keys given a subspace search (plane engine)
        self.searched = {True: 0, False: 0}  # outcomes of those searches: vertex there or not
        self.start_first = False  # subspace search first before any outcome is known

    def record(self, vertex: bool) -> None:
        """Count the outcome of a subspace search for a key left open by the cheap witnesses."""
        self.searched[vertex] += 1

    def first(self) -> bool:
        """Search within the subspace before the stretched search?  Yes while most keys
        searched so far were vertices there: one search settles those, the others need both."""
        vertices, others = self.searched[True], self.searched[False]
        return vertices > others or (vertices == others == 0 and self.start_first)

    def float_query(self, q: np.ndarray) -> np.ndarray:
        """The query for the keys (floats, rounded) of a query in proposal coordinates."""
        return np.asarray(q, dtype=np.float64) if self.lift is None else self.lift.T @ q

    def exact_query(self, q: np.ndarray) -> tuple | None:
        """lift^T q exactly (rationals), or None without a lift."""
        if self.lift is None:
            return None
        from ..kernel import fmpq_matrix, fraction_of_fmpq
        from .repair import compact_vector

        top = float(np.max(np.abs(q))) or 1.0
        exact = fmpq_matrix(self.lift.T) * fmpq_matrix(np.asarray(q, dtype=np.float64) / top).transpose()
        return compact_vector([fraction_of_fmpq(x) for x in exact.entries()])

    # -- stage 1 ---------------------------------------------------------------------
    def _margins(self, Q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Float margins q_r.x_r - max_{j != r} q_r.x_j for the proposals Q (one per row)."""
        return self._best_rivals(Q, rows)[1]

    def _best_rivals(self, Q: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each proposal q_r: the strongest other key j and the float gap q_r.(x_r - x_j)."""
        j = np.empty(len(rows), dtype=np.int64)
        gap = np.empty(len(rows))
        step = max(1, (1 << 21) // max(self.m, 1))  # 16 MB blocks, as the kernel
        for s in range(0, len(rows), step):
            r = rows[s : s + step]
            S = Q[s : s + step] @ self.X.T
            ar = np.arange(len(r))
            own = S[ar, r].copy()
            S[ar, r] = -np.inf
            jj = S.argmax(axis=1)
            j[s : s + step], gap[s : s + step] = jj, own - S[ar, jj]
        return j, gap

    def cheap_witnesses(self, todo: np.ndarray, project: bool = True) -> dict[int, np.ndarray]:
        """Float proposals (not yet checked) for as many keys of ``todo`` as possible
        (``project``: with the projection steps of :meth:`projected` for the keys left)."""
        found: dict[int, np.ndarray] = {}
        if self.m == 1:
            return {0: np.zeros(self.d)}
        left = np.asarray(todo)
        tries = [lambda rows: self.X[rows]]
        if self.uncentred is not None:
            tries.append(lambda rows: self.uncentred[rows])
        for make in tries:
            if not left.size:
                break
            Q = make(left)
            keep = self._margins(Q, left) > 0
            for r, q in zip(left[keep], Q[keep]):
                found[int(r)] = q
            left = left[~keep]
        # random directions: the winner of each direction is a vertex
        if left.size:
            count = int(np.clip(min(3e7 / max(self.m * self.d, 1), 8 * self.m), 2 * self.d + 16, 4096))
            G = self.rng.standard_normal((count, self.d))
            S = self.X @ G.T
            cols = np.arange(len(G))
            win = S.argmax(axis=0)
            best = S[win, cols].copy()
            S[win, cols] = -np.inf
            gap = best - S.max(axis=0)
            want = set(int(r) for r in left)
            for c in np.argsort(-gap):
                w = int(win[c])
                if w in want and w not in found and gap[c] > 0:
                    found[w] = G[c]
            left = np.array([r for r in left if int(r) not in found], dtype=np.int64)
        if project and left.size:
            found.update(self.projected(left))
        return found

    def projected(self, left: np.ndarray) -> dict[int, np.ndarray]:
        """Float proposals from projection steps towards a separating query, from q = x_r: where
        a step costs less than one small linear program (about 2**20 multiply-adds), 32 of them,
        else 8 while each gains."""
        found: dict[int, np.ndarray] = {}
        if left.size:
            Q = self.X[left].copy()
            small = len(left) * self.m * self.d <= 1 << 20
            for _ in range(32 if small else 8):
                j, gap = self._best_rivals(Q, left)
                ok = gap > 0
                for r, q in zip(left[ok], Q[ok]):
                    found[int(r)] = q.copy()
                if ok.all() or (not small and ok.sum() < max(1, len(left) // 100)):
                    break
                left, Q, j, gap = left[~ok], Q[~ok], j[~ok], gap[~ok]
                diff = self.X[left] - self.X[j]
                nrm = np.einsum("ij,ij->i", diff, diff)
                nrm[nrm == 0] = 1.0
                Q = Q + diff * ((-gap + 0.05 * np.sqrt(nrm)) / nrm)[:, None]
        return found

    def verify(self, proposals: dict[int, np.ndarray]) -> tuple[dict[int, tuple], list[int]]:
        """Check proposals exactly: a short dyadic witness first, the plain float second;
        with ``exact_lift``, the exact lifted query alone (its rounding would lose the part
        of the query along the subspace, which is as small as the rounding directions)."""
        items = list(proposals.items())
        done: dict[int, tuple] = {}
        attempts = ("short", "float") if self.lift is None or not self.exact_lift else ("exact",)
        for attempt in attempts:
            if not items:
                break
            vecs = []
            if attempt == "short":
                vecs = _witness_vectors(
                    np.array([self.float_query(q) for _, q in items]).reshape(len(items), -1), self.exponent
                )
            for _, q in [] if attempt == "short" else items:
                f = self.float_query(q)
                if attempt == "float":
                    vecs.append(tuple(np.ldexp(f / (np.max(np.abs(f)) or 1.0), -self.exponent).tolist()))
                else:
                    vecs.append(self.exact_query(q))
            msgs = check_witnesses(self.ek, [(r, v) for (r, _), v in zip(items, vecs)], mode="strict")
            retry = []
            for (r, q), v, msg in zip(items, vecs, msgs):
                if msg is None:
                    done[r] = v
                else:
                    retry.append((r, q))
            items = retry
        self.vertices.update(done)
        return done, [r for r, _ in items]


def _engines(P: np.ndarray, seed: int, finding) -> tuple[_Engine, _Engine | None]:
    """(main engine, subspace engine or None) for the distinct keys P."""
    ek = ExactKeys(P)
    if not finding or finding["numerical_affine_dimension"] >= finding["exact_affine_dimension"]:
        return _Engine(P, seed, ek=ek), None
    from .degenerate import stretched_coordinates

    Y, A, r = stretched_coordinates(ek)
    plane = _Engine(P, seed, coords=Y[:, :r], lift=A[:r], ek=ek) if r > 0 else None
    main = _Engine(P, seed, coords=Y, lift=A, ek=ek, exact_lift=True)
    main.last_candidates = {}  # final LP candidates: where the subspace search starts
    main.box[r:] = 2.0**-10  # little weight across the subspace: its part of q is small
    for sign in (1.0, -1.0):  # first LP candidates also from both sides across the subspace
        offset = np.zeros(main.d)
        offset[r:] = sign
        main.candidate_directions.append((np.ones(main.d), offset))
    return main, plane


def unique_results(
    P: np.ndarray,
    todo: np.ndarray,
    *,
    seed: int,
    progress,
    stop_at_first: bool,
    emit,
    batch: int = 256,
    finding: dict | None = None,
    improve_below: float = 0.0,
    margins: bool = True,
) -> dict[int, KeyResult]:
    """Results for the distinct keys P (indices into P) listed in ``todo``.

    ``finding``: the rank finding of the keys (stretched search when the numerical affine
    dimension is below the exact one); ``improve_below``: search again for a witness with
    a larger margin for selectable keys whose witness margin is below this; ``margins``:
    state each witness's margin (informational: a caller that reads only the statuses
    skips them)."""
    from .degenerate import witness_margins

    engine, plane = _engines(P, seed, finding)
    out: dict[int, KeyResult] = {}
    if engine.m == 1:
        out[0] = KeyResult(0, "selectable", tuple(0.0 for _ in range(P.shape[1])), None, "exact", margin=None)
        emit([out[0]])
        return out

    def send(batch_results):
        sel = [r for r in batch_results if r.status == "selectable" and r.witness is not None] if margins else []
        if sel:
            got = witness_margins(engine.ek, [(r.index, r.witness) for r in sel])
            # (KeyResult itself rather than dataclasses.replace: the same fields, without its field walk)
            by = {
                r.index: KeyResult(r.index, r.status, r.witness, r.combination, r.verified, m, r.reason, r.extras)
                for r, m in zip(sel, got)
            }
            batch_results = [by.get(r.index, r) if r.status == "selectable" else r for r in batch_results]
        for r in batch_results:
            out[r.index] = r
        emit(batch_results)

    wanted = set(todo.tolist())
    first = []
    if plane is not None:  # witnesses inside the subspace first
        done, _ = plane.verify(plane.cheap_witnesses(np.arange(plane.m)))
        engine.vertices.update(done)
        first += [KeyResult(int(r), "selectable", v, None, "exact") for r, v in done.items() if r in wanted]
    rest = np.array([r for r in range(engine.m) if r not in engine.vertices], dtype=np.int64)
    sweeper = SimplexSweep(engine)
    proposals = engine.cheap_witnesses(rest, project=not stop_at_first) if rest.size else {}
    if stop_at_first:
        # one key certified not selectable ends the search: before any witness is checked,
        # simplices of the keys with a proposal (a deep key is inside one at once); the
        # projection steps only for the keys they leave open
        open_keys = [int(r) for r in todo if int(r) not in proposals and int(r) not in engine.vertices]
        count = 32 if len(open_keys) > 4 * (engine.d + 1) else 4
        swept = sweeper.first_inside(open_keys, count, pool=sorted(engine.vertices | set(proposals)))
        if swept:
            send(first + swept)
            return out
        proposals.update(engine.projected(np.array([r for r in rest if r not in proposals], dtype=np.int64)))
    done, _ = _verify_plane_first(engine, plane, proposals)
    first += [KeyResult(int(r), "selectable", v, None, "exact") for r, v in done.items() if r in wanted]
    for r in first:
        out[r.index] = r
    send(first)
    left = [int(r) for r in todo if int(r) not in out]
    if len(left) > 4 * (engine.d + 1) and not stop_at_first:  # (with stop_at_first: tried above)
        swept = []
        for support in sweeper.fat_supports(32):
            rest = [j for j in left if j not in out]
            for r in sweeper.sweep(support, rest):
                out[r.index] = r
                swept.append(r)
        send(swept)
        left = [i for i in left if i not in out]
        sweeper.misses = 0
    for s in range(0, len(left), batch):
        chunk = [i for i in left[s : s + batch] if i not in out]
        witnesses, new, in_plane = {}, [], {}
        for i in chunk:
            if i in out:  # settled meanwhile by a simplex sweep
                continue
            if plane is not None and plane.first():
                kind, *data = plane.clarkson(i)  # a vertex within the subspace: one search, done
                plane.tried.add(i)
                plane.record(kind == "witness")
                if kind == "witness":
                    in_plane[i] = data[0]
                    continue
            kind, *data = engine.clarkson(i)
            if kind == "witness":
                witnesses[i] = data[0]
                continue
            if plane is not None and i not in plane.tried:
                plane.record(False)  # inside the hull: inside it within the subspace too
            if kind == "inside":
                out[i] = decide_inside(engine, i, *data)
                if out[i].status == "unselectable" and sweeper.active and not stop_at_first:
                    rest = [j for j in left[s:] if j not in out and j != i]
                    for r in sweeper.sweep(out[i].combination.indices, rest):
                        out[r.index] = r
                        new.append(r)
            else:
                out[i] = exact_fallback(engine, i, data[0])
            new.append(out[i])
            if stop_at_first and out[i].status in ("unselectable", "tie-only"):
                break
        if in_plane:
            good, bad = plane.verify(in_plane)
            engine.vertices.update(good)
            for i, v in good.items():
                out[i] = KeyResult(i, "selectable", v, None, "exact")
                new.append(out[i])
            for i in bad:  # rare: let the stretched search propose instead
                kind, *data = engine.clarkson(i)
                if kind == "witness":
                    witnesses[i] = data[0]
                else:
                    out[i] = exact_fallback(engine, i, "the subspace witness failed the exact check")
                    new.append(out[i])
        good, bad = _verify_plane_first(engine, plane, witnesses)
        for i, v in good.items():
            out[i] = KeyResult(i, "selectable", v, None, "exact")
            new.append(out[i])
        for i in bad:
            w = repair_witness(engine, i, witnesses[i])
            out[i] = (
                KeyResult(i, "selectable", w, None, "exact")
                if w is not None
                else exact_fallback(engine, i, "the query proposed by the float solver failed the exact check")
            )
            new.append(out[i])
        send(new)
        if stop_at_first and any(r.status in ("unselectable", "tie-only") for r in new):
            break
    tried = set() if plane is None else plane.tried
    again = {
        r.index
        for r in out.values()
        if r.status == "selectable"
        and r.margin is not None
        and r.index not in tried
        and (r.margin < improve_below or (plane is not None and r.index not in plane.vertices))
    }
    send(_larger_margins(plane or engine, out, sorted(again)))
    return out


def _verify_plane_first(engine: _Engine, plane: _Engine | None, proposals: dict) -> tuple[dict, list]:
    """``engine.verify(proposals)``, except that with a subspace engine each key first gets
    a Clarkson search inside the subspace: a witness there has a margin of the size of the
    keys and is cheap to check; the stretched proposal is checked (exactly) only for the
    keys that are not vertices within the subspace."""
    if plane is None or not proposals:
        return engine.verify(proposals)
    plane.vertices.update(engine.vertices)
    good, _ = plane.verify({i: q[: plane.d] for i, q in proposals.items()})  # the part within the subspace
    inside = {}
    for i in proposals:
        if i in good or i in plane.tried:  # already searched within the subspace: not a vertex there
            continue
        plane.tried.add(i)
        kind, *data = plane.clarkson(i, engine.last_candidates.pop(i, ()))
        plane.record(kind == "witness")
        if kind == "witness":
            inside[i] = data[0]
    good.update(plane.verify(inside)[0])
    engine.vertices.update(good)
    more, bad = engine.verify({i: q for i, q in proposals.items() if i not in good})
    good.update(more)
    return good, bad


def _larger_margins(engine: _Engine, out: dict[int, KeyResult], indices: list[int]) -> list[KeyResult]:
    """Selectable results of ``indices`` with a new witness of a larger margin, where one
    Clarkson search (a max-margin LP over growing candidates) finds one that passes the checker."""
    from .degenerate import witness_margins

    good: dict = {}
    proposals = {}
    for i in indices:
        kind, *data = engine.clarkson(i)
        if kind == "witness":
            proposals[i] = data[0]
    good.update(engine.verify(proposals)[0])
    better = []
    if good:
        margins = witness_margins(engine.ek, list(good.items()))
        for (i, v), m in zip(good.items(), margins):
            if m is not None and m > out[i].margin:
                better.append(KeyResult(i, "selectable", v, None, "exact"))
    return better
