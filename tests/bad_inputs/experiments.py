"""Invalid input for reproduce majority and reproduce lm-tables."""


def _argv(*parts):
    def make(tmp_path):
        return [str(p).replace("{tmp}", str(tmp_path)) for p in parts]

    return make


def _corpus(text, *rest, name="corpus.txt"):
    def make(tmp_path):
        path = tmp_path / name
        path.write_text(text)
        return ["reproduce", "lm-tables", "--corpus", path, "--out", tmp_path / "o", *rest]

    return make


def _empty_folder(tmp_path):
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "a.txt").write_text("   \n\n ")
    return ["reproduce", "lm-tables", "--corpus", tmp_path / "texts", "--out", tmp_path / "o"]


_SMALL = "\n\n".join(f"Paragraph {i} says a few plain words about keys and queries." for i in range(40))

CASES = [
    (
        "majority-seeds-do-not-parse",
        _argv("reproduce", "majority", "--seeds", "11,x", "--out", "{tmp}/o"),
        "does not parse",
    ),
    ("majority-seeds-negative", _argv("reproduce", "majority", "--seeds", "-1", "--out", "{tmp}/o"), "--seeds"),
    ("majority-zero-steps", _argv("reproduce", "majority", "--steps", "0", "--out", "{tmp}/o"), "--steps"),
    (
        "majority-samples-not-a-number",
        _argv("reproduce", "majority", "--samples", "many", "--out", "{tmp}/o"),
        "--samples",
    ),
    ("majority-zero-workers", _argv("reproduce", "majority", "--workers", "0", "--out", "{tmp}/o"), "--workers 0"),
    (
        "majority-workers-and-scheduler",
        _argv("reproduce", "majority", "--workers", "2", "--scheduler", "tcp://127.0.0.1:9", "--out", "{tmp}/o"),
        "cannot be combined",
    ),
    (
        "majority-arms-without-projection",
        _argv("reproduce", "majority", "--arms", "layernorm,none", "--out", "{tmp}/o"),
        "--arms",
    ),
    (
        "majority-arms-unknown",
        _argv("reproduce", "majority", "--arms", "layernorm,no-projection,rms", "--out", "{tmp}/o"),
        "--arms",
    ),
    ("lm-zero-steps", _argv("reproduce", "lm-tables", "--steps", "0", "--out", "{tmp}/o"), "--steps"),
    ("lm-zero-texts", _argv("reproduce", "lm-tables", "--texts", "0", "--out", "{tmp}/o"), "--texts"),
    (
        "lm-text-length-reversed",
        _argv("reproduce", "lm-tables", "--text-length", "900:800", "--out", "{tmp}/o"),
        "--text-length",
    ),
    (
        "lm-corpus-missing",
        _argv("reproduce", "lm-tables", "--corpus", "{tmp}/nothere.txt", "--out", "{tmp}/o"),
        "does not exist",
    ),
    ("lm-corpus-empty-file", _corpus(" \n\n  "), "holds no text"),
    ("lm-corpus-empty-folder", _empty_folder, "holds no text"),
    ("lm-corpus-too-small", _corpus(_SMALL, "--texts", "3"), "too small"),
]
