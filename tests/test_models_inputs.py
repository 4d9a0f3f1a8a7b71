"""certify-model's inputs: every --tokens file is certified, in the order given."""

from __future__ import annotations

import json

import numpy as np
import pytest
from bad_inputs.models import tiny_gpt2


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2")
    tiny_gpt2(folder)
    return folder


def _tokens_of(out):
    return [json.loads(p.read_text())["tokens"] for p in sorted((out / "texts").glob("text*.json"))]


def test_repeated_tokens_files_are_all_certified_in_order(cli, tmp_path, gpt2):
    np.save(tmp_path / "a.npy", np.array([1, 2, 3]))
    np.save(tmp_path / "b.npy", np.array([[4, 5], [6, 7]]))
    out = tmp_path / "out"
    result = cli(
        [
            "certify-model",
            gpt2,
            "--tokens",
            tmp_path / "a.npy",
            "--tokens",
            tmp_path / "b.npy",
            "--layers",
            "0",
            "--heads",
            "0",
            "--uniform",
            "none",
            "--no-causal",
            "--out",
            out,
            "--quiet",
        ]
    )
    assert result.status == 0, result.err
    assert "3 text(s): 3 certified" in result.out
    assert _tokens_of(out) == [[1, 2, 3], [4, 5], [6, 7]]


def test_a_bad_file_among_several_is_named(cli, tmp_path, gpt2):
    np.save(tmp_path / "a.npy", np.array([1, 2, 3]))
    np.save(tmp_path / "b.npy", np.array([1, 99]))
    result = cli(
        [
            "certify-model",
            gpt2,
            "--tokens",
            tmp_path / "a.npy",
            "--tokens",
            tmp_path / "b.npy",
            "--out",
            tmp_path / "out",
        ]
    )
    assert result.status == 2
    assert result.err.count("\n") == 1
    assert f"--tokens {tmp_path / 'b.npy'}: input 0 holds token id 99" in result.err
