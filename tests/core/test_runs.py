import io
import math

import pytest

from core.runs import evaluate, write_trec_run


def test_trec_run_lines_are_ranked_from_one_in_natural_topic_order():
    out = io.StringIO()
    write_trec_run({"10": [("b", 2.0)], "2": [("a", 3.5), ("c", 1.25)]}, out, tag="x")
    assert out.getvalue().splitlines() == [
        "2 Q0 a 1 3.500000 x",
        "2 Q0 c 2 1.250000 x",
        "10 Q0 b 1 2.000000 x",
    ]


def test_ndcg_follows_the_project_gain_and_discount():
    # One query: ranking [rel 1, rel 2, rel 0]; ideal [2, 1].
    qrels = {"1": {"a": 1, "b": 2, "c": 0}}
    run = {"1": [("a", 3.0), ("b", 2.0), ("c", 1.0)], "9": [("z", 1.0)]}
    dcg = (2**1 - 1) / math.log2(2) + (2**2 - 1) / math.log2(3)
    ideal = (2**2 - 1) / math.log2(2) + (2**1 - 1) / math.log2(3)
    got = evaluate(qrels, run, ["nDCG(dcg='exp-log2')@10"])
    # ir_measures computes exp-log2 nDCG with gdeval, which prints five decimals.
    assert got["nDCG(dcg='exp-log2')@10"] == pytest.approx(dcg / ideal, abs=1e-5)
