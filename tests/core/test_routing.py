"""Routing a ranking, and the oracle-archivist simulation, on hand-made data."""

from core import routing
from core.simulate_review import simulate


def test_routing_follows_decisions_then_the_band():
    ranking = ["a", "b", "c", "d", "e", "f"]
    p = {"a": 0.01, "b": 0.5, "c": 0.9, "d": 0.3, "f": 0.02}  # e has no score
    decided = {"c": routing.RELEASED, "f": routing.WITHHELD}
    where = routing.split(ranking, p, decided, band_low=0.2, band_high=0.8, k=4)
    assert [ranking[i] for i in where.shown] == ["a", "c"]
    assert [ranking[i] for i in where.review] == ["b", "d"]  # e ranks beyond k
    assert routing.split(ranking, {}, {}, band_low=0.2, band_high=0.8, k=10).review == list(
        range(6)
    )  # no classifier: everything waits for review


def test_an_oracle_archivist_keeps_sensitive_documents_from_view_and_teaches_the_classifier():
    truth = {f"d{i}": i % 4 == 0 for i in range(40)}
    rankings = {f"q{j}": [f"d{(j * 7 + i) % 40}" for i in range(20)] for j in range(6)}
    relevance = {q: {d: 1 for d in r[:5]} for q, r in rankings.items()}
    seen_labels = []

    def train(labels):
        seen_labels.append(len(labels))
        # A classifier that knows the labels it was given and is unsure of the rest.
        p = {d: (0.95 if labels[d] else 0.01) if d in labels else 0.5 for d in truth}
        return p, {"f1": len(labels) / len(truth)}

    rounds = simulate(
        rankings=rankings,
        relevance=relevance,
        truth=truth,
        seed_labels={},
        train=train,
        rounds=3,
        band_low=0.2,
        band_high=0.8,
        k=10,
        effort=0.1,
    )
    assert [r["queries"] for r in rounds] == [2, 2, 2]
    assert all(r["sensitive_shown"] == 0 for r in rounds)
    assert seen_labels == sorted(seen_labels) and seen_labels[-1] > 0
    assert rounds[-1]["reviewed_mean"] < rounds[0]["reviewed_mean"]
    assert rounds[-1]["classifier_f1"] > rounds[0]["classifier_f1"]
    # Held out: the labelled documents the round's classifier was not trained on.
    assert [r["heldout"] for r in rounds] == [len(truth) - n for n in seen_labels]
    # Round 1 knows no label: P = 0.5 everywhere, at threshold 0.5 all 40 called sensitive,
    # 10 of them are: F1 = 2 * 10 / (2 * 10 + 30).
    assert rounds[0]["heldout_f1"] == 0.4


def test_most_uncertain_asks_about_the_n_nearest_one_half_and_holds_back_the_rest():
    ranking = ["a", "b", "c", "d", "e", "f", "g"]
    p = {"a": 0.3, "b": 0.45, "c": 0.7, "d": 0.52, "f": 0.01, "g": 0.5}  # e unscored
    where = routing.split(ranking, p, {}, band_low=0.2, band_high=0.8, k=6, most_uncertain=2)
    assert [ranking[i] for i in where.review] == ["d", "e"]  # |0.52-0.5|, unscored = 0.5
    assert [ranking[i] for i in where.shown] == ["f"]  # a, b, c held back, g beyond k
    unlimited = routing.split(ranking, p, {}, band_low=0.2, band_high=0.8, k=6)
    assert [ranking[i] for i in unlimited.review] == ["a", "b", "c", "d", "e"]
    assert (
        routing.split(ranking, p, {}, band_low=0.2, band_high=0.8, k=6, most_uncertain=10)
        == unlimited
    )
