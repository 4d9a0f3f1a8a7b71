"""The queries one head can produce, for every family: built from a capture (while a run
certifies) or from a run's ``params.npz`` (while ``lnproofs check`` re-verifies).

Three kinds (see :mod:`lnproofs.kernel.querysets.norm`):

- ``layernorm``: a LayerNorm layer without rotary positions (BERT, GPT-2, OPT);
- ``rmsnorm``: an RMSNorm layer (Llama, Mistral, Qwen2, Gemma), rotated by ``R_t`` at the
  query position ``t`` when the model uses rotary positions;
- ``layernorm_rotary``: a LayerNorm layer with rotary positions (GPT-NeoX, Pythia).

A rotary set depends on the query position only through ``R_t``, whose entries are the
floats of the model's own cos/sin table at ``t``; a run keeps that table per text
(``rotary_cos``/``rotary_sin`` in the text's arrays) so the set of any position can be
rebuilt exactly.  :class:`HeadSets` builds the position-free parts of every head once
per run (exact query maps, the float basis of the LayerNorm fast search) and shares them
between texts; a rotary set's exact map at one position (:func:`positioned_map`) reuses the
head's position-free exact forms and adds only the rotation of that position.
"""

from __future__ import annotations

import numpy as np

from .corpus_heads import TravellingCache

__all__ = [
    "head_kind",
    "query_set",
    "capture_query_set",
    "params_arrays",
    "narrow_exactly",
    "params_query_set",
    "coverage_of",
    "realisable_results",
    "positioned_map",
    "HEAD_SETS_BYTES",
    "HeadSets",
]


def head_kind(capture) -> type:
    """The query-set kind (the kernel's class) of a capture's heads (see the module docstring)."""
    from ..kernel import LayerNormQuerySet, RMSNormQuerySet, RotaryLayerNormQuerySet
    from .extract import RMSNormParams

    if isinstance(capture.layernorm, RMSNormParams):
        return RMSNormQuerySet
    return RotaryLayerNormQuerySet if capture.rotary else LayerNormQuerySet


def _rotary(kind) -> bool:
    """Whether sets of ``kind`` (a class) carry a rotation: they change with the query position."""
    return "rotation" in kind.FIELDS


def _rotation(cos, sin, style, position):
    from ..kernel import Rotation

    return Rotation(np.asarray(cos, dtype=np.float64), np.asarray(sin, dtype=np.float64), style, int(position))


def query_set(kind, gain, bias, eps, W_q, b_q, rotation=None):
    """The query set of ``kind`` (a norm kind's class) from a head's arrays (``rotation`` for the
    rotary kinds; an RMSNorm's bias, zeros, is left out)."""
    from ..kernel import LayerNormQuerySet, RMSNormQuerySet

    if kind is LayerNormQuerySet:
        return kind(gain, bias, W_q, b_q, float(eps))
    return kind(gain, W_q, b_q, float(eps), rotation, None if kind is RMSNormQuerySet else bias)


def capture_query_set(capture, head: int, row: int | None = None):
    """Head ``head``'s query set; with rotary positions, at the position of ``row``."""
    W_q, b_q, _, _ = capture.head_weights(head)
    norm, kind = capture.layernorm, head_kind(capture)
    rotation = None
    if _rotary(kind) and capture.rotary and row is not None:
        rotation = _rotation(
            capture.rotary_cos[row], capture.rotary_sin[row], capture.rotary_style, capture.sources[row, 1]
        )
    return query_set(kind, norm.gain, norm.bias, norm.eps, W_q, b_q, rotation)


def narrow_exactly(array):
    """``array`` in float32 when that holds it exactly (the weights of a float32 or float16
    model, widened to float64 by the capture): half the bytes; else ``array`` itself."""
    array = np.asarray(array)
    small = array.astype(np.float32)
    return small if array.dtype == np.float64 and np.array_equal(small, array) else array


def params_arrays(captures) -> dict:
    """The arrays of ``params.npz``: per layer the norm, ``W_q`` (float32 where exact), ``b_q`` and
    the head layout."""
    arrays = {}
    for layer, cap in captures.items():
        ln = cap.layernorm
        arrays.update(
            {
                f"l{layer}_gamma": ln.gain,
                f"l{layer}_beta": ln.bias,
                f"l{layer}_eps": np.array(ln.eps),
                f"l{layer}_W_q": narrow_exactly(cap.W_q),
                f"l{layer}_b_q": cap.b_q,
                f"l{layer}_heads": np.array(cap.n_heads),
                f"l{layer}_kind": np.array(head_kind(cap).kind),
                f"l{layer}_style": np.array(cap.rotary_style),
            }
        )
    return arrays


def params_query_set(params, layer: int, head: int, d: int, rotary=None, position: int | None = None):
    """Head ``head``'s query set (``d`` rows) from a run's ``params.npz``; ``rotary``
    ``(cos, sin)`` (rows per position) of the text, for rotary kinds at ``position``."""
    from ..kernel import kind_of

    kind = kind_of(str(params[f"l{layer}_kind"]) if f"l{layer}_kind" in params else "layernorm")
    rows = slice(head * d, (head + 1) * d)
    rotation = None
    if _rotary(kind) and rotary is not None and position is not None:
        style = str(params[f"l{layer}_style"]) if f"l{layer}_style" in params else "half"
        rotation = _rotation(rotary[0][position], rotary[1][position], style, position)
    return query_set(
        kind,
        params[f"l{layer}_gamma"],
        params[f"l{layer}_beta"],
        float(params[f"l{layer}_eps"]),
        params[f"l{layer}_W_q"][rows],
        params[f"l{layer}_b_q"][rows],
        rotation,
    )


def coverage_of(query_set, query_map=None):
    """The coverage evidence of ``query_set`` (every direction realisable) as JSON, or None
    when none is proposed or the kernel does not confirm it (``query_map``: the set's exact
    forms, when built already)."""
    from ..kernel import ExactQueryMap, check_coverage
    from ..propose.querysets.coverage import propose_coverage

    query_map = ExactQueryMap(query_set) if query_map is None else query_map
    found = propose_coverage(query_set, query_map, tested=False)  # the kernel tests its minor below
    if found is not None and not check_coverage(query_set, found.to_json(), query_set.dim, query_map)[0]:
        found = propose_coverage(query_set, query_map)  # the proposer's own search, once
        found = (
            found
            if found is not None and check_coverage(query_set, found.to_json(), query_set.dim, query_map)[0]
            else None
        )
    return None if found is None else found.to_json()


def realisable_results(keys, query_set, indices=None, query_map=None) -> list[dict]:
    """Result dictionaries of ``keys`` (the ``indices``, default all) under a rotary or RMSNorm
    query set, from its proposer (each checked exactly there); ``query_map``: the set's exact
    forms, when built already (:func:`positioned_map`)."""
    from ..propose.querysets import proposer_for

    shared = {} if query_map is None else {"query_map": query_map}
    return proposer_for(query_set).certify_results(keys, query_set, indices=indices, **shared)


#: what an exact query map holds that does not depend on the rotation (ExactQueryMap's
#: attributes, the integer W_q and the factored Gram matrix included); R and every cache
#: computed from them are the position's own
_POSITION_FREE = (
    "n",
    "d",
    "W_float",
    "ew",
    "G",
    "eg",
    "q0",
    "radius",
    "centred",
    "Wq",
    "WqT",
    "WG",
    "WGT",
    "scale",
    "_hn",
)


def positioned_map(base, query_set):
    """The exact map of ``query_set``, a rotary set at one position, from ``base``, the exact map
    of the same head's position-free set: ``W_q``, the gains, ``q0 = W_q beta + b_q`` and the
    factored ``A P A^T`` do not depend on the position and are shared (built once per head);
    only ``R`` is the position's.  Equal to ``ExactQueryMap(query_set)``, which costs a d x n
    integer product per call (tests/test_positioned_map.py compares the two)."""
    from ..kernel import ExactQueryMap

    if base is None or query_set.rotation is None:
        return base
    base.gram()  # the shared exact forms, once per head
    qmap = ExactQueryMap.__new__(ExactQueryMap)
    vars(qmap).update({name: vars(base)[name] for name in _POSITION_FREE})
    qmap.R = query_set.rotation.matrix(qmap.d)
    qmap.position_free = base  # what searches keep per head (float forms)
    return qmap


#: bytes (estimated) of query sets a :class:`HeadSets` keeps before it drops those of the
#: layer used least recently (a TinyLlama layer's 32 RMSNorm sets take about 64 MB)
HEAD_SETS_BYTES = 256 * 2**20


def _set_bytes(capture) -> int:
    """About what one head's query set of ``capture`` takes (its ``W_q`` rows as one float64
    array, and the float64 copy of its exact map): 16 bytes per entry."""
    return 16 * capture.head_dim * capture.W_q.shape[1]


class HeadSets(TravellingCache):
    """Per (layer, head), built once per run and shared by every text: ``kind``, the
    position-free query set, its exact map, and for ``layernorm`` heads the float basis and
    ``H`` (the fast search's pieces), else None.  A cache travels empty between processes
    (exact matrices do not pickle); a worker rebuilds the heads it needs.

    The query sets of wide layers are large, so the cache keeps about ``limit`` bytes of
    them (:data:`HEAD_SETS_BYTES`) and drops those of the layer used least recently first
    (rebuilt when needed again: the same sets, so the same outputs); coverage evidence,
    small, is kept for the whole run."""

    def __init__(self, limit: int = HEAD_SETS_BYTES):
        super().__init__()
        self.limit = limit

    def __setstate__(self, state):
        super().__setstate__(state)
        self.limit = HEAD_SETS_BYTES

    def _use(self, capture, added: int) -> None:
        """Mark ``capture``'s layer used (``added`` bytes more of it); drop older layers' sets
        while over the limit."""
        sizes = self.items.setdefault(("bytes",), {})  # layer -> bytes, least recent first
        layer = capture.layer
        sizes[layer] = sizes.pop(layer, 0) + added
        while sum(sizes.values()) > getattr(self, "limit", HEAD_SETS_BYTES) and len(sizes) > 1:
            old = next(iter(sizes))
            del sizes[old]
            for key in [k for k in self.items if len(k) == 2 and k[0] == old]:
                del self.items[key]

    def get(self, capture, head):
        key = (capture.layer, head)
        self._use(capture, 0 if key in self.items else _set_bytes(capture))
        if key not in self.items:
            kind = head_kind(capture)
            from ..kernel import ExactQueryMap, LayerNormQuerySet

            qs = capture_query_set(capture, head)
            extra = (ExactQueryMap(qs), None, None)
            if kind is LayerNormQuerySet:  # the fast search's float basis and H
                from ..propose.querysets.layernorm_fast import factored_basis

                basis = factored_basis(qs)
                V, root, _ = basis
                extra = (extra[0], basis, (V * root * root) @ V.T)
            self.items[key] = (kind, qs) + extra
        return self.items[key]

    def layer_item(self, capture, name: str, make):
        """``make()`` for ``capture``'s layer, kept as long as the layer's query sets (dropped with
        them; counted as :func:`_set_bytes` of the layer)."""
        key = (capture.layer, name)
        self._use(capture, 0 if key in self.items else _set_bytes(capture))
        if key not in self.items:
            self.items[key] = make()
        return self.items[key]

    def one_blas_thread(self):
        """A context that holds BLAS to one thread (threadpoolctl), from a controller kept by this
        cache: finding the loaded libraries takes about 3 ms, which every text x layer paid before.
        The controller is made again whenever a module was imported since (a BLAS library comes
        with the import of the module that uses it), so no library loaded later escapes the limit."""
        import sys

        from threadpoolctl import ThreadpoolController

        known = self.items.get(("blas",))
        if known is None or known[0] != len(sys.modules):
            known = self.items[("blas",)] = (len(sys.modules), ThreadpoolController())
        return known[1].limit(limits=1, user_api="blas")

    def coverage(self, capture, head: int):
        """The JSON coverage evidence of head ``head``'s realisable set (every direction is
        realisable, at every position), or None; proposed once per run."""
        key = ("coverage", capture.layer, head)
        if key not in self.items:
            kind, qs, qmap = self.get(capture, head)[:3]
            self.items[key] = coverage_of(qs, qmap)
        return self.items[key]

    def prepare(self, captures, heads, elsewhere=None) -> None:
        """Every head's query set, exact map and coverage evidence, made now for ``captures``
        (one per layer, in order) as far as the byte limit keeps them; for the layers of
        ``elsewhere`` (``{layer: heads}``) the sets only: their coverage is made elsewhere
        (:meth:`given_coverage`).  The first text's certification makes them otherwise."""
        room = getattr(self, "limit", HEAD_SETS_BYTES)
        for capture in captures:
            room -= _set_bytes(capture) * len(heads)
            if room < 0:
                break
            for head in heads:
                if capture.layer in (elsewhere or {}):
                    self.get(capture, head)  # the sets only: the coverage comes from elsewhere
                else:
                    self.coverage(capture, head)  # (which makes the sets first)

    def has_coverage(self, layer: int, head: int) -> bool:
        """Whether :meth:`coverage` of ``layer``'s head ``head`` is held already (a cache kept
        from an earlier run)."""
        return ("coverage", layer, int(head)) in self.items

    def given_coverage(self, layer: int, found: dict) -> None:
        """Keep ``found`` (head -> the coverage evidence :meth:`coverage` gives, made elsewhere
        by the same function from the same weights) for ``layer``'s heads, for the run."""
        for head, evidence in found.items():
            self.items[("coverage", layer, int(head))] = evidence

    def at(self, capture, head: int, row: int):
        """Head ``head``'s query set at the query position of ``row`` (rotary kinds)."""
        return capture_query_set(capture, head, row)

    def at_map(self, capture, head: int, row: int):
        """``(query_set, query_map)``: head ``head``'s query set at the query position of ``row``
        (:meth:`at`; the position-free set without rotary positions) and its exact map, which
        shares the head's position-free exact forms (:func:`positioned_map`)."""
        qs, qmap = self.get(capture, head)[1:3]
        if not capture.rotary:
            return qs, qmap
        at = self.at(capture, head, row)
        return at, positioned_map(qmap, at)
