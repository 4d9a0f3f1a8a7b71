"""Shared fixtures: run the command line in-process and capture what it prints; open a page in a
headless Chromium."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from dataclasses import dataclass

import pytest

CHROMEDRIVER = "/usr/bin/chromedriver"


def chromium_or_skip() -> str:
    """The Chromium binary the browser tests drive; skips the test where it or chromedriver is missing."""
    binary = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    if not os.path.exists(CHROMEDRIVER) or binary is None:
        pytest.skip("chromium and chromedriver are not installed")
    return binary


@contextlib.contextmanager
def headless_chromium(page, profile):
    """A headless Chromium showing the local file ``page`` (no network, no first-run pages; its
    profile in the folder ``profile``), quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium_or_skip()
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--window-size=1200,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(page.resolve().as_uri())
        yield driver
    finally:
        driver.quit()


@dataclass
class CliResult:
    status: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


def _run(argv: list[str]) -> CliResult:
    from lnproofs.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse errors and --help
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return CliResult(status, out.getvalue(), err.getvalue())


@pytest.fixture
def cli():
    """``cli(["derive", "--n", "3"])`` runs ``lnproofs`` in-process and returns a CliResult."""
    return _run


# Hypothesis profiles.  "default" is Hypothesis's own (100 examples; the fuzzing harness,
# tests/test_fuzz_*.py, runs 200 per strategy then, within the suite's time budget); "deep" is the
# long run of the harness: pytest tests/test_fuzz_certificates.py tests/test_fuzz_readers.py
# --hypothesis-profile=deep (5,000 examples per strategy).
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    pass
else:
    settings.register_profile(
        "deep",
        max_examples=5000,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


@pytest.fixture
def rewrite_array():
    """Replace one array of a vocabulary certificate and record its new SHA-256 in the manifest, so
    that only the kernel (or the numeric re-check), not the hash, can catch the tampering."""

    def rewrite(path, name, array):
        import json

        import numpy as np

        from lnproofs.certificates.keyfile import sha256_of

        target = path.with_name(f"cert.{name}.npy")
        np.save(target, array)
        data = json.loads(path.read_text())
        data["arrays"][name]["sha256"] = sha256_of(target)
        path.write_text(json.dumps(data))

    return rewrite
