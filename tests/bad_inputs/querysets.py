"""Invalid query sets and softmax options: one clear line and exit status 2."""

import numpy as np

KEYS = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def _keys(tmp_path):
    path = tmp_path / "k.npy"
    np.save(path, KEYS)
    return path


def _subspace(W, command="certify"):
    def make(tmp_path):
        path = tmp_path / "W.npy"
        np.save(path, np.asarray(W))
        return [command, _keys(tmp_path), "--query-subspace", path]

    return make


def _params(command="certify", **arrays):
    def make(tmp_path):
        path = tmp_path / "p.npz"
        np.savez(path, **arrays)
        return [command, _keys(tmp_path), "--query-layernorm", path]

    return make


def _argv(*extra):
    def make(tmp_path):
        return [str(x) for x in extra[:1]] + [_keys(tmp_path)] + [str(x) for x in extra[1:]]

    return make


GOOD = dict(gamma=np.ones(4), beta=np.zeros(4), W_q=np.ones((3, 4)), b_q=np.zeros(3))

CASES = [
    ("subspace-wrong-width", _subspace(np.ones((2, 5))), "W must be m x 3"),
    ("subspace-wrong-width-uniform", _subspace(np.ones((2, 2)), "uniform"), "W must be m x 3"),
    ("subspace-nan", _subspace([[1.0, np.nan, 0.0]]), "nan"),
    ("subspace-missing-file", lambda t: ["uniform", _keys(t), "--query-subspace", t / "no.npy"], "does not exist"),
    ("layernorm-missing-array", _params(gamma=GOOD["gamma"], beta=GOOD["beta"], W_q=GOOD["W_q"]), "no array 'b_q'"),
    (
        "layernorm-missing-array-uniform",
        _params("uniform", gamma=GOOD["gamma"], W_q=GOOD["W_q"], b_q=GOOD["b_q"]),
        "no array 'beta'",
    ),
    ("layernorm-wrong-query-dim", _params(**{**GOOD, "W_q": np.ones((2, 4)), "b_q": np.zeros(2)}), "W_q must be 3 x n"),
    ("layernorm-gamma-beta", _params(**{**GOOD, "beta": np.zeros(5)}), "must agree"),
    ("layernorm-negative-eps", _params(**GOOD, eps=-1.0), "eps"),
    ("layernorm-not-npz", lambda t: ["certify", _keys(t), "--query-layernorm", _keys(t)], ".npz"),
    (
        "both-subspace-and-layernorm",
        lambda t: ["uniform", _keys(t), "--query-subspace", _keys(t), "--query-layernorm", t / "p.npz"],
        "choose one",
    ),
    ("ball-zero", _argv("certify", "--query-ball", "0"), "must be > 0"),
    ("ball-negative", _argv("attention-weight", "--target", "0", "--max-weight", "--query-ball", "-2"), "must be > 0"),
    ("ball-inf", _argv("uniform", "--query-ball", "inf"), "not finite"),
    ("tau-above-one", _argv("attention-weight", "--target", "0", "--min-norm", "--weight", "1.5"), "outside (0, 1)"),
    ("tau-zero", _argv("attention-weight", "--target", "0", "--min-norm", "--weight", "0"), "outside (0, 1)"),
    ("tau-missing", _argv("attention-weight", "--target", "0", "--min-norm"), "--weight"),
    (
        "target-out-of-range",
        _argv("attention-weight", "--target", "3", "--max-weight", "--query-ball", "1"),
        "out of range",
    ),
    (
        "target-negative",
        _argv("attention-weight", "--target", "-1", "--max-weight", "--query-ball", "1"),
        "out of range",
    ),
    ("max-weight-unbounded", _argv("attention-weight", "--target", "0", "--max-weight"), "--query-ball"),
    (
        "temperature-zero",
        _argv("attention-weight", "--target", "0", "--max-weight", "--query-ball", "1", "--temperature", "0"),
        "temperature",
    ),
]
