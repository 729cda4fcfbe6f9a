"""The fuzz harness's writer-argument target (tests/fuzzing/writer_args.py) on a fixed seed: every call is a
clean refusal that leaves the array as it was, or a write read back equal; both happen."""

from __future__ import annotations

from collections import Counter

from fuzzing.writer_args import writer_case


def test_writer_argument_cases_refuse_cleanly_or_read_back_equal(tmp_path):
    outcomes = Counter()
    for number in range(150):
        where = tmp_path / str(number)
        where.mkdir()
        got = writer_case(20261127, number, where)
        assert got["outcome"] in ("refused", "written"), (number, got)
        outcomes[got["outcome"]] += 1
    assert outcomes["refused"] > 50 and outcomes["written"] > 5, outcomes
