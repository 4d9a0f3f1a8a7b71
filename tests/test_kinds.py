"""Query-set kinds as objects, registered once: the kernel's class of each kind carries its JSON
form, its dimension check and its exact checks; every other layer registers its own piece under
that class (the proposer, the numeric re-check, the command-line option), and nothing compares kind
strings outside the kernel's registry.  A registry that misses a kind, or a planted comparison of a
kind string, is caught."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

import lnproofs.kernel as kernel
from lnproofs.certificates.writers import query_set_to_json
from lnproofs.commands.query_options import OPTIONS, describe_query_set
from lnproofs.kernel import (
    BallQuerySet,
    BoxQuerySet,
    FreeQueries,
    LayerNormQuerySet,
    RMSNormQuerySet,
    RotaryLayerNormQuerySet,
    Rotation,
    SubspaceQuerySet,
    kind_of,
)
from lnproofs.propose.querysets import PROPOSERS, proposer_for

EVERY = [kind_of(name) for name in kernel.KINDS]  # each kind's class
PROJECT = Path(kernel.__file__).resolve().parents[2]
#: the one module where a kind's name meets its class
REGISTRY = "lnproofs/kernel/querysets/__init__.py"


def _registries() -> dict:
    out = {"propose": PROPOSERS, "commands": OPTIONS}
    try:
        from torch_backend.querysets import NUMERIC
    except ImportError:  # torch is an optional dependency
        return out
    return {**out, "torch_backend": NUMERIC}


def missing_pieces(registries: dict) -> list[str]:
    """``layer: kind`` for every kernel kind a layer's registry misses (or holds beyond the kernel's)."""
    every = set(EVERY)
    return sorted(
        f"{layer}: {getattr(kind, 'kind', kind)}" for layer, table in registries.items() for kind in every ^ set(table)
    )


def test_every_layer_registers_every_kind():
    assert len(set(EVERY)) == len(kernel.KINDS)
    assert missing_pieces(_registries()) == []


def test_a_layer_that_forgets_a_kind_is_caught():
    forgot = {k: v for k, v in PROPOSERS.items() if k is not BoxQuerySet}
    assert missing_pieces({"propose": forgot, "commands": OPTIONS}) == ["propose: box"]


@pytest.mark.parametrize("name", sorted(kernel.KINDS))
def test_each_kind_class_carries_its_kernel_pieces(name):
    kind = kind_of(name)
    assert kind.kind == name and callable(kind.from_json) and callable(kind.validate) and callable(kind.check)


def _kind_reads(node) -> bool:
    return any(
        (isinstance(x, ast.Attribute) and x.attr.endswith("kind"))
        or (isinstance(x, ast.Name) and "kind" in x.id.lower())
        or (isinstance(x, ast.Constant) and x.value == "kind")
        for x in ast.walk(node)
    )


def _strings(node) -> set:
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return {x.value for x in items if isinstance(x, ast.Constant) and isinstance(x.value, str)}


def kind_comparisons(root: Path, folders=("lnproofs", "torch_backend")) -> list[str]:
    """``path:line: expression`` for every comparison of a kind's name with something that reads a
    kind (``qs.kind == "layernorm"``, ``data["kind"] in ("free", "ball")``, ``kind != "subspace"``)
    outside the kernel's registry."""
    names, found = set(kernel.KINDS), []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == REGISTRY:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left, *node.comparators]
                if any(_strings(s) & names for s in sides) and any(_kind_reads(s) for s in sides if not _strings(s)):
                    found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_compares_kind_strings_outside_the_registry():
    assert kind_comparisons(PROJECT) == []


def test_a_planted_kind_string_comparison_is_caught(tmp_path):
    planted = {
        "lnproofs/propose/planted.py": 'def f(qs):\n    return qs.kind == "layernorm"\n',
        "lnproofs/models/planted.py": 'def f(data):\n    return data["kind"] in ("free", "ball")\n',
        "torch_backend/planted.py": 'def f(kind):\n    return "subspace" != kind\n',
        "lnproofs/models/fine.py": 'def f(family):\n    return family.norm == "layernorm"\n',  # not a kind
    }
    for name, text in planted.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert [f.split(":")[0] for f in kind_comparisons(tmp_path)] == [
        "lnproofs/models/planted.py",
        "lnproofs/propose/planted.py",
        "torch_backend/planted.py",
    ]


_W = [[1.0, 0.5, -0.25], [0.0, 2.0, 1.0]]
EXAMPLES = {
    FreeQueries: FreeQueries(),
    BallQuerySet: BallQuerySet(2.5),
    BoxQuerySet: BoxQuerySet(100.0, (0.5, -0.25, 0.0, 0.25, 0.0, 0.1)),
    SubspaceQuerySet: SubspaceQuerySet([[1.0, 0.0], [0.5, 0.5]]),
    LayerNormQuerySet: LayerNormQuerySet([1.0, 2.0, 0.5], [0.0, 0.1, 0.0], _W, [0.5, -0.5]),
    RMSNormQuerySet: RMSNormQuerySet([1.0, 1.5, 2.0], _W, [0.0, 0.25], rotation=Rotation([0.6, 0.8], [0.8, 0.6])),
    RotaryLayerNormQuerySet: RotaryLayerNormQuerySet([1.0, 1.5, 2.0], _W, [0.0, 0.25], beta=[0.1, 0.0, -0.1]),
}
KEYS = np.array([[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0], [0.0, -2.0], [0.5, 0.25], [1.5, 1.5]])


def test_the_examples_cover_every_kind():
    assert set(EXAMPLES) == set(EVERY)


@pytest.mark.parametrize("kind", list(EXAMPLES), ids=lambda k: k.kind)
def test_every_piece_of_a_kind_works_together(kind):
    """JSON form, proposer, exact checks, description and (with torch) the numeric re-check of one set."""
    qs = EXAMPLES[kind]
    assert kind_of(json.loads(json.dumps(query_set_to_json(qs)))["kind"]).from_json(query_set_to_json(qs)) == qs
    results = proposer_for(qs).certify(KEYS, qs, seed=0)
    assert len(results) == len(KEYS) and any(r.status != "undecided" for r in results)
    assert all(v.ok for v in qs.check(KEYS, results))
    assert describe_query_set(qs) and (OPTIONS[kind].flag or OPTIONS[kind].source)
    pytest.importorskip("torch")
    from lnproofs.certificates.writers import result_to_json
    from torch_backend.certificates import recheck_certificate

    cert = {
        "schema": "lnproofs.selectability/1",
        "n_keys": len(KEYS),
        "dim": KEYS.shape[1],
        "query_set": query_set_to_json(qs),
        "results": [result_to_json(r) for r in results],
    }
    report = recheck_certificate(KEYS, cert, device="cpu", samples=256)
    assert report["ok"], report["messages"]
    assert report["query_set"] == kind.kind


def test_a_kind_without_a_piece_is_refused_in_one_line():
    """A query set whose class no layer registered (as a new kind would be, before its pieces) is
    refused by name, not sent down another kind's branch."""
    from lnproofs.kernel import CertificateFormatError

    class Sphere(FreeQueries):
        kind = "sphere"

    with pytest.raises(CertificateFormatError, match="sphere"):
        proposer_for(Sphere())
    with pytest.raises(KeyError):
        OPTIONS[Sphere]
    with pytest.raises(CertificateFormatError, match="sphere"):
        kernel.check_uniform(KEYS, {"status": "undecided", "query_set": {"kind": "sphere"}})
