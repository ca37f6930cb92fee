"""The sensitivity classifier of one persona (docs/domain.md §6), pure: no Django.

Features of a message:
- TF-IDF of the subject, the body and the attachments' text (three vocabularies);
- when: hour of day (as a point on a circle), day of week, weekend;
- who: sender internal, share of internal recipients, any external recipient, number of
  recipients (internal = an address in one of the configured domains);
- shape: subject and body length, number of attachments, reply, priority / importance;
- where in the exchange graph (sender -> each recipient, over the whole collection): the
  sender's in-degree, out-degree, betweenness (approximate, from a sample of sources, on
  graphs over 1,000 people) and PageRank, and the min / max / mean of each over recipients;
- what it holds (issue 20): the number of sensitive entities of each kind the recognisers
  found in the subject and body (``core.recognisers``), log(1 + n).

Logistic regression, C and class weight chosen by grid search with 5-fold stratified
cross-validation on F1 (or F2, which favours recall), probabilities calibrated (sigmoid,
5-fold), the decision threshold tuned for the same measure on out-of-fold probabilities.
The same out-of-fold probabilities calibrate the classifier a second time, measured
(``core.calibration``: isotonic or Platt, the Brier score before and after, reliability
bins): ``Trained.probabilities`` gives the calibrated P(sensitive) that routing reads.
The report gives cross-validated precision, recall, F1, F2, accuracy and balanced accuracy
(at the threshold, on the classifier's own probabilities), the most influential features
and the calibration's measurements.
"""

import math
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from core import calibration
from core.recognisers import KINDS

METADATA = [
    "hour_sin",
    "hour_cos",
    *[f"weekday_{d}" for d in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")],
    "weekend",
    "no_date",
    "sender_internal",
    "recipients_internal_share",
    "any_external_recipient",
    "log_recipients",
    "log_subject_length",
    "log_body_length",
    "attachments",
    "reply",
    "priority",
]
CENTRALITIES = ("in_degree", "out_degree", "betweenness", "pagerank")
GRAPH = [f"sender_{c}" for c in CENTRALITIES] + [
    f"recipients_{agg}_{c}" for c in CENTRALITIES for agg in ("min", "max", "mean")
]


# Entity kinds counted as features: personal data, the same for every persona (a persona's
# own terms are left out: the features are fitted per collection, not per persona).
ENTITY = [k for k in KINDS if k != "persona"]


@dataclass
class Message:
    """What the classifier reads of a document."""

    docid: str
    subject: str = ""
    body: str = ""
    attachments: str = ""  # the attachments' extracted text, joined
    attachment_count: int = 0
    date: datetime | None = None
    sender: str = ""
    recipients: list[str] = field(default_factory=list)
    reply: bool = False
    priority: bool = False
    entities: dict[str, int] = field(default_factory=dict)  # kind -> count (core.recognisers)


def _internal(address: str, domains: tuple[str, ...]) -> bool:
    domain = address.rsplit("@", 1)[-1].lower() if "@" in address else ""
    return bool(domain) and any(domain == d or domain.endswith("." + d) for d in domains)


def metadata_features(messages: list[Message], internal_domains=()) -> np.ndarray:
    """Return the METADATA features of each message: when, who (internal or not), shape."""
    domains = tuple(d.lower().lstrip("@") for d in internal_domains)
    rows = []
    for m in messages:
        row = dict.fromkeys(METADATA, 0.0)
        if m.date is not None:
            hour = m.date.hour + m.date.minute / 60
            row["hour_sin"] = math.sin(2 * math.pi * hour / 24)
            row["hour_cos"] = math.cos(2 * math.pi * hour / 24)
            row[METADATA[2 + m.date.weekday()]] = 1.0
            row["weekend"] = float(m.date.weekday() >= 5)
        else:
            row["no_date"] = 1.0
        internal = [_internal(r, domains) for r in m.recipients]
        row["sender_internal"] = float(_internal(m.sender, domains))
        row["recipients_internal_share"] = sum(internal) / len(internal) if internal else 0.0
        row["any_external_recipient"] = float(not all(internal)) if internal else 0.0
        row["log_recipients"] = math.log1p(len(m.recipients))
        row["log_subject_length"] = math.log1p(len(m.subject))
        row["log_body_length"] = math.log1p(len(m.body))
        row["attachments"] = float(m.attachment_count)
        row["reply"] = float(m.reply)
        row["priority"] = float(m.priority)
        rows.append([row[name] for name in METADATA])
    return np.asarray(rows, dtype=float).reshape(len(messages), len(METADATA))


def entity_features(messages: list[Message]) -> np.ndarray:
    """Return log(1 + count) of each ENTITY kind in each message."""
    rows = [[math.log1p(m.entities.get(k, 0)) for k in ENTITY] for m in messages]
    return np.asarray(rows, dtype=float).reshape(len(messages), len(ENTITY))


def graph_features(messages: list[Message], *, exact_up_to: int = 1000, seed: int = 0):
    """Centralities of each message's sender and recipients in the exchange graph."""
    import networkx as nx

    g = nx.DiGraph()
    for m in messages:
        if not m.sender:
            continue
        for r in m.recipients:
            if r and r != m.sender:
                w = g.get_edge_data(m.sender, r, {"weight": 0})["weight"]
                g.add_edge(m.sender, r, weight=w + 1)
    n = g.number_of_nodes()
    if n == 0:
        return np.zeros((len(messages), len(GRAPH)))
    k = None if n <= exact_up_to else min(exact_up_to, n)
    values = {
        "in_degree": dict(g.in_degree()),
        "out_degree": dict(g.out_degree()),
        "betweenness": nx.betweenness_centrality(g, k=k, seed=seed, normalized=True),
        "pagerank": nx.pagerank(g, weight="weight") if g.number_of_edges() else {},
    }
    rows = []
    for m in messages:
        row = [float(values[c].get(m.sender, 0.0)) for c in CENTRALITIES]
        for c in CENTRALITIES:
            got = [float(values[c].get(r, 0.0)) for r in m.recipients] or [0.0]
            row += [min(got), max(got), sum(got) / len(got)]
        rows.append(row)
    return np.asarray(rows, dtype=float)


# What of a message the joint ranker reads beside relevance (dissertation Table 3.12, the
# subset of the classifier's features given to learning to rank for email): lengths, who is
# internal, reply, attachments, and the exchange-graph centralities. P(sensitive) follows.
RANKING = [
    "log_subject_words",
    "log_body_words",
    "log_attachments_words",
    "recipients_external",
    "recipients_internal",
    "sender_external",
    "sender_internal",
    "reply",
    "attachments",
    "has_attachments",
    *GRAPH,
]


def ranking_features(messages: list[Message], internal_domains=(), graph=None) -> np.ndarray:
    """The RANKING features of each message: (messages, len(RANKING)). A message with no
    recipients is neither internally nor externally addressed; with no sender, likewise.
    ``graph``: the messages' ``graph_features`` when already computed."""
    domains = tuple(d.lower().lstrip("@") for d in internal_domains)
    rows = []
    for m in messages:
        internal = [_internal(r, domains) for r in m.recipients]
        sender = _internal(m.sender, domains) if m.sender else None
        rows.append(
            [
                math.log1p(len(m.subject.split())),
                math.log1p(len(m.body.split())),
                math.log1p(len(m.attachments.split())),
                float(bool(internal) and not all(internal)),
                float(bool(internal) and all(internal)),
                float(sender is False),
                float(sender is True),
                float(m.reply),
                float(m.attachment_count),
                float(m.attachment_count > 0),
            ]
        )
    base = np.asarray(rows, dtype=float).reshape(len(messages), 10)
    return np.hstack([base, graph_features(messages) if graph is None else graph])


class Featurizer:
    """Fit on a collection's messages (unsupervised: vocabularies, scaling, the graph), then
    turn any of them into one sparse row each."""

    def __init__(self, internal_domains=(), *, min_df: int = 2, entities: bool = True):
        self.internal_domains = tuple(internal_domains)
        self.min_df = min_df
        self.entities = entities  # False: without the entity counts (for measuring them)

    def fit_transform(self, messages: list[Message], graph=None):
        """Fit on ``messages`` and return their feature rows (``graph``: their
        ``graph_features`` when already computed)."""
        import scipy.sparse as sp
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.preprocessing import StandardScaler

        small = len(messages) < 50
        self.text = {}
        blocks = []
        for name in ("subject", "body", "attachments"):
            vec = TfidfVectorizer(
                sublinear_tf=True,
                stop_words="english",
                min_df=1 if small else self.min_df,
                max_df=1.0 if small else 0.95,
                dtype=np.float32,
            )
            texts = [getattr(m, name) for m in messages]
            try:
                blocks.append(vec.fit_transform(texts))
                self.text[name] = vec
            except ValueError:  # no words at all in this field (no attachments, say)
                blocks.append(sp.csr_matrix((len(messages), 0), dtype=np.float32))
                self.text[name] = None
        dense = np.hstack(
            [
                metadata_features(messages, self.internal_domains),
                graph_features(messages) if graph is None else graph,
                *([entity_features(messages)] if getattr(self, "entities", True) else []),
            ]
        )
        self.scaler = StandardScaler().fit(dense)
        blocks.append(sp.csr_matrix(self.scaler.transform(dense).astype(np.float32)))
        self.names = (
            [
                f"{name}:{w}"
                for name in ("subject", "body", "attachments")
                if self.text[name] is not None
                for w in self.text[name].get_feature_names_out()
            ]
            + [f"meta:{n}" for n in METADATA]
            + [f"graph:{n}" for n in GRAPH]
            + ([f"entity:{k}" for k in ENTITY] if getattr(self, "entities", True) else [])
        )
        return sp.hstack(blocks, format="csr")


@dataclass
class Report:
    """Cross-validated quality of a persona's classifier and what drives it."""

    n: int
    positives: int
    objective: str
    threshold: float
    best_params: dict
    precision: float
    recall: float
    f1: float
    f2: float
    accuracy: float
    balanced_accuracy: float
    top_sensitive: list[tuple[str, float]]
    top_not_sensitive: list[tuple[str, float]]
    baseline_f1: float = 0.0  # F1 of calling every document sensitive
    # The lowest out-of-fold P(sensitive) of a document labelled sensitive, calibrated (the
    # scale routing's band reads): below it the classifier let no known sensitive document
    # through in cross-validation. ``p_sensitive_min_raw``: the same before calibration.
    p_sensitive_min: float = 0.0
    p_sensitive_min_raw: float = 0.0
    threshold_calibrated: float = 0.0  # ``threshold`` on the calibrated scale
    warning: str = ""
    # ``core.calibration.Assessment.as_dict``: method, labels, Brier before / after,
    # reliability bins, the trust sentence.
    calibration: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Trained:
    model: object  # scikit-learn's sigmoid-calibrated classifier: predict_proba
    threshold: float  # on the model's own probabilities (``report.threshold``)
    report: Report
    # Maps the model's probabilities to calibrated ones (None: the identity).
    calibrator: calibration.Calibrator | None = None
    oof: np.ndarray | None = None  # the labelled rows' out-of-fold probabilities (model's)

    def raw_probabilities(self, matrix) -> np.ndarray:
        """P(sensitive) of each row as the model gives it."""
        return self.model.predict_proba(matrix)[:, 1]

    def probabilities(self, matrix) -> np.ndarray:
        """Calibrated P(sensitive) of each row: what routing reads."""
        raw = self.raw_probabilities(matrix)
        return raw if self.calibrator is None else self.calibrator.apply(raw)


GRID = {"C": [0.1, 1.0, 10.0, 100.0], "class_weight": [None, "balanced"]}


def threshold_fbeta(y, scores, thresholds, *, beta: float) -> np.ndarray:
    """F-beta of calling ``scores >= t`` sensitive, for every t of ``thresholds`` at once:
    sklearn's ``fbeta_score(y, scores >= t, beta=beta, zero_division=0)``, same formula
    ((1 + beta^2) tp / (beta^2 positives + predicted)), from two sorted arrays instead of one
    pass over the labels per threshold (a fifth of training at 10,000 labels)."""
    y = np.asarray(y, dtype=int)
    scores = np.asarray(scores, dtype=np.float64)
    thresholds = np.asarray(thresholds, dtype=np.float64)
    ordered = np.sort(scores)
    ordered_positive = np.sort(scores[y == 1])
    predicted = len(ordered) - np.searchsorted(ordered, thresholds, side="left")
    tp = len(ordered_positive) - np.searchsorted(ordered_positive, thresholds, side="left")
    beta2 = beta**2
    denom = beta2 * float(len(ordered_positive)) + predicted.astype(np.float64)
    return np.where(denom > 0, (1 + beta2) * tp.astype(np.float64) / np.maximum(denom, 1), 0.0)


def train(matrix, labels, names: list[str], *, objective: str = "f1", seed: int = 0) -> Trained:
    """Grid-search, calibrate and tune the threshold of a persona's classifier."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import (
        accuracy_score,
        balanced_accuracy_score,
        f1_score,
        fbeta_score,
        make_scorer,
        precision_score,
        recall_score,
    )
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_predict

    if objective not in ("f1", "f2"):
        raise ValueError("objective must be f1 or f2")
    y = np.asarray(labels, dtype=int)
    positives = int(y.sum())
    folds = min(5, positives, len(y) - positives)
    if folds < 3:
        raise ValueError(
            f"{positives} sensitive and {len(y) - positives} not sensitive examples: "
            "cross-validation needs at least 3 of each"
        )
    beta = 1.0 if objective == "f1" else 2.0
    scorer = make_scorer(fbeta_score, beta=beta, zero_division=0)
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    base = LogisticRegression(solver="liblinear", max_iter=1000, random_state=seed)
    search = GridSearchCV(base, GRID, scoring=scorer, cv=cv, n_jobs=1).fit(matrix, y)
    best = search.best_estimator_
    # Calibrated inside each outer fold with one fold fewer, so every inner split still
    # holds both classes when there are few positives.
    inner = StratifiedKFold(min(folds - 1, 5), shuffle=True, random_state=seed)
    calibrated = CalibratedClassifierCV(best, method="sigmoid", cv=inner)
    oof = cross_val_predict(calibrated, matrix, y, cv=cv, method="predict_proba")[:, 1]
    calibrated = CalibratedClassifierCV(best, method="sigmoid", cv=cv)
    thresholds = np.unique(np.round(oof, 4))
    scores = threshold_fbeta(y, oof, thresholds, beta=beta)
    threshold = float(thresholds[int(np.argmax(scores))]) if len(thresholds) else 0.5
    predicted = (oof >= threshold).astype(int)
    calibrated.fit(matrix, y)
    coef = best.coef_.ravel()
    order = np.argsort(coef)
    report = Report(
        n=len(y),
        positives=positives,
        objective=objective,
        threshold=threshold,
        best_params={k: v for k, v in search.best_params_.items()},
        precision=float(precision_score(y, predicted, zero_division=0)),
        recall=float(recall_score(y, predicted, zero_division=0)),
        f1=float(f1_score(y, predicted, zero_division=0)),
        f2=float(fbeta_score(y, predicted, beta=2.0, zero_division=0)),
        accuracy=float(accuracy_score(y, predicted)),
        balanced_accuracy=float(balanced_accuracy_score(y, predicted)),
        top_sensitive=[(names[i], round(float(coef[i]), 4)) for i in order[::-1][:15]],
        top_not_sensitive=[(names[i], round(float(coef[i]), 4)) for i in order[:15]],
    )
    report.baseline_f1 = 2 * positives / (len(y) + positives)
    # The second calibration, on the same out-of-fold probabilities (no second CV of the
    # model): the stored and routed P(sensitive) are the model's through this calibrator.
    assessment = calibration.assess(oof, y, seed=seed)
    calibrator = assessment.calibrator
    report.calibration = assessment.as_dict()
    report.p_sensitive_min_raw = float(oof[y == 1].min())
    report.p_sensitive_min = float(calibrator.apply(report.p_sensitive_min_raw))
    report.threshold_calibrated = float(calibrator.apply(threshold))
    if report.balanced_accuracy < 0.6 or report.f1 <= report.baseline_f1 + 0.01:
        report.warning = (
            f"no better than chance (balanced accuracy {report.balanced_accuracy:.2f}; F1 "
            f"{report.f1:.2f} against {report.baseline_f1:.2f} for calling everything "
            "sensitive): more, or more consistent, labels are needed before relying on it"
        )
    return Trained(calibrated, threshold, report, calibrator, oof)


def coefficients(model) -> np.ndarray:
    """The linear weights behind a calibrated classifier (the mean over its folds' models):
    sigmoid calibration is monotone, so these say what pushes a document's P up or down."""
    folds = getattr(model, "calibrated_classifiers_", None)
    if folds:
        return np.mean([f.estimator.coef_.ravel() for f in folds], axis=0)
    return np.asarray(model.coef_).ravel()


def contributions(model, matrix, *, top: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Per document, the ``top`` features pushing it most towards sensitive and the ``top``
    most towards not sensitive (weight x value): feature indices (-1: none) and values, one
    row per document, vectorised over the whole sparse matrix."""
    import scipy.sparse as sp

    weighted = sp.csr_matrix(matrix.multiply(coefficients(model)[None, :]))
    weighted.eliminate_zeros()
    n = weighted.shape[0]
    index = np.full((n, 2 * top), -1, dtype=np.int32)
    value = np.zeros((n, 2 * top), dtype=np.float32)
    rows = np.repeat(np.arange(n), np.diff(weighted.indptr))
    for side, sign in ((0, 1.0), (1, -1.0)):
        keep = sign * weighted.data > 0
        r, c, v = rows[keep], weighted.indices[keep], weighted.data[keep]
        order = np.lexsort((-sign * v, r))  # by row, strongest first
        r, c, v = r[order], c[order], v[order]
        starts = np.searchsorted(r, np.arange(n))
        rank = np.arange(len(r)) - starts[r]
        take = rank < top
        index[r[take], side * top + rank[take]] = c[take]
        value[r[take], side * top + rank[take]] = v[take]
    return index, value
