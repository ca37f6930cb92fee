"""Where each ranked document goes for a searcher (docs/domain.md §9), pure: no Django.

shown now      released by an archivist, or P(sensitive) below the band
review         inside the band (or unscored), among the first k ranks; with ``most_uncertain``
               only the n of those nearest P = 0.5 (unscored counts as 0.5), the others
               held back (neither shown nor asked about: asked when a later search makes them
               among its n most uncertain)
dropped        withheld, or P(sensitive) at or above the band
"""

from dataclasses import dataclass

RELEASED, WITHHELD = "released", "withheld"


@dataclass
class Split:
    shown: list[int]  # positions in the ranking, best first
    review: list[int]


def split(
    ranking,
    p: dict,
    decided: dict,
    *,
    band_low: float,
    band_high: float,
    k: int,
    most_uncertain: int | None = None,
) -> Split:
    """``ranking``: document keys best first; ``p``: key -> P(sensitive) (missing: unscored);
    ``decided``: key -> RELEASED or WITHHELD for decisions in force; ``most_uncertain``:
    ask about at most this many per search (the n most uncertain among the top k)."""
    shown, review = [], []
    for rank, key in enumerate(ranking):
        decision = decided.get(key)
        if decision == WITHHELD:
            continue
        if decision == RELEASED:
            verdict = "show"
        elif key not in p:
            verdict = "review"
        elif p[key] < band_low:
            verdict = "show"
        elif p[key] >= band_high:
            verdict = "drop"
        else:
            verdict = "review"
        if verdict == "show" and len(shown) < k:
            shown.append(rank)
        elif verdict == "review" and rank < k:
            review.append(rank)
    if most_uncertain is not None and len(review) > most_uncertain:
        nearest = sorted(review, key=lambda r: (abs(p.get(ranking[r], 0.5) - 0.5), r))
        review = sorted(nearest[:most_uncertain])
    return Split(shown, review)
