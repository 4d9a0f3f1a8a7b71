"""One table of invalid inputs, split by area.

Each module here defines ``CASES``: a list of ``(case_id, make_argv, must_mention)``
where ``make_argv(tmp_path)`` writes whatever files the case needs and returns the
``lnproofs`` arguments, and ``must_mention`` is a fragment the one-line error must hold.
``tests/test_bad_input.py`` runs them all.
"""
