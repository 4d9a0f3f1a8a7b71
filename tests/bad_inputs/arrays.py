"""Invalid key files, shared by every command that reads keys (here through ``certify``)."""

import numpy as np


def _npy(values, name="k.npy"):
    def make(tmp_path):
        path = tmp_path / name
        np.save(path, np.asarray(values))
        return ["certify", path]

    return make


def _text(content, name):
    def make(tmp_path):
        path = tmp_path / name
        path.write_text(content)
        return ["certify", path]

    return make


def _missing(tmp_path):
    return ["certify", tmp_path / "nothere.npy"]


CASES = [
    ("nan", _npy([[0.0, 1.0], [np.nan, 2.0]]), "nan"),
    ("inf", _npy([[0.0, 1.0], [np.inf, 2.0]]), "inf"),
    ("empty", _npy(np.zeros((0, 3))), "empty"),
    ("one-dimensional", _npy([1.0, 2.0, 3.0]), "2-D"),
    ("complex", _npy(np.array([[1 + 2j, 0j]])), "complex"),
    ("strings", _npy(np.array([["a", "b"]])), "dtype"),
    ("ragged-csv", _text("1,2,3\n4,5\n", "k.csv"), "ragged"),
    ("non-numeric-csv", _text("1,2\nx,y\n", "k.csv"), "non-number"),
    ("corrupt-npy", _text("this is not numpy", "k.npy"), "could not be read"),
    ("missing-file", _missing, "does not exist"),
    ("wrong-suffix", _text("1,2", "k.txt"), "accepted"),
]
