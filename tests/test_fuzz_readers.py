"""Fuzzing every reader of outside files: keys files (``.npy``, ``.npz``, ``.csv``,
``.safetensors``, ``.pt``) through ``lnproofs check``, answers files through ``homework check``,
corpus files, class rosters, model ``config.json`` and PyTorch state dicts.  Each answers 0, 1 or 2
(one line for bad input), or returns data / raises the package's one-line error; never anything
else, and within the watchdog's time.

Run longer with ``--hypothesis-profile=deep``."""

from __future__ import annotations

import io
import json
import re
import struct

import numpy as np
import pytest
from fuzzing import assert_clean_answer, fuzz_settings, hostile_values, mutated_json, run_cli, scratch, watchdog
from hypothesis import given
from hypothesis import strategies as st

KEYS = np.array([[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0], [0.0, 0.0]])
CERT = {
    "schema": "lnproofs.selectability/1",
    "n_keys": 4,
    "dim": 2,
    "query_set": {"kind": "free"},
    "results": [
        {
            "index": i,
            "status": "selectable" if i < 3 else "undecided",
            "witness": KEYS[i].tolist() if i < 3 else None,
            "combination": None,
            "verified": "exact" if i < 3 else "none",
            "margin": None,
            "reason": None if i < 3 else "x",
        }
        for i in range(4)
    ],
}


def _npy_bytes(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _npz_bytes(array) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, keys=array)
    return buffer.getvalue()


def _safetensors_bytes(header: dict, payload: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + payload


def _valid_files():
    data = KEYS.tobytes()
    return {
        ".npy": _npy_bytes(KEYS),
        ".npz": _npz_bytes(KEYS),
        ".csv": "\n".join(",".join(repr(float(v)) for v in row) for row in KEYS).encode() + b"\n",
        ".safetensors": _safetensors_bytes(
            {"keys": {"dtype": "F64", "shape": [4, 2], "data_offsets": [0, len(data)]}}, data
        ),
    }


@st.composite
def mutated_bytes(draw, data: bytes):
    """``data`` cut, with bytes flipped, inserted or repeated (headers included)."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["cut", "flip", "insert", "repeat", "header"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "cut":
            del data[at:]
        elif op == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(max_size=16))
        elif op == "repeat":
            data[at:at] = data[at : at + draw(st.integers(1, 64))] * draw(st.integers(1, 50))
        elif op == "header" and data:
            data[: min(len(data), 128)] = draw(st.binary(min_size=0, max_size=128))
    return bytes(data)


@st.composite
def hostile_npy(draw):
    """A ``.npy`` header stating a hostile dtype or shape over a short payload."""
    descr = draw(st.sampled_from(["<f8", "|O", "<c16", "<U3", "|b1", ">f4", "<i8", "|V8", "<M8[s]", "x"]))
    shape = draw(
        st.one_of(
            st.tuples(st.integers(0, 10**12), st.integers(0, 10**7)), st.lists(st.integers(0, 5), max_size=4).map(tuple)
        )
    )
    header = "{" + f"'descr': '{descr}', 'fortran_order': {draw(st.booleans())}, 'shape': {shape}, " + "}"
    header = header + " " * (63 - len(header) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + draw(st.binary(max_size=256))


@st.composite
def hostile_safetensors(draw):
    """A ``.safetensors`` header that lies: dtypes, shapes, offsets beyond the file, sizes."""
    entry = {
        "dtype": draw(st.sampled_from(["F64", "F32", "BF16", "I64", "BOOL", "Q4", 7, None])),
        "shape": draw(st.one_of(st.lists(st.integers(-3, 10**9), max_size=3), hostile_values())),
        "data_offsets": draw(st.one_of(st.lists(st.integers(-10, 10**12), max_size=3), hostile_values())),
    }
    header = {draw(st.sampled_from(["keys", "other", "__metadata__"])): entry}
    if draw(st.booleans()):
        header["__metadata__"] = draw(hostile_values())
    data = _safetensors_bytes(header, draw(st.binary(max_size=128)))
    if draw(st.booleans()):
        data = struct.pack("<Q", draw(st.integers(0, 2**64 - 1))) + data[8:]
    return data


def _csv_texts():
    cell = st.one_of(
        st.floats().map(repr),
        st.integers().map(str),
        st.sampled_from(
            ["", " ", "nan", "inf", "1e400", "1/2", "\u0661", "0x1", "#", "1,", "\ufeff1", "--1", "1e-400"]
        ),
    )
    row = st.lists(cell, min_size=0, max_size=8).map(",".join)
    return st.one_of(
        st.lists(row, max_size=6).map("\n".join),
        st.integers(1, 200_000).map(lambda n: ",".join(["1"] * n)),
        st.text(max_size=200),
    )


def _check_keys(name: str, data: bytes):
    with scratch() as folder, watchdog():
        (folder / "c.json").write_text(json.dumps(CERT))
        (folder / name).write_bytes(data)
        return run_cli(["check", folder / "c.json", folder / name, "--max-dim", "100000"])


@fuzz_settings()
@given(st.sampled_from(sorted(_valid_files())), st.data())
def test_mutated_keys_files_never_crash(suffix, data):
    result = _check_keys(f"k{suffix}", data.draw(mutated_bytes(_valid_files()[suffix])))
    assert_clean_answer(result)


@fuzz_settings()
@given(
    st.one_of(
        hostile_npy().map(lambda b: ("k.npy", b)),
        hostile_safetensors().map(lambda b: ("k.safetensors", b)),
        _csv_texts().map(lambda t: ("k.csv", t.encode("utf-8", "surrogatepass"))),
    )
)
def test_hostile_keys_files_never_crash(case):
    name, data = case
    assert_clean_answer(_check_keys(name, data))


def test_the_unmutated_keys_files_hold():
    for suffix, data in _valid_files().items():
        assert _check_keys(f"k{suffix}", data).status == 0, suffix


# ---------------------------------------------------------------- homework answers
@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    """A problem set, and every answer of its solutions (the ``json`` blocks of solutions.md)."""
    folder = tmp_path_factory.mktemp("hw")
    assert run_cli(["homework", "new", "--seed", "3", "--no-pdf", "--out", folder]).status == 0
    text = (folder / "solutions.md").read_text(encoding="utf-8")
    answers = {}
    for block in re.findall(r"Answer in the answers format:\s*```json\n(.*?)```", text, re.S):
        answers.update(json.loads(block))
    assert answers
    return folder, {"schema": "lnproofs.homework-answers/1", "student": "S", "answers": answers}


def test_the_solutions_are_right(problems):
    folder, answers = problems
    with scratch() as tmp:
        (tmp / "a.json").write_text(json.dumps(answers))
        assert run_cli(["homework", "check", tmp / "a.json", "--problems", folder]).status == 0


@fuzz_settings()
@given(st.data())
def test_mutated_answers_never_crash(problems, data):
    folder, answers = problems
    text = data.draw(mutated_json(answers))
    with scratch() as tmp, watchdog():
        (tmp / "a.json").write_text(text, encoding="utf-8")
        result = run_cli(["homework", "check", tmp / "a.json", "--problems", folder])
    assert_clean_answer(result)


# ---------------------------------------------------------------- corpora
def _corpus_answer(path):
    from lnproofs.io.corpus import iter_corpus
    from lnproofs.kernel import InputError

    with watchdog():
        try:
            texts = list(iter_corpus(path, max_texts=1000))
        except InputError as err:
            assert "\n" not in str(err)
            return None
    assert all(isinstance(t, str) and t.strip() for _, t in texts)
    return texts


@fuzz_settings()
@given(
    st.sampled_from([".txt", ".jsonl"]),
    st.one_of(
        st.binary(max_size=400),
        st.lists(hostile_values().map(lambda v: json.dumps({"text": v})), max_size=5).map("\n".join).map(str.encode),
        st.lists(st.one_of(st.text(max_size=30), hostile_values().map(json.dumps)), max_size=5)
        .map("\n".join)
        .map(lambda t: t.encode("utf-8", "surrogatepass")),
    ),
)
def test_corpus_files_never_crash(suffix, data):
    with scratch() as tmp:
        (tmp / f"c{suffix}").write_bytes(data)
        _corpus_answer(tmp / f"c{suffix}")
        (tmp / "texts").mkdir()
        (tmp / "texts" / "a.txt").write_bytes(data)
        _corpus_answer(tmp / "texts")


# ---------------------------------------------------------------- class rosters
ROSTER = "id,name,email\ns01,Ada Lovelace,ada@example.org\ns02,Alan Turing,alan@example.org\n"


def _roster_answer(path):
    from lnproofs.homework.roster import check_student_id, read_roster
    from lnproofs.kernel import InputError

    with watchdog():
        try:
            roster = read_roster(path)
        except InputError as err:
            assert "\n" not in str(err) and len(str(err)) <= 1200, str(err)[:300]
            return None
    ids = [student.id for student in roster.students]
    assert ids and len({i.lower() for i in ids}) == len(ids)  # what it accepts is valid and unique
    assert all(check_student_id(i) == i for i in ids)
    return roster


@fuzz_settings()
@given(
    st.one_of(
        mutated_bytes(ROSTER.encode()),
        st.lists(
            st.lists(st.one_of(st.text(max_size=20), hostile_values().map(str)), min_size=1, max_size=4).map(
                lambda cells: ",".join(cells)
            ),
            max_size=6,
        ).map(lambda rows: ("id,name,email\n" + "\n".join(rows)).encode("utf-8", "surrogatepass")),
    )
)
def test_rosters_are_read_or_refused_in_one_line(data):
    with scratch() as tmp:
        (tmp / "roster.csv").write_bytes(data)
        _roster_answer(tmp / "roster.csv")


def test_the_unmutated_roster_is_read():
    with scratch() as tmp:
        (tmp / "roster.csv").write_text(ROSTER, encoding="utf-8")
        assert [s.id for s in _roster_answer(tmp / "roster.csv").students] == ["s01", "s02"]


# ---------------------------------------------------------------- model config.json
GPT2_CONFIG = {
    "model_type": "gpt2",
    "n_embd": 16,
    "n_head": 2,
    "n_layer": 2,
    "n_positions": 24,
    "vocab_size": 40,
    "layer_norm_epsilon": 1e-5,
    "architectures": ["GPT2Model"],
    "tie_word_embeddings": True,
}


@fuzz_settings()
@given(st.one_of(mutated_json(GPT2_CONFIG), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_config_files_are_read_or_refused_in_one_line(text):
    """The reading of ``config.json`` up to the weights: the file, its model type, the settings
    that are refused (ALiBi, relative positions)."""
    from lnproofs.kernel import ModelError
    from lnproofs.models.families import family_of, refuse_unhandled
    from lnproofs.models.loading import read_config

    with scratch() as tmp, watchdog():
        (tmp / "config.json").write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            data, _ = read_config(tmp)
            family_of(data.get("model_type"), where="config.json")
            refuse_unhandled(data, "config.json")
        except ModelError as err:
            assert "\n" not in str(err)


def _small_config_values():
    """Values that keep a model small to build (a stated width of 10^5 would be allocated first)."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 64),
        st.floats(),
        st.text(max_size=8),
        st.lists(st.integers(-2, 8), max_size=3),
        st.dictionaries(st.text(max_size=4), st.integers(0, 4)),
    )


@st.composite
def _mutated_config(draw):
    config = dict(GPT2_CONFIG)
    for _ in range(draw(st.integers(1, 3))):
        config[
            draw(
                st.sampled_from(
                    sorted(GPT2_CONFIG)
                    + ["n_inner", "activation_function", "rotary_dim", "position_embedding_type", "alibi"]
                )
            )
        ] = draw(_small_config_values())
    return json.dumps(config)


@fuzz_settings(examples=25)
@given(_mutated_config())
def test_config_files_through_certify_model(tiny_gpt2_folder, text):
    """The whole command with a mutated config beside real weights (fewer examples: each builds a
    model; widths stay small, since transformers allocates a stated width before any weight is read)."""
    folder, tokens = tiny_gpt2_folder
    (folder / "config.json").write_text(text, encoding="utf-8")
    with scratch() as tmp, watchdog(120):
        result = run_cli(
            ["certify-model", folder, "--tokens", tokens, "--out", tmp / "o", "--quiet", "--uniform", "none"]
        )
    assert_clean_answer(result)


@pytest.fixture(scope="module")
def tiny_gpt2_folder(tmp_path_factory):
    pytest.importorskip("transformers")
    from bad_inputs.models import _gpt2, _tokens

    root = tmp_path_factory.mktemp("gpt2")
    return _gpt2(root), _tokens(root, [1, 2, 3])


# ---------------------------------------------------------------- state dicts
@pytest.fixture(scope="module")
def state_dict_bytes():
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2, 2, dtype=torch.float64), "b": torch.zeros(2)}, buffer)
    return buffer.getvalue()


@fuzz_settings()
@given(st.data())
def test_state_dicts_are_read_or_refused_in_one_line(state_dict_bytes, data):
    from lnproofs.kernel import ModelError
    from torch_backend.models.loading import torch_state_dict

    with scratch() as tmp, watchdog():
        (tmp / "m.bin").write_bytes(data.draw(mutated_bytes(state_dict_bytes)))
        try:
            state = torch_state_dict(tmp / "m.bin")
        except ModelError as err:
            assert "\n" not in str(err)
        else:
            assert state and all(hasattr(v, "dtype") for v in state.values())
