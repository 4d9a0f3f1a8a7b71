"""Invalid input to ``derive`` and ``ellipsoid``: one clear line, exit status 2."""

import numpy as np


def _argv(*args):
    def make(tmp_path):
        return list(args)

    return make


def _gain(values, *, bias=None, name="g.npy"):
    def make(tmp_path):
        path = tmp_path / name
        np.save(path, np.asarray(values))
        argv = ["ellipsoid", "--gain", path]
        if bias is not None:
            bpath = tmp_path / "b.npy"
            np.save(bpath, np.asarray(bias))
            argv += ["--bias", bpath]
        return argv

    return make


def _text_gain(content, name):
    def make(tmp_path):
        path = tmp_path / name
        path.write_text(content)
        return ["ellipsoid", "--gain", path]

    return make


CASES = [
    ("derive-n-one", _argv("derive", "--n", "1"), "n >= 2"),
    ("derive-n-zero", _argv("derive", "--n", "0"), "n >= 2"),
    ("derive-n-negative", _argv("derive", "--n", "-4"), "n >= 2"),
    ("derive-n-not-integer", _argv("derive", "--n", "six"), "invalid int value"),
    ("derive-n-too-large", _argv("derive", "--n", "1000"), "too large"),
    ("derive-bad-convention", _argv("derive", "--convention", "numpy"), "invalid choice"),
    ("derive-unknown-theorem", _argv("derive", "--name", "projection.magic"), "unknown theorem name"),
    ("ellipsoid-gain-2d", _gain(np.ones((3, 3))), "1-D"),
    ("ellipsoid-gain-length-one", _gain([2.0]), "n >= 2"),
    ("ellipsoid-gain-nan", _gain([1.0, np.nan, 2.0]), "nan"),
    ("ellipsoid-gain-inf", _gain([1.0, -np.inf, 2.0]), "inf"),
    ("ellipsoid-bias-length", _gain([1.0, 2.0, 3.0], bias=[0.0, 1.0]), "expected 3"),
    ("ellipsoid-bias-2d", _gain([1.0, 2.0], bias=[[0.0, 1.0]]), "1-D"),
    ("ellipsoid-bias-nan", _gain([1.0, 2.0], bias=[0.0, np.nan]), "nan"),
    ("ellipsoid-gain-strings", _gain(np.array(["a", "b"])), "dtype"),
    ("ellipsoid-gain-not-numbers", _text_gain("not a numpy file", "g.npy"), "could not be read"),
    ("ellipsoid-gain-non-numeric-csv", _text_gain("1,2\nx,y\n", "g.csv"), "non-number"),
    ("ellipsoid-gain-missing", _argv("ellipsoid", "--gain", "no/such/gain.npy"), "does not exist"),
    ("ellipsoid-no-gain", _argv("ellipsoid"), "--gain"),
]

CASES += [
    ("ellipsoid-gain-squares-overflow", _gain([1e308, 1e308, -1e308]), "--gain entry 0 is 1e+308"),
    ("ellipsoid-gain-reciprocal-overflows", _gain([1e-320, 1.0, 2.0]), "--gain entry 0"),
]
