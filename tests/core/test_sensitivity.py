"""The persona sensitivity classifier's features and training, on hand-made messages."""

from datetime import datetime

import numpy as np
import pytest

from core import sensitivity as s


def test_metadata_features_read_time_people_and_shape():
    saturday = datetime(2002, 9, 7, 18, 0)  # a Saturday, 18:00
    m = s.Message(
        docid="1",
        subject="Re: salary",
        body="x" * 99,
        date=saturday,
        sender="boss@corp.example",
        recipients=["a@corp.example", "b@mail.corp.example", "friend@elsewhere.org"],
        attachment_count=2,
        reply=True,
    )
    row = dict(zip(s.METADATA, s.metadata_features([m], ["corp.example"])[0], strict=True))
    assert row["weekend"] == 1 and row["weekday_sat"] == 1 and row["weekday_mon"] == 0
    assert row["hour_sin"] == pytest.approx(-1.0) and row["hour_cos"] == pytest.approx(0, abs=1e-9)
    assert row["sender_internal"] == 1
    assert row["recipients_internal_share"] == pytest.approx(2 / 3)
    assert row["any_external_recipient"] == 1
    assert row["log_recipients"] == pytest.approx(np.log1p(3))
    assert row["log_body_length"] == pytest.approx(np.log1p(99))
    assert (row["attachments"], row["reply"], row["priority"], row["no_date"]) == (2, 1, 0, 0)
    undated = dict(zip(s.METADATA, s.metadata_features([s.Message("2")])[0], strict=True))
    assert undated["no_date"] == 1 and undated["sender_internal"] == 0


def test_graph_features_are_the_exchange_graphs_centralities():
    # a -> b, a -> c, b -> c: a sends to two, c receives from two, b is in between.
    msgs = [
        s.Message("1", sender="a@x", recipients=["b@x", "c@x"]),
        s.Message("2", sender="b@x", recipients=["c@x"]),
    ]
    rows = [dict(zip(s.GRAPH, r, strict=True)) for r in s.graph_features(msgs)]
    assert rows[0]["sender_out_degree"] == 2 and rows[0]["sender_in_degree"] == 0
    assert rows[0]["recipients_max_in_degree"] == 2 and rows[0]["recipients_min_in_degree"] == 1
    assert rows[1]["sender_in_degree"] == 1 and rows[1]["sender_out_degree"] == 1
    assert rows[0]["sender_betweenness"] == 0  # a -> c goes direct: b is on no shortest path
    assert rows[1]["recipients_mean_pagerank"] > rows[0]["sender_pagerank"]


def test_ranking_features_are_table_3_12s_message_description():
    msgs = [
        s.Message(
            "1",
            subject="Re: the budget",
            body="one two three",
            attachments="a b",
            attachment_count=1,
            sender="boss@corp.example",
            recipients=["a@corp.example", "friend@elsewhere.org"],
            reply=True,
        ),
        s.Message("2", sender="out@elsewhere.org", recipients=["a@corp.example"]),
        s.Message("3"),  # no people at all: neither internal nor external
    ]
    rows = [
        dict(zip(s.RANKING, r, strict=True)) for r in s.ranking_features(msgs, ["corp.example"])
    ]
    assert rows[0]["log_subject_words"] == pytest.approx(np.log1p(3))
    assert rows[0]["log_body_words"] == pytest.approx(np.log1p(3))
    assert rows[0]["log_attachments_words"] == pytest.approx(np.log1p(2))
    assert (rows[0]["recipients_external"], rows[0]["recipients_internal"]) == (1, 0)
    assert (rows[0]["sender_external"], rows[0]["sender_internal"]) == (0, 1)
    assert (rows[0]["reply"], rows[0]["attachments"], rows[0]["has_attachments"]) == (1, 1, 1)
    assert (rows[1]["recipients_external"], rows[1]["recipients_internal"]) == (0, 1)
    assert (rows[1]["sender_external"], rows[1]["sender_internal"]) == (1, 0)
    assert rows[0]["sender_out_degree"] == 2 and rows[1]["recipients_max_in_degree"] == 2
    people = ("recipients_external", "recipients_internal", "sender_external", "sender_internal")
    assert [rows[2][k] for k in people] == [0, 0, 0, 0]
    assert s.ranking_features([], ()).shape == (0, len(s.RANKING))


def messages(n=120, seed=0):
    """Sensitive messages talk about health and are sent at weekends."""
    rng = np.random.default_rng(seed)
    out, labels = [], []
    for i in range(n):
        sensitive = i % 5 == 0
        words = rng.choice(["meeting", "report", "budget", "lunch", "project", "schedule"], 6)
        if sensitive:
            words = [*words[:3], "diagnosis", "hospital", "medication"]
        day = 7 if sensitive and i % 2 == 0 else 3
        out.append(
            s.Message(
                str(i),
                subject=" ".join(words[:2]),
                body=" ".join(words),
                date=datetime(2002, 9, day, 10),
                sender=f"p{i % 7}@corp.example",
                recipients=[f"p{(i + 1) % 7}@corp.example"],
            )
        )
        labels.append(int(sensitive))
    return out, labels


def test_training_separates_a_learnable_signal_and_reports_it():
    msgs, labels = messages()
    featurizer = s.Featurizer(["corp.example"])
    matrix = featurizer.fit_transform(msgs)
    assert matrix.shape == (120, len(featurizer.names))
    trained = s.train(matrix, labels, featurizer.names, objective="f2")
    r = trained.report
    assert (r.n, r.positives, r.objective) == (120, 24, "f2")
    assert r.f1 > 0.9 and r.recall > 0.9 and r.balanced_accuracy > 0.9 and not r.warning
    assert {name for name, _w in r.top_sensitive[:3]} & {
        "body:diagnosis",
        "body:hospital",
        "body:medication",
    }
    p = trained.model.predict_proba(matrix)[:, 1]
    assert p.min() >= 0 and p.max() <= 1
    assert np.mean(p[np.array(labels) == 1]) > np.mean(p[np.array(labels) == 0]) + 0.5
    # The lowest out-of-fold P of a sensitive document: at or below the threshold when recall
    # is 1, below it otherwise; a learnable signal puts it well above 0. The threshold is
    # tuned on the model's own probabilities; p_sensitive_min is on the calibrated scale
    # routing reads (issue 33), so each is compared with the threshold on its own scale.
    assert 0.05 < r.p_sensitive_min_raw <= r.threshold + 1e-4 or r.recall < 1
    assert r.p_sensitive_min <= r.threshold_calibrated + 1e-4 or r.recall < 1
    assert r.threshold_calibrated == pytest.approx(float(trained.calibrator.apply(r.threshold)))
    # Calibrated probabilities: the model's through the calibrator fitted on its out-of-fold
    # predictions, with the report's figures.
    assert np.allclose(trained.probabilities(matrix), trained.calibrator.apply(p))
    assert trained.oof.shape == (120,)
    c = r.calibration
    assert c["labels"] == 120 and c["positives"] == 24
    assert c["method"] in ("sigmoid", "none")  # 24 sensitive: too few for isotonic
    assert sum(b["count"] for b in c["bins"]) == 120


def test_training_refuses_too_few_examples_of_a_class():
    msgs, labels = messages(20)
    matrix = s.Featurizer().fit_transform(msgs)
    with pytest.raises(ValueError, match="2 sensitive and 18 not sensitive"):
        s.train(matrix, [1, 1] + [0] * 18, [])
    with pytest.raises(ValueError, match="objective must be f1 or f2"):
        s.train(matrix, labels, [], objective="f3")


def test_a_classifier_no_better_than_chance_says_so():
    # (random labels over 400 messages: flagged for each of the seeds 5 to 9 tried)
    msgs, _labels = messages(400)
    rng = np.random.default_rng(5)
    noise = (rng.random(len(msgs)) < 0.2).astype(int).tolist()  # labels unrelated to content
    featurizer = s.Featurizer()
    r = s.train(featurizer.fit_transform(msgs), noise, featurizer.names).report
    assert "no better than chance" in r.warning
    assert r.baseline_f1 == pytest.approx(2 * sum(noise) / (len(noise) + sum(noise)))


def test_contributions_are_each_documents_strongest_weighted_features():
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    dense = rng.normal(size=(30, 12)) * (rng.random((30, 12)) < 0.5)
    y = (dense[:, 0] - dense[:, 1] > 0).astype(int)
    model = LogisticRegression().fit(dense, y)
    index, value = s.contributions(model, sp.csr_matrix(dense), top=3)
    weighted = dense * model.coef_.ravel()
    for row in range(30):
        up = [i for i in np.argsort(-weighted[row]) if weighted[row, i] > 0][:3]
        down = [i for i in np.argsort(weighted[row]) if weighted[row, i] < 0][:3]
        assert [i for i in index[row, :3] if i >= 0] == up
        assert [i for i in index[row, 3:] if i >= 0] == down
        assert value[row, : len(up)] == pytest.approx(weighted[row, up], rel=1e-5)
        assert value[row, 3 : 3 + len(down)] == pytest.approx(weighted[row, down], rel=1e-5)
    assert (index == -1).any()  # rows with fewer than three of a side leave -1


def test_a_calibrated_classifiers_weights_are_the_mean_over_its_folds():
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 4))
    y = (x[:, 0] > 0).astype(int)
    model = CalibratedClassifierCV(LogisticRegression(), cv=3).fit(x, y)
    expected = np.mean([f.estimator.coef_.ravel() for f in model.calibrated_classifiers_], axis=0)
    assert s.coefficients(model) == pytest.approx(expected)
    assert s.coefficients(model)[0] > 0 and np.argmax(np.abs(s.coefficients(model))) == 0


@pytest.mark.parametrize("beta", [1.0, 2.0])
def test_the_threshold_scan_equals_sklearns_fbeta_at_every_threshold(beta):
    from sklearn.metrics import fbeta_score

    rng = np.random.default_rng(3)
    y = (rng.random(2000) < 0.1).astype(int)
    scores = np.round(np.clip(rng.normal(0.2 + 0.4 * y, 0.2), 0, 1), 3)  # many ties
    thresholds = np.unique(np.round(scores, 4))
    expected = [fbeta_score(y, scores >= t, beta=beta, zero_division=0) for t in thresholds]
    got = s.threshold_fbeta(y, scores, thresholds, beta=beta)
    assert np.array_equal(got, np.array(expected))
    assert int(np.argmax(got)) == int(np.argmax(expected))
    # nothing predicted sensitive, or no positives: 0 as sklearn's zero_division=0
    assert s.threshold_fbeta([0, 0, 1], [0.1, 0.2, 0.3], [0.9], beta=beta)[0] == 0.0
    assert s.threshold_fbeta([0, 0], [0.1, 0.2], [0.1], beta=beta)[0] == 0.0
