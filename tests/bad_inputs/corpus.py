"""Invalid corpora for ``certify-model --corpus``."""

from .models import _bert, _gpt2


def _run(tmp_path, corpus, *extra, model=None):
    return ["certify-model", model or _bert(tmp_path), "--corpus", corpus, "--out", tmp_path / "o", "--quiet", *extra]


def _one_line(tmp_path, *extra, model=None):
    """A corpus of one good text, run with ``extra`` options (and ``model``)."""
    path = tmp_path / "c.txt"
    path.write_text("the cat sat\n", encoding="utf-8")
    return _run(tmp_path, path, *extra, model=model)


def _missing(tmp_path):
    return _run(tmp_path, tmp_path / "no-such-corpus.txt")


def _empty(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n  \n", encoding="utf-8")
    return _run(tmp_path, path)


def _empty_folder(tmp_path):
    folder = tmp_path / "texts"
    folder.mkdir()
    return _run(tmp_path, folder)


def _not_utf8(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("the cat\nthe d\xf6g sat\n".encode("latin-1"))
    return _run(tmp_path, path)


def _jsonl_without_text(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text('{"text": "the cat sat"}\n{"body": "the dog ran"}\n', encoding="utf-8")
    return _run(tmp_path, path)


def _jsonl_not_json(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text('{"text": "the cat sat"}\nthe dog ran\n', encoding="utf-8")
    return _run(tmp_path, path)


def _max_texts_zero(tmp_path):
    return _one_line(tmp_path, "--max-texts", "0")


def _one_token(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("the cat sat on the mat\ncat\n", encoding="utf-8")
    return _run(tmp_path, path, model=_gpt2(tmp_path, tokenizer=True))


def _corpus_and_text(tmp_path):
    return _one_line(tmp_path, "--text", "the cat")


def _batch_size_zero(tmp_path):
    return _one_line(tmp_path, "--batch-size", "0")


def _sliding_window_text(tmp_path):
    """A corpus text longer than a Mistral model's sliding window (the model's own tokenizer
    is a word-level one over the test words)."""
    from .models import _decoder, _word_tokenizer

    folder = _decoder(tmp_path, "mistral", sliding_window=4)
    _word_tokenizer(folder)
    path = tmp_path / "c.txt"
    path.write_text("the cat sat\nthe cat sat on the mat\n", encoding="utf-8")
    return _run(tmp_path, path, model=folder)


def _cluster(model: bool) -> str:
    """The address of a thread-based Dask cluster of one worker (offering the MODEL resource
    when ``model``), started once for the test session and closed at exit."""
    import atexit

    from distributed import LocalCluster

    if model not in _CLUSTERS:
        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            dashboard_address=":0",
            silence_logs=50,
            resources={"MODEL": 1} if model else None,
        )
        atexit.register(cluster.close)
        _CLUSTERS[model] = cluster
    return _CLUSTERS[model].scheduler_address


_CLUSTERS: dict = {}


def _model_workers_over_workers(tmp_path):
    return _one_line(tmp_path, "--workers", "2", "--model-workers", "3")


def _model_workers_zero(tmp_path):
    return _one_line(tmp_path, "--workers", "2", "--model-workers", "0")


def _model_workers_with_scheduler(tmp_path):
    return _one_line(tmp_path, "--scheduler", "tcp://127.0.0.1:9", "--model-workers", "1")


def _scheduler_without_model_workers(tmp_path):
    return _one_line(tmp_path, "--scheduler", _cluster(False))


def _device_not_here(tmp_path):
    return _one_line(tmp_path, "--device", "cuda:64")


def _device_not_on_model_workers(tmp_path):
    return _one_line(tmp_path, "--scheduler", _cluster(True), "--device", "cuda:64")


CASES = [
    ("corpus-missing", _missing, "does not exist"),
    ("corpus-empty", _empty, "is empty"),
    ("corpus-folder-without-txt", _empty_folder, "holds no .txt files"),
    ("corpus-not-utf8", _not_utf8, "line 2 is not utf-8"),
    ("corpus-jsonl-without-text", _jsonl_without_text, "line 2 has no string field 'text'"),
    ("corpus-jsonl-not-json", _jsonl_not_json, "line 2 is not valid json"),
    ("corpus-max-texts-zero", _max_texts_zero, "--max-texts 0 is not accepted"),
    ("corpus-text-of-one-token", _one_token, "tokenizes to 1 token"),
    ("corpus-and-text", _corpus_and_text, "not both"),
    ("corpus-batch-size-zero", _batch_size_zero, "--batch-size 0 is not accepted"),
    ("model-workers-over-workers", _model_workers_over_workers, "--model-workers 3 is more than --workers 2"),
    ("model-workers-zero", _model_workers_zero, "--model-workers 0 is not accepted"),
    ("model-workers-with-scheduler", _model_workers_with_scheduler, "cannot be combined"),
    ("scheduler-without-model-workers", _scheduler_without_model_workers, "offers the resource MODEL"),
    ("device-not-here", _device_not_here, "device 'cuda:64' is not available here"),
    ("device-not-on-model-workers", _device_not_on_model_workers, "device 'cuda:64' is not available here"),
    ("corpus-text-beyond-sliding-window", _sliding_window_text, "sliding-window attention (window 4)"),
]


def _one_long_word(tmp_path):
    """A line of 2 MiB without a space: its first MiB gives one unknown token, too few to go on from."""
    path = tmp_path / "c.txt"
    path.write_text("the cat sat\n" + "x" * (2 << 20) + "\n", encoding="utf-8")
    return _run(tmp_path, path)


def _more_tokens_than_the_budget(tmp_path):
    """A rotary model whose maximum is a million positions, and a line of 3 MiB: the run would
    keep more tokens than the first MiB holds."""
    from .models import _decoder, _word_tokenizer

    folder = _decoder(tmp_path, "llama", positions=10**6)
    _word_tokenizer(folder)
    path = tmp_path / "c.txt"
    path.write_text("the cat sat on the mat . " * ((3 << 20) // 25) + "\n", encoding="utf-8")
    return _run(tmp_path, path, model=folder)


CASES += [
    ("corpus-line-of-one-long-word", _one_long_word, "text 1: its first 1048576 characters give only 3 tokens"),
    (
        "corpus-line-needing-more-than-the-tokenise-budget",
        _more_tokens_than_the_budget,
        "tokenises at most 1048576 characters of a text: give --max-tokens",
    ),
]
