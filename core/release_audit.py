"""The release audit: an elusion test for sensitivity (docs/domain.md §12), pure: no Django.

Before what searchers can see (the *frame*, N documents) is certified, sasc draws a simple
random sample of n of them with a recorded seed (``draw_sample``), archivists judge each, and
from k found sensitive ``certificate`` gives the estimate and exact one-sided upper bounds on
the number K and the rate K / N of sensitive documents in the frame: hypergeometric over the
frame (``core.stopping.hypergeometric_upper``), Clopper-Pearson beside it. ``sample_size`` is
the lead's calculator: n from a margin on the rate and a confidence. docs/release-audit.md
gives the formulas, what the certificate does and does not say, and the simulations behind it.

A page calls, in order: ``sample_size(frame, margin, confidence, prevalence=...)`` to show
the calculator, ``draw_sample(frame_ids, n, seed=None)`` to draw (store ``Sample.seed``),
``certificate(frame, sample, found, confidence)`` once the archivists have judged.
"""

import math
import random
import secrets
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from core import stopping

# --- The certificate --------------------------------------------------------------------------


class Certificate(NamedTuple):
    """What an audit of ``sample`` documents drawn from a frame of ``frame`` certifies."""

    frame: int  # N: documents searchers could see when the sample was drawn
    sample: int  # n: sampled documents judged
    found: int  # k: judged sensitive
    confidence: float  # one-sided
    rate: float  # k / n, the estimate of the rate K / N
    number: float  # k N / n, the estimate of K
    upper_number: int  # U: exact (hypergeometric) one-sided upper bound on K
    upper_rate: float  # U / N
    cp_upper_rate: float  # one-sided Clopper-Pearson upper bound on the rate (binomial)
    cp_upper_number: int  # floor(N x cp_upper_rate): the bound it implies on K
    remaining_upper: int  # U - k: bound on the sensitive still visible once the k are withheld

    def sentence(self) -> str:
        """Return the certificate in words, as the page shows it."""
        pct = f"{self.confidence * 100:g}%"
        return (
            f"Of {self.sample:,} documents drawn at random from the {self.frame:,} searchers "
            f"could see, archivists judged {self.found:,} sensitive (estimate {self.rate:.2%}, "
            f"about {self.number:,.0f} documents). With {pct} confidence, at most "
            f"{self.upper_number:,} ({self.upper_rate:.2%}) of the {self.frame:,} were "
            f"sensitive when the sample was drawn (Clopper-Pearson: {self.cp_upper_rate:.2%}, "
            f"{self.cp_upper_number:,}); once the {self.found:,} found are withheld, at most "
            f"{self.remaining_upper:,} remain visible."
        )


def certificate(frame: int, sample: int, found: int, confidence: float = 0.95) -> Certificate:
    """Return the certificate of an audit: ``found`` (k) sensitive among ``sample`` (n)
    documents drawn without replacement from ``frame`` (N) visible ones (docs/domain.md §12).

    U is the largest K with P(X <= k | K) > 1 - confidence, X ~ Hypergeometric(N, K, n)
    (``core.stopping.hypergeometric_upper``): P(U < K) <= 1 - confidence whatever the true K.
    The Clopper-Pearson bound is the ``confidence`` quantile of Beta(k + 1, n - k), the
    binomial answer to the same question (wider: it ignores that the frame is finite).
    A census (n = N) gives U = k. Refuses n = 0 (nothing judged certifies nothing) and a
    confidence outside (0, 1)."""
    _check_frame(frame)
    _check_confidence(confidence)
    if sample <= 0:
        raise ValueError(
            "no document judged: an audit needs a sample of at least one document "
            "(n = 0 says nothing about the frame)"
        )
    if sample > frame:
        raise ValueError(f"a sample of {sample:,} from a frame of {frame:,} documents")
    if not 0 <= found <= sample:
        raise ValueError(f"{found:,} found sensitive in a sample of {sample:,}")
    upper = stopping.hypergeometric_upper(found, sample, frame, confidence)
    cp = stopping.clopper_pearson_upper(found, sample, confidence)
    return Certificate(
        frame=frame,
        sample=sample,
        found=found,
        confidence=confidence,
        rate=found / sample,
        number=found * frame / sample,
        upper_number=upper,
        upper_rate=upper / frame,
        cp_upper_rate=cp,
        cp_upper_number=min(frame, math.floor(frame * cp + 1e-9)),
        remaining_upper=upper - found,
    )


# --- The calculator ---------------------------------------------------------------------------


class SampleSize(NamedTuple):
    """The calculator's answer, with what each rule promises at its n."""

    frame: int  # N
    margin: float  # on the rate, absolute (0.01 = one percentage point)
    confidence: float  # one-sided
    prevalence: float  # the planning prevalence p (0: only the zero-failure rule)
    n: int  # what to draw: the larger of the two rules
    zero_failure: int  # smallest n where k = 0 gives upper rate <= margin
    zero_failure_bound: float  # the upper rate bound if 0 are found in ``zero_failure``
    planned: int  # n where, with k = ceil(p n) found, upper rate <= p + margin
    planned_found: int  # ceil(p x planned)
    planned_bound: float  # the upper rate bound then
    binomial: int  # the zero-failure n of an infinite frame: ceil(ln(1 - c) / ln(1 - margin))

    def rows(self) -> list[tuple[str, int, str]]:
        """Return (rule, n, what it promises), the calculator's table on a page."""
        c = f"{self.confidence:g}"
        rows = [
            (
                "zero-failure",
                self.zero_failure,
                f"if none of {self.zero_failure:,} is sensitive, at most "
                f"{self.zero_failure_bound:.2%} of the frame is (confidence {c})",
            )
        ]
        if self.prevalence > 0:
            rows.append(
                (
                    f"planning prevalence {self.prevalence:g}",
                    self.planned,
                    f"if {self.planned_found:,} of {self.planned:,} are sensitive "
                    f"({self.planned_found / self.planned:.2%}), at most "
                    f"{self.planned_bound:.2%} are (confidence {c})",
                )
            )
        return rows


def sample_size(
    frame: int, margin: float, confidence: float = 0.95, *, prevalence: float = 0.0
) -> SampleSize:
    """Return the sample size for an audit of ``frame`` (N) documents: the one-sided upper
    bound on the rate within ``margin`` of the estimate at ``confidence`` (docs/domain.md
    §12). Two rules, both shown:

    - zero-failure (the classic elusion sample): the smallest n with U(0, n) / N <= margin,
      i.e. P(X = 0 | K = floor(margin N) + 1) <= 1 - confidence; P(X = 0 | K) falls with n,
      so the bisection finds the smallest such n exactly;
    - planning prevalence p (0 <= p <= 0.5): an n with U(k, n) / N <= p + margin for
      k = ceil(p n), the count a sample of a frame at prevalence p gives (rounded up, so
      the sample's estimate k / n is at least p): the bound stays within the margin of the
      planned rate. The bound falls with n apart from the rounding of p n, so n is found by
      the same bisection and is the smallest such n up to that rounding
      (tests/core/test_release_audit.py compares it with a scan); at the returned n the
      promise holds. At p = 0 it is the zero-failure rule.

    ``n`` is the larger of the two (at p = 0 they coincide), capped at N (a census)."""
    _check_frame(frame)
    _check_confidence(confidence)
    if not 0 < margin < 1:
        raise ValueError("the margin must be between 0 and 1 (e.g. 0.02 for two points)")
    if not 0 <= prevalence <= 0.5:
        raise ValueError("the planning prevalence must be between 0 and 0.5 (0: zero-failure)")
    from scipy.stats import hypergeom

    alpha = 1 - confidence
    binomial = math.ceil(math.log(alpha) / math.log1p(-margin) - 1e-12)
    allowed = math.floor(margin * frame + 1e-9)  # U may be at most this

    def zero_ok(n: int) -> bool:  # U(0, n) <= allowed
        if allowed + 1 > frame - n:  # the sample leaves no room for more
            return True
        return float(hypergeom.pmf(0, frame, allowed + 1, n)) <= alpha

    zero = stopping._first_true(zero_ok, 1, frame, min(binomial, frame))
    assert zero is not None  # a census always passes

    def distance(n: int) -> tuple[int, float]:
        k = math.ceil(prevalence * n - 1e-12)
        return k, stopping.hypergeometric_upper(k, n, frame, confidence) / frame - prevalence

    if prevalence == 0:
        planned = zero
    else:
        from scipy.stats import norm

        z = float(norm.ppf(confidence))
        guess = math.ceil(z * z * prevalence * (1 - prevalence) / margin**2)
        planned = stopping._first_true(
            lambda n: distance(n)[1] <= margin + 1e-12, 1, frame, min(guess, frame)
        )
        assert planned is not None
    planned_k, planned_distance = distance(planned)
    return SampleSize(
        frame=frame,
        margin=margin,
        confidence=confidence,
        prevalence=prevalence,
        n=max(zero, planned),
        zero_failure=zero,
        zero_failure_bound=stopping.hypergeometric_upper(0, zero, frame, confidence) / frame,
        planned=planned,
        planned_found=planned_k,
        planned_bound=planned_distance + prevalence,
        binomial=binomial,
    )


# --- The sample -------------------------------------------------------------------------------


class Sample(NamedTuple):
    """A drawn sample: the seed and the frame's size say how to draw it again."""

    seed: int
    frame: int  # N
    ids: tuple  # the sampled ids in draw order (any prefix is a simple random sample too)


def new_seed() -> int:
    """Return a fresh seed (63 random bits from the operating system) to record."""
    return secrets.randbits(63)


def sample_positions(frame: int, n: int, seed: int) -> list[int]:
    """Return ``n`` distinct positions of 0..``frame`` - 1, a simple random sample in draw
    order: the first n steps of a Fisher-Yates shuffle (the swaps kept in a dict, so the cost
    is n, not N), each step j = i + floor(u (N - i)) with u from Python's Mersenne Twister
    ``random()`` seeded with ``seed``, the one stream Python promises to keep from version
    to version (u has 53 bits, so no position is favoured by more than N / 2^53)."""
    if frame < 0 or not 0 <= n <= frame:
        raise ValueError(f"a sample of {n:,} from a frame of {frame:,} documents")
    rng = random.Random(seed)
    swapped: dict[int, int] = {}
    out = []
    for i in range(n):
        j = i + int(rng.random() * (frame - i))
        out.append(swapped.get(j, j))
        swapped[j] = swapped.get(i, i)
    return out


def draw_sample(frame_ids: Iterable, n: int, seed: int | None = None) -> Sample:
    """Draw a simple random sample of ``n`` ids from ``frame_ids`` (docs/domain.md §12).

    The ids are sorted first, so the sample depends on the frame as a set, ``n`` and the
    seed only: the same seed and frame give the same sample, in the same order. ``seed``
    None draws a fresh one (``new_seed``), recorded in the answer. Duplicate ids are
    refused: a document in the frame twice would be twice as likely to be drawn."""
    ordered: Sequence = sorted(frame_ids)
    if any(a == b for a, b in zip(ordered, ordered[1:], strict=False)):
        raise ValueError("the frame holds an id twice")
    if not 0 <= n <= len(ordered):
        raise ValueError(f"a sample of {n:,} from a frame of {len(ordered):,} documents")
    seed = new_seed() if seed is None else int(seed)
    positions = sample_positions(len(ordered), n, seed)
    return Sample(seed=seed, frame=len(ordered), ids=tuple(ordered[p] for p in positions))


def _check_frame(frame: int) -> None:
    if frame <= 0:
        raise ValueError("the frame is empty: nothing is visible, there is nothing to audit")


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError("the confidence must be between 0 and 1 (e.g. 0.95), exclusive")
