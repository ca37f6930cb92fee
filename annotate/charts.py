"""The lead's pictures, as PNG bytes: relevant documents per topic with the sensitive part
marked (like the study's figure 3.5), kappa per round (table 3.4 as a chart) and
sensitivity prevalence per persona. Same data, same bytes (no timestamp in the file).

matplotlib is imported when a chart is drawn, never at web start-up.
"""

import io
import os
from collections import defaultdict

from django.conf import settings

from annotate.labels import FinalLabels
from core.runs import topic_key

WIDTH = 7.5  # inches; 100 dpi


def _pyplot():
    os.environ.setdefault("MPLCONFIGDIR", str(settings.VAR_DIR / "matplotlib"))
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    _pyplot().close(fig)
    return buffer.getvalue()


def _empty(plt, title: str, message: str) -> bytes:
    fig, ax = plt.subplots(figsize=(WIDTH, 2))
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return _png(fig)


def relevant_per_topic(labels: FinalLabels) -> bytes:
    """Per topic: relevant documents (grade 1 or 2), split by persona sensitivity (any
    persona's final label says sensitive)."""
    plt = _pyplot()
    title = "Relevant documents per topic"
    sensitive = {(t, d) for (_p, t, d), (v, _r) in labels.sensitivity.items() if v == 1}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (topic, docid), (grade, _rule) in labels.relevance.items():
        counts[topic]  # every judged topic gets a bar, even with nothing relevant
        if grade >= 1:
            counts[topic][int((topic, docid) in sensitive)] += 1
    if not counts:
        return _empty(plt, title, "No judgments yet")
    topics = sorted(counts, key=topic_key)
    plain = [counts[t][0] for t in topics]
    marked = [counts[t][1] for t in topics]
    fig, ax = plt.subplots(figsize=(WIDTH, 3.2))
    x = range(len(topics))  # positions, labelled below: topic numbers are names, not values
    ax.bar(x, plain, color="#7aa6c2", label="relevant, not sensitive")
    ax.bar(x, marked, bottom=plain, color="#c2553f", label="relevant and sensitive")
    ax.set_xticks(list(x), topics, rotation=90 if len(topics) > 20 else 0)
    ax.set_xlabel("topic")
    ax.set_ylabel("documents")
    ax.set_title(title)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    fig.tight_layout()
    return _png(fig)


def kappa_per_round(rounds: list[dict]) -> bytes:
    """Relevance kappa of every annotator pair, round by round (``agreement_over_rounds``)."""
    plt = _pyplot()
    title = "Relevance agreement per round (Cohen's kappa)"
    series: dict[tuple, list] = defaultdict(list)
    for r in rounds:
        for names, result in r["pairs"]:
            if result.value is not None:
                series[names].append((r["round"].number, result.value))
    if not series:
        return _empty(plt, title, "No round has two annotators on the same tasks yet")
    fig, ax = plt.subplots(figsize=(WIDTH, 3.2))
    for names, points in sorted(series.items()):
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, marker="o", label=" / ".join(map(str, names)))
    ax.set_xticks(sorted({r["round"].number for r in rounds}))
    ax.set_xlabel("round")
    ax.set_ylabel("kappa")
    ax.set_ylim(-1, 1)
    ax.axhline(0, color="#999", linewidth=0.8)
    ax.set_title(title)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    fig.tight_layout()
    return _png(fig)


def sensitivity_prevalence(labels: FinalLabels) -> bytes:
    """Share of labelled (topic, document) units each persona would consider sensitive."""
    plt = _pyplot()
    title = "Sensitivity prevalence per persona"
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (persona, _t, _d), (value, _rule) in labels.sensitivity.items():
        if value is not None:
            totals[persona][0] += value
            totals[persona][1] += 1
    if not totals:
        return _empty(plt, title, "No sensitivity labels yet")
    personas = sorted(totals)
    shares = [totals[p][0] / totals[p][1] for p in personas]
    fig, ax = plt.subplots(figsize=(WIDTH, 0.6 + 0.5 * len(personas)))
    y = range(len(personas))
    bars = ax.barh(y, shares, color="#c2553f")
    ax.set_yticks(list(y), personas)
    for bar, p in zip(bars, personas, strict=True):
        ax.text(
            bar.get_width() + 0.01,
            bar.get_y() + bar.get_height() / 2,
            f"{totals[p][0]} of {totals[p][1]}",
            va="center",
        )
    ax.set_xlim(0, 1.15)
    ax.set_xlabel("share of labelled documents that are sensitive")
    ax.set_title(title)
    fig.tight_layout()
    return _png(fig)


def all_charts(labels: FinalLabels, rounds: list[dict]) -> dict[str, bytes]:
    """Draw the three export pictures as PNG bytes, by file name."""
    return {
        "relevant-per-topic.png": relevant_per_topic(labels),
        "kappa-per-round.png": kappa_per_round(rounds),
        "sensitivity-prevalence.png": sensitivity_prevalence(labels),
    }
