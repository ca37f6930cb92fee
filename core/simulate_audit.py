"""Release audits replayed on frames whose labels are known, pure: no Django.

Each audit is what the page does (docs/domain.md §12, docs/release-audit.md): the calculator's
n for the frame (``core.release_audit.sample_size``), a seeded simple random sample of that
many positions (``release_audit.sample_positions``, the draw ``draw_sample`` makes), k = the
sensitive documents among them (the archivists' judgments, taken from the labels), and the
certificate (``release_audit.certificate``). An audit *covers* when its upper bound U is at
least the true number K of sensitive documents in the frame; coverage is the share of audits
that cover, counted audit by audit.

``visible_frame`` builds a realistic frame from a classifier's P(sensitive) and the routing
band (``core.routing``): what searchers could see, with the trivial baseline beside it.
"""

from dataclasses import asdict, dataclass

import numpy as np

from core import release_audit


@dataclass(frozen=True)
class Visible:
    """What searchers can see under a band, from a classifier's scores and the true labels."""

    labels: np.ndarray  # bool, the true label of each visible document (the audit's frame)
    shown: int  # P(sensitive) below the band, not a training label
    released: int  # inside the band, released by an oracle archivist (not sensitive)
    known: int  # training labels: not sensitive ones are visible
    reviewed: int  # inside the band: the archivists' effort
    withheld: int  # at or above the band, or reviewed and sensitive, or a sensitive training label
    baseline_exposed: int  # sensitive shown by the baseline: P < 0.5 published, no review
    baseline_visible: int  # documents the baseline shows


def visible_frame(
    p: np.ndarray,
    truth: np.ndarray,
    trained: np.ndarray,
    *,
    band_low: float,
    band_high: float,
    baseline: float = 0.5,
) -> Visible:
    """Return the frame a release would audit and the baseline beside it.

    ``p``: P(sensitive) of every document; ``truth``: its label (bool); ``trained``: True for
    the documents whose labels trained the classifier (their labels are known: the sensitive
    ones are withheld, the others visible). Every other document goes by the band, as
    ``core.routing.split`` sends it: below ``band_low`` shown, at or above ``band_high``
    withheld, between to an archivist, who (an oracle) releases it when not sensitive. The
    baseline publishes every document not known sensitive with P below ``baseline``, no
    review, no audit."""
    p, truth, trained = np.asarray(p), np.asarray(truth, bool), np.asarray(trained, bool)
    free = ~trained
    shown = free & (p < band_low)
    review = free & (p >= band_low) & (p < band_high)
    released = review & ~truth
    known = trained & ~truth
    visible = shown | released | known
    base = (free & (p < baseline)) | known
    return Visible(
        labels=truth[visible],
        shown=int(shown.sum()),
        released=int(released.sum()),
        known=int(known.sum()),
        reviewed=int(review.sum()),
        withheld=int((~visible).sum()),
        baseline_exposed=int((base & truth).sum()),
        baseline_visible=int(base.sum()),
    )


def fixed_frame(size: int, sensitive: int, seed: int = 0) -> np.ndarray:
    """Return the labels of a frame of ``size`` documents of which exactly ``sensitive`` are
    sensitive, in a random order."""
    labels = np.zeros(size, dtype=bool)
    labels[:sensitive] = True
    np.random.default_rng(seed).shuffle(labels)
    return labels


@dataclass(frozen=True)
class Coverage:
    """Many audits of one setting: how often the bound held, and what it cost."""

    audits: int
    frames: int  # distinct frames the audits were spread over (round robin)
    confidence: float
    margin: float
    prevalence: float  # the calculator's planning prevalence
    frame_mean: float  # N
    true_mean: float  # K
    true_rate_mean: float  # K / N
    n_mean: float
    found_mean: float  # k
    covered: int  # audits with U >= K
    coverage: float  # covered / audits
    coverage_low: float  # one-sided 95% Clopper-Pearson lower bound on the coverage
    cp_coverage: float  # audits with floor(N x Clopper-Pearson) >= K, as a share
    upper_mean: float  # U
    upper_rate_mean: float  # U / N
    cp_upper_mean: float
    remaining_mean: float  # K - k: sensitive still visible once the found are withheld
    remaining_upper_mean: float  # U - k

    def as_dict(self) -> dict:
        return asdict(self)


def simulate(
    frames: list[np.ndarray],
    *,
    confidence: float,
    margin: float,
    prevalence: float = 0.0,
    audits: int = 1000,
    seed: int = 0,
) -> Coverage:
    """Run ``audits`` independent audits, audit i on ``frames[i % len(frames)]`` (bool labels,
    one per visible document), each with its own seed (``seed`` x 10^6 + i), n from the
    calculator at ``margin``, ``confidence`` and ``prevalence``. Returns per-audit coverage
    and the means."""
    from scipy.stats import beta

    if audits <= 0 or not frames:
        raise ValueError("at least one audit of at least one frame")
    sizes: dict[int, int] = {}
    certificates: dict[tuple[int, int, int], release_audit.Certificate] = {}
    rows = []
    for i in range(audits):
        labels = frames[i % len(frames)]
        big_n, big_k = len(labels), int(labels.sum())
        if big_n not in sizes:
            sizes[big_n] = release_audit.sample_size(
                big_n, margin, confidence, prevalence=prevalence
            ).n
        n = sizes[big_n]
        positions = release_audit.sample_positions(big_n, n, seed * 1_000_000 + i)
        k = int(labels[positions].sum())
        key = (big_n, n, k)
        if key not in certificates:
            certificates[key] = release_audit.certificate(big_n, n, k, confidence)
        c = certificates[key]
        rows.append((big_n, big_k, n, k, c.upper_number, c.cp_upper_number))
    a = np.asarray(rows, dtype=float)
    big_n, big_k, n, k, upper, cp_upper = a.T
    covered = int((upper >= big_k).sum())
    low = 0.0 if covered == 0 else float(beta.ppf(0.05, covered, audits - covered + 1))
    return Coverage(
        audits=audits,
        frames=len(frames),
        confidence=confidence,
        margin=margin,
        prevalence=prevalence,
        frame_mean=float(big_n.mean()),
        true_mean=float(big_k.mean()),
        true_rate_mean=float((big_k / big_n).mean()),
        n_mean=float(n.mean()),
        found_mean=float(k.mean()),
        covered=covered,
        coverage=covered / audits,
        coverage_low=low,
        cp_coverage=float((cp_upper >= big_k).mean()),
        upper_mean=float(upper.mean()),
        upper_rate_mean=float((upper / big_n).mean()),
        cp_upper_mean=float(cp_upper.mean()),
        remaining_mean=float((big_k - k).mean()),
        remaining_upper_mean=float((upper - k).mean()),
    )


def exact_coverage(frame: int, sensitive: int, n: int, confidence: float) -> float:
    """Return the coverage of the bound computed, not simulated: the sum of P(k | K) over the
    k whose bound U(k) is at least K (the bound's U(k) rises with k, so these are the k at or
    above the first that covers)."""
    from scipy.stats import hypergeom

    for k in range(max(0, n - (frame - sensitive)), min(n, sensitive) + 1):
        if release_audit.certificate(frame, n, k, confidence).upper_number >= sensitive:
            return float(hypergeom.sf(k - 1, frame, sensitive, n))
    return 0.0
