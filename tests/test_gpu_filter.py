"""The kernel's float filter with its products on a torch device (torch_backend/matmul.py): the same
verdicts and certificates as with numpy's products, on random keys and on adversarial near-ties; a
wrong product is caught (so the comparison can fail); ``--device`` on the command line; on CUDA where
a GPU is present."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lnproofs.kernel import ExactKeys, LayerNormQuerySet, check_vocab, check_witnesses

torch = pytest.importorskip("torch")
from torch_backend.matmul import DeviceMatmul, filter_matmul  # noqa: E402

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA GPU on this machine: the device run is skipped")


def _near_ties(rng, n, d, kind):
    """Keys whose scores under their own witnesses nearly tie: float32 or float64 grids, keys one ulp
    (float32 or float64) from another, exact twins, and a key in the interior of two others."""
    K = rng.normal(0, 0.02, size=(n, d))
    if kind.startswith("float32"):
        K = K.astype(np.float32).astype(np.float64)
    if n > 1 and kind.endswith("ulp"):
        step = np.float32 if kind.startswith("float32") else np.float64
        K[1] = np.nextafter(K[0].astype(step), step(np.inf)).astype(np.float64)
    if n > 2 and kind.endswith("twins"):
        K[2] = K[0]
    if n > 2 and kind.endswith("midpoint"):
        K[2] = (K[0] + K[1]) / 2  # exact: never strictly above both
    return K


def _items(rng, K, kind):
    """Each key's own witness, a rival's, and a witness nudged one ulp toward a rival."""
    n = len(K)
    items = [(i, K[i]) for i in range(n)] + [(i, K[(i + 1) % n]) for i in range(0, n, 3)]
    if n > 1:
        items.append((0, np.nextafter(K[0], K[1])))
    if kind == "rational":
        from fractions import Fraction

        items.append((0, tuple(Fraction(x) + Fraction(1, 10**40) for x in K[0].tolist())))
    return items


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 40),
    st.integers(1, 12),
    st.sampled_from(["float32", "float64", "float32 ulp", "float64 ulp", "float64 twins", "float32 midpoint"]),
    st.sampled_from(["strict", "tie"]),
    st.sampled_from(["float", "rational"]),
)
def test_the_torch_product_on_the_cpu_gives_numpys_verdicts(seed, n, d, keys, mode, witnesses):
    rng = np.random.default_rng(seed)
    K = _near_ties(rng, n, d, keys)
    items = _items(rng, K, witnesses)
    with_numpy = check_witnesses(ExactKeys(K), items, mode=mode)
    with_torch = check_witnesses(ExactKeys(K, DeviceMatmul("cpu")), items, mode=mode)
    assert with_torch == with_numpy


def test_a_product_outside_the_bound_is_seen_by_the_comparison():
    """The comparison above has power: a product off by more than the bound (here 10^-3 less for each
    later key, as a reduced-precision product can be) makes the filter accept a claim the exact path
    refutes."""
    K, q = np.array([[1.0, 0.0], [1.0, 2.0**-30]]), (1.0, 2.0**-40)  # q.k_1 - q.k_0 = 2^-70 > 0
    careless = lambda A, B: np.asarray(A, dtype=np.float64) @ B - 1e-3 * np.arange(len(A))[:, None]  # noqa: E731
    honest = check_witnesses(ExactKeys(K, DeviceMatmul("cpu")), [(0, q)])
    assert honest[0] is not None and honest == check_witnesses(ExactKeys(K), [(0, q)])
    assert check_witnesses(ExactKeys(K, careless), [(0, q)]) == [None]


def test_random_float32_keys_of_a_head_get_the_same_verdicts():
    rng = np.random.default_rng(5)
    K = rng.normal(0, 0.02, size=(1500, 64)).astype(np.float32)
    items = [(i, K[i].astype(np.float64)) for i in range(len(K))] + [(3, K[4].astype(np.float64))]
    got = check_witnesses(ExactKeys(K, DeviceMatmul("cpu")), items)
    assert got == check_witnesses(ExactKeys(K), items)
    assert got[:-1] == [None] * len(K) and got[-1] is not None  # every own witness wins; a rival's loses


def test_the_keys_are_sent_once_and_a_new_array_is_sent_again():
    mm, rng = DeviceMatmul("cpu"), np.random.default_rng(1)
    A, B = rng.normal(size=(50, 8)), rng.normal(size=(8, 3))
    assert np.allclose(mm(A, B), A @ B) and np.allclose(mm(A[:, :5], B[:5]), A[:, :5] @ B[:5])
    held = [entry[2] for entry in mm._held]
    assert mm(A, 2 * B) is not None and [entry[2] for entry in mm._held] == held  # the same memory: no new copy
    A2 = A + 1.0  # other memory, other numbers
    assert np.allclose(mm(A2, B), A2 @ B)
    assert mm(A[:, 8:], B[8:]).shape == (50, 3) and not mm(A[:, 8:], B[8:]).any()
    assert pickle.loads(pickle.dumps(mm)).device == mm.device


def _norm_layer(n=300, d=6, seed=2):
    rng = np.random.default_rng(seed)
    f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731
    K = np.hstack([f32(rng.normal(size=(n, d))), f32(0.3 * rng.normal(size=(n, 1)))])
    W, b_q = np.vstack([np.eye(d), np.zeros((1, d))]), np.r_[np.zeros(d), 1.0]
    g, beta = f32(1 + 0.2 * rng.normal(size=d)), f32(0.1 * rng.normal(size=d))
    return K, LayerNormQuerySet(tuple(g), tuple(beta), W, tuple(b_q), 1e-5)


def _same(a, b) -> bool:
    """Two vocabulary certificates with the same manifest and the same arrays, entry for entry."""
    A, B = a.arrays(), b.arrays()
    return a.manifest() == b.manifest() and A.keys() == B.keys() and all(np.array_equal(A[k], B[k]) for k in A)


@pytest.mark.parametrize("kind", ["free", "box with a bias", "layernorm"])
def test_vocabulary_certificates_and_their_checks_are_the_same_with_the_torch_product(kind):
    from lnproofs.kernel import BoxQuerySet
    from lnproofs.propose.vocab import certify_vocab_keys

    rng = np.random.default_rng(7)
    K = rng.normal(0, 0.02, size=(400, 8)).astype(np.float32).astype(np.float64)
    qs = None
    if kind == "box with a bias":
        qs = BoxQuerySet(100.0, tuple(float(x) for x in rng.normal(0, 0.01, size=len(K))))
    elif kind == "layernorm":
        K, qs = _norm_layer()
    plain = certify_vocab_keys(K, qs)
    assert _same(certify_vocab_keys(K, qs, matmul=DeviceMatmul("cpu")), plain)
    verdicts = check_vocab(K, plain.manifest(), plain.arrays(), DeviceMatmul("cpu"))
    assert verdicts == check_vocab(K, plain.manifest(), plain.arrays())
    assert all(v.ok for v in verdicts) and plain.evidence_counts().get("own key", 0) > 0


def test_device_cpu_is_numpys_product_and_auto_without_cuda_too():
    assert filter_matmul("cpu") is None
    assert (filter_matmul("auto") is None) == (not CUDA)


@pytest.mark.skipif(CUDA, reason="a CUDA GPU is present: asking for one is not an error here")
def test_asking_for_cuda_without_a_gpu_is_one_line_and_exit_2(tmp_path, cli):
    from lnproofs.propose.vocab import certify_vocab_keys

    K = np.random.default_rng(0).normal(size=(30, 4))
    np.save(tmp_path / "k.npy", K)
    certify_vocab_keys(K).save(tmp_path / "c.json", tmp_path / "k.npy")
    held = cli(["check", str(tmp_path / "c.json"), "--device", "cpu"])
    assert held.status == 0 and "every claim holds" in held.out
    refused = cli(["check", str(tmp_path / "c.json"), "--device", "cuda"])
    assert refused.status == 2 and "no CUDA GPU" in refused.err and len(refused.err.strip().splitlines()) == 1
    refused = cli(["certify-vocab", str(tmp_path / "no-model"), "--device", "cuda", "--out", str(tmp_path / "o")])
    assert refused.status == 2 and "no CUDA GPU" in refused.err and "Traceback" not in refused.err


@needs_cuda
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_on_cuda_the_verdicts_and_certificates_are_numpys(dtype):
    from lnproofs.propose.vocab import certify_vocab_keys

    rng = np.random.default_rng(11)
    K = rng.normal(0, 0.02, size=(3000, 96)).astype(dtype).astype(np.float64)
    K[1] = np.nextafter(K[0], np.inf)  # a near-tie the filter must leave to the integers
    items = [(i, K[i]) for i in range(len(K))] + [(0, np.nextafter(K[0], K[1]))]
    gpu = filter_matmul("cuda")
    assert check_witnesses(ExactKeys(K, gpu), items) == check_witnesses(ExactKeys(K), items)
    assert _same(certify_vocab_keys(K, matmul=gpu), certify_vocab_keys(K))


class Counted(DeviceMatmul):
    """The torch product on the CPU, counting its calls (in this process: ``--workers 1``)."""

    calls = 0

    def __call__(self, A, B):
        Counted.calls += 1
        return super().__call__(A, B)


def test_device_reaches_the_kernel_from_certify_vocab_and_check_with_the_same_files(cli, tmp_path, monkeypatch):
    """``--device`` hands its product to the kernel on both commands (here the torch product on the
    CPU in place of a GPU's), and the certificates and verdicts are numpy's."""
    from test_vocab_models import build

    import lnproofs.commands.certify_vocab as certify_vocab
    import lnproofs.commands.check as check

    folder = build("llama", tmp_path / "m", vocab_size=300)
    argv = ["certify-vocab", folder, "--workers", "1", "--sets", "free,realisable"]
    assert cli([*argv, "--out", tmp_path / "plain"]).status == 0
    monkeypatch.setattr(certify_vocab, "filter_product", lambda device: Counted("cpu") if device == "gpu" else None)
    monkeypatch.setattr(check, "filter_product", lambda device: Counted("cpu") if device == "gpu" else None)
    assert cli([*argv, "--out", tmp_path / "gpu", "--device", "gpu"]).status == 0
    made = Counted.calls
    assert made > 0
    for name in ("free", "realisable"):
        for path in sorted((tmp_path / "plain").glob(f"{name}*")):
            assert path.read_bytes() == (tmp_path / "gpu" / path.name).read_bytes(), path.name
        held = cli(["check", tmp_path / "gpu" / f"{name}.json", "--device", "gpu", "--json"])
        assert held.status == 0 and held.json()["ok"]
    assert Counted.calls > made
