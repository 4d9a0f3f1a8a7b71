"""Invalid options and files for ``lnproofs recheck``."""

import numpy as np


def _argv(*args):
    return lambda tmp_path: ["recheck", *args]


def _layer(make_params, inputs_shape=(5, 4), extra=()):
    def make(tmp_path):
        params = tmp_path / "ln.npz"
        make_params(params)
        x = tmp_path / "x.npy"
        np.save(x, np.ones(inputs_shape) * np.arange(inputs_shape[1]))
        return ["recheck", "--layer", params, "--inputs", x, "--device", "cpu", *extra]

    return make


def _good(path):
    np.savez(path, gain=np.ones(4), bias=np.zeros(4))


CASES = [
    ("device-unknown", _argv("--device", "tpu"), "tpu"),
    ("dtype-unknown", _argv("--dtype", "float16"), "float16"),
    ("width-too-small", _argv("--width", "1", "--device", "cpu"), "width"),
    ("samples-zero", _argv("--samples", "0", "--device", "cpu"), "samples"),
    ("unknown-check", _argv("--only", "no.such", "--device", "cpu"), "no.such"),
    ("zero-workers", _argv("--workers", "0", "--device", "cpu"), "--workers 0"),
    (
        "unreachable-scheduler",
        _argv("--scheduler", "tcp://127.0.0.1:9", "--device", "cpu", "--only", "projection.trace"),
        "cannot reach the Dask scheduler",
    ),
    ("layer-missing-file", lambda t: ["recheck", "--layer", t / "none.npz", "--inputs", t / "x.npy"], "does not exist"),
    ("layer-not-npz", lambda t: ["recheck", "--layer", t / "ln.txt", "--inputs", t / "x.npy"], ".npz"),
    ("layer-without-bias", _layer(lambda p: np.savez(p, gain=np.ones(4))), "bias"),
    ("layer-width-mismatch", _layer(_good, inputs_shape=(5, 3)), "width"),
    ("layer-negative-eps", _layer(_good, extra=("--eps", "-1")), "eps"),
    ("layer-spread-tolerance", _layer(_good, extra=("--spread-tolerance", "2")), "spread tolerance"),
    ("inputs-without-layer", _argv("--inputs", "x.npy"), "--layer"),
]
