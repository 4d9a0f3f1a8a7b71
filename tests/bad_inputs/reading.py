"""Invalid inputs of the one reader per file kind and of resumed runs: files refused from their
size or header before their data is read, links, FIFOs and devices, NaN in a vocabulary array,
numbers not read as written, an output that is an input, resumed work that is not this run's,
and a second run on an output another run holds."""

import json
import os

import numpy as np

_HELD = []  # lock files held for the row's whole run (a second open file conflicts, even in one process)


def _sparse(path, size=1 << 40):
    with open(path, "wb") as handle:
        handle.truncate(size)  # a terabyte of holes: reading or hashing it would take hours
    return path


def _claiming(path, shape=(10**12,)):
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": "<f8", "fortran_order": False, "shape": shape})
        handle.write(b"\0" * 64)
    return path


def _certify(make_keys, *extra):
    def make(tmp_path):
        return ["certify", make_keys(tmp_path), *extra]

    return make


def _link(target):
    def make(tmp_path):
        os.symlink(target, tmp_path / "k.npy")
        return tmp_path / "k.npy"

    return make


def _fifo(tmp_path):
    os.mkfifo(tmp_path / "k.npy")
    return tmp_path / "k.npy"


def _vocab_manifest(edit_array):
    """A vocabulary certificate of 6 keys whose evidence (or queries) array is then replaced."""

    def make(tmp_path):
        from lnproofs.certificates.keyfile import sha256_of
        from lnproofs.propose.vocab import certify_vocab_keys

        keys = np.random.default_rng(0).normal(size=(6, 3))
        np.save(tmp_path / "keys.npy", keys)
        path = certify_vocab_keys(keys).save(tmp_path / "free.json", tmp_path / "keys.npy")
        data = json.loads(path.read_text())
        name, target = edit_array(tmp_path)
        digest = "0" * 64 if target.stat().st_size > (1 << 30) else sha256_of(target)
        data["arrays"][name] = {"path": target.name, "sha256": digest}
        path.write_text(json.dumps(data))
        return ["check", path]

    return make


def _queries_nan(tmp_path):
    np.save(tmp_path / "q.npy", np.array([[0.0, np.nan, 1.0]]))
    return "queries", tmp_path / "q.npy"


def _scaled_certificate(scale):
    def make(tmp_path):
        (tmp_path / "k.csv").write_text("0,0\n1,0.1\n3,0.3\n")
        from lnproofs.cli import main

        assert main(["certify", str(tmp_path / "k.csv"), "--out", str(tmp_path / "c.json")]) == 0
        data = json.loads((tmp_path / "c.json").read_text())
        data["keys_reading"]["scale"] = scale
        (tmp_path / "c.json").write_text(json.dumps(data))
        return ["check", tmp_path / "c.json"]

    return make


def _text(content, name="k.csv"):
    def make(tmp_path):
        (tmp_path / name).write_text(content)
        return tmp_path / name

    return make


def _npy(name, values):
    def make(tmp_path):
        np.save(tmp_path / name, np.asarray(values, dtype=np.float64))
        return tmp_path / name

    return make


def _key_bias_as_out(tmp_path):
    np.save(tmp_path / "k.npy", np.eye(3))
    np.save(tmp_path / "b.npy", np.zeros(3))
    return ["certify", tmp_path / "k.npy", "--key-bias", tmp_path / "b.npy", "--out", tmp_path / "b.npy"]


def _held(lock):
    import fcntl

    handle = open(lock, "a+b")  # noqa: SIM115 - held until the row's process ends
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD.append(handle)


def _certify_held(tmp_path):
    np.save(tmp_path / "k.npy", np.eye(3))
    _held(tmp_path / "c.json.lock")
    return ["certify", tmp_path / "k.npy", "--out", tmp_path / "c.json"]


def _tiny_model(folder, seed=0):
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        hidden_size=4, intermediate_size=8, num_hidden_layers=1, num_attention_heads=2, vocab_size=10
    )
    transformers.LlamaForCausalLM(config).save_pretrained(str(folder))
    return folder


def _vocab(prepare, *extra):
    """certify-vocab of a tiny model into a folder ``prepare(tmp_path, out)`` made ready."""

    def make(tmp_path):
        from lnproofs.cli import main

        out = tmp_path / "out"
        model = _tiny_model(tmp_path / "m")
        argv = ["certify-vocab", str(model), "--out", str(out), "--workers", "1", "--sets", "free"]
        prepare(tmp_path, out, lambda *more: main(argv + list(more)))
        return argv + list(extra)

    return make


def _finished_as_list(tmp_path, out, run):
    assert run() == 0
    (out / "free.json").write_text("[]")


def _another_models_folder(tmp_path, out, run):
    from lnproofs.cli import main

    other = _tiny_model(tmp_path / "other", seed=1)
    assert main(["certify-vocab", str(other), "--out", str(out), "--workers", "1", "--sets", "free"]) == 0


def _held_folder(tmp_path, out, run):
    out.mkdir()
    _held(out / ".lnproofs.lock")


CASES = [
    ("keys-npy-sparse-1TB", _certify(lambda p: _sparse(p / "k.npy")), "--max-array-bytes"),
    ("keys-npy-header-1e12-entries", _certify(lambda p: _claiming(p / "k.npy")), "--max-array-bytes"),
    ("keys-csv-sparse-1TB", _certify(lambda p: _sparse(p / "k.csv")), "--max-array-bytes"),
    ("vocab-array-sparse-1TB", _vocab_manifest(lambda p: ("evidence", _sparse(p / "e.npy"))), "--max-array-bytes"),
    ("vocab-array-header-1e12", _vocab_manifest(lambda p: ("evidence", _claiming(p / "e.npy"))), "--max-array-bytes"),
    ("vocab-queries-nan", _vocab_manifest(_queries_nan), "only finite numbers"),
    ("keys-link-to-proc-self-mem", _certify(_link("/proc/self/mem")), "symbolic link"),
    ("keys-link-to-a-file", _certify(_link("/etc/hostname")), "symbolic link"),
    ("keys-fifo", _certify(_fifo), "FIFO"),
    ("keys-csv-typo-first-line", _certify(_text("1,2x\n3,4\n")), "line 1 column 2"),
    ("keys-csv-typo-later-line", _certify(_text("\ufeffx,y\n1,2\n3,4O\n")), "line 3 column 2"),
    ("keys-csv-empty-cell", _certify(_text("1,2\n3,\n")), "line 2 column 2"),
    ("keys-csv-nan", _certify(_text("1,2\nnan,4\n")), "not finite"),
    ("keys-csv-exponent-past-limit", _certify(_text("1,2\n3,1e999999999\n")), "exponent"),
    ("keys-csv-ratio-over-zero", _certify(_text("1,2\n3,1/0\n")), "denominator 0"),
    ("box-not-a-float", _certify(_npy("k.npy", np.eye(3)), "--box", "0.1"), "no float64 equals"),
    ("ball-not-a-float", _certify(_npy("k.npy", np.eye(3)), "--query-ball", "0.3"), "no float64 equals"),
    ("ball-not-a-number", _certify(_npy("k.npy", np.eye(3)), "--query-ball", "two"), "not a number"),
    ("key-bias-as-out", _key_bias_as_out, "is the input file"),
    ("check-keys-reading-another-scale", _scaled_certificate("7"), "does not divide"),
    ("check-keys-reading-not-a-scale", _scaled_certificate("-10"), "keys_reading"),
    ("certify-second-run", _certify_held, "another lnproofs run"),
    ("vocab-resume-finished-set-a-list", _vocab(_finished_as_list, "--resume"), "not a vocabulary certificate"),
    ("vocab-resume-another-models-folder", _vocab(_another_models_folder, "--resume"), "other keys"),
    ("vocab-second-run", _vocab(_held_folder), "another lnproofs run"),
]
