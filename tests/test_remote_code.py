"""No code from an input ever runs: folders naming custom code and pickles are refused in one line.

Each case is a real ``lnproofs`` process given ``y`` on standard input (a pipe, and for one
case a terminal), as a user answering transformers' "run the custom code? [y/N]" prompt would.
Every Python file and pickle here would write a marker file when run; the test checks exit
status 2, exactly one line on standard error, and that no marker appears.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from bad_inputs.models import tiny_bert

ROOT = Path(__file__).resolve().parents[1]


class _Payload:
    """Unpickling this writes ``path`` (what a hostile pickle would do, harmlessly)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (exec, (f"open({self.path!r}, 'w').write('ran')",))


def _code_file(folder: Path, marker: Path) -> None:
    (folder / "custom.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from transformers import BertTokenizer as CustomTokenizer\n"
        "from transformers import BertModel as CustomModel\n"
        "from transformers import BertConfig as CustomConfig\n"
    )


def _edit(path: Path, **fields) -> None:
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data))


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("model") / "bert"
    folder.mkdir()
    tiny_bert(folder)
    return folder


def _folder(tmp_path: Path, model: Path, marker: Path, *, keep_config=True) -> Path:
    folder = tmp_path / "bert"
    folder.mkdir()
    for f in model.iterdir():
        if keep_config or f.name != "config.json":
            (folder / f.name).write_bytes(f.read_bytes())
    _code_file(folder, marker)
    return folder


def _tokenizer_auto_map(tmp_path, model, marker):
    """The case of the report: a separate config, the tokenizer folder names a tokenizer class in its own code."""
    folder = _folder(tmp_path, model, marker, keep_config=False)
    _edit(
        folder / "tokenizer_config.json",
        tokenizer_class="CustomTokenizer",
        auto_map={"AutoTokenizer": ["custom.CustomTokenizer", None]},
    )
    return [folder / "model.safetensors", "--config", model / "config.json", "--text", "hi"]


def _config_auto_map(tmp_path, model, marker):
    folder = _folder(tmp_path, model, marker)
    _edit(folder / "config.json", auto_map={"AutoConfig": "custom.CustomConfig", "AutoModel": "custom.CustomModel"})
    return [folder / "model.safetensors", "--config", folder / "config.json", "--text", "hi"]


def _folder_config_auto_map(tmp_path, model, marker):
    folder = _folder(tmp_path, model, marker)
    _edit(folder / "config.json", auto_map={"AutoModel": "custom.CustomModel"})
    return [folder, "--text", "the cat"]


def _tokenizer_folder_config(tmp_path, model, marker):
    """--tokenizer names a folder whose config.json (read by AutoTokenizer) names custom code."""
    folder = _folder(tmp_path, model, marker)
    _edit(folder / "config.json", model_type="custom", auto_map={"AutoConfig": "custom.CustomConfig"})
    return [model, "--tokenizer", folder, "--text", "the cat"]


def _nested_custom_pipelines(tmp_path, model, marker):
    folder = _folder(tmp_path, model, marker)
    _edit(folder / "config.json", task_specific_params={"x": {"custom_pipelines": {"p": {"impl": "custom.P"}}}})
    return [folder, "--text", "the cat"]


def _pickled_state_dict(suffix):
    def make(tmp_path, model, marker):
        folder = tmp_path / "weights"
        folder.mkdir()
        (folder / "config.json").write_bytes((model / "config.json").read_bytes())
        path = folder / f"model{suffix}"
        with path.open("wb") as handle:
            pickle.dump({"embeddings.word_embeddings.weight": _Payload(marker)}, handle)
        np.save(tmp_path / "ids.npy", np.array([1, 2, 3]))
        return [path, "--tokens", tmp_path / "ids.npy"]

    return make


def _pickled_tokens(suffix):
    def make(tmp_path, model, marker):
        from bad_inputs.models import write_pickled_tokens

        return [model, "--tokens", write_pickled_tokens(tmp_path / f"evil{suffix}", marker)]

    return make


CASES = {
    "tokenizer-config-auto-map": (_tokenizer_auto_map, "names custom code ('auto_map')"),
    "config-auto-map": (_config_auto_map, "names custom code ('auto_map')"),
    "folder-config-auto-map": (_folder_config_auto_map, "names custom code ('auto_map')"),
    "tokenizer-folder-config-auto-map": (_tokenizer_folder_config, "names custom code ('auto_map')"),
    "nested-custom-pipelines": (_nested_custom_pipelines, "names custom code ('custom_pipelines')"),
    "pickled-weights-bin": (_pickled_state_dict(".bin"), "could not be read as a PyTorch state dict"),
    "pickled-weights-pt": (_pickled_state_dict(".pt"), "could not be read as a PyTorch state dict"),
    "pickled-tokens-npy": (_pickled_tokens(".npy"), "never unpickled"),
    "pickled-tokens-npz": (_pickled_tokens(".npz"), "never unpickled"),
    "pickled-tokens-pt": (_pickled_tokens(".pt"), "is not a PyTorch zip archive"),
}


def _run(argv, cwd, stdin) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "lnproofs.cli", "certify-model", *map(str, argv), "--out", str(cwd / "out"), "--quiet"],
        cwd=cwd,
        stdin=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_code_from_an_input_runs_even_when_y_is_answered(tmp_path, model, case):
    make, fragment = CASES[case]
    marker = tmp_path / "MARKER"
    argv = make(tmp_path, model, marker)
    read, write = os.pipe()
    os.write(write, b"y\ny\ny\n")
    os.close(write)
    try:
        result = _run(argv, tmp_path, read)
    finally:
        os.close(read)
    lines = result.stderr.splitlines()
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert len(lines) == 1, result.stderr
    assert fragment in lines[0], lines[0]
    assert not marker.exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_terminal_answering_y_runs_no_code_and_is_never_prompted(tmp_path, model):
    marker = tmp_path / "MARKER"
    argv = _tokenizer_auto_map(tmp_path, model, marker)
    main, terminal = os.openpty()
    os.write(main, b"y\n")
    try:
        result = _run(argv, tmp_path, terminal)
    finally:
        os.close(terminal)
        os.close(main)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "custom code" in result.stderr and "[y/N]" not in result.stdout + result.stderr
    assert not marker.exists()


def test_the_payloads_would_write_the_marker(tmp_path):
    """The hostile files are real: unpickled without a guard, each writes its marker."""
    marker = tmp_path / "MARKER"
    pickle.loads(pickle.dumps(_Payload(marker)))
    assert marker.read_text() == "ran"
    marker.unlink()
    _code_file(tmp_path, marker)
    subprocess.run([sys.executable, str(tmp_path / "custom.py")], check=True, capture_output=True, timeout=300)
    assert marker.exists()
