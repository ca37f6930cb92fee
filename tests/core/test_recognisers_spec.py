"""The recognisers measured on a fixture written from the public format specifications by
someone who had not read them (issue 31): card numbers of every major issuer in their own
groupings (ISO/IEC 7812 ranges, Luhn), IBANs of 76 registry countries (print and compact),
phone numbers as the national numbering plans write them, email addresses per RFC 5322,
US and UK national identifiers, the correspondents' names; 121 lines of look-alikes (ISBNs,
parcel tracking, order and case numbers, dates, IP addresses, build numbers). The figures are
in docs/redaction.md; this fails when a change lowers them under the issue's targets."""

from pathlib import Path

import pytest

from core import names, recognisers

SPEC = Path(__file__).resolve().parents[1] / "fixtures" / "entities_spec.txt"
KINDS = ("card", "iban", "phone", "email", "national_id", "name")


def scores(lines: list[str]) -> dict[str, recognisers.KindScore]:
    """Exact-span precision and recall per kind (and ``all``) of the recognisers with the
    gazetteer of the file's ``# correspondents:`` line; kinds outside ``KINDS`` are not
    scored (the fixture marks only these)."""
    pairs = [
        p
        for line in lines
        if line.startswith("# correspondents:")
        for p in names.correspondents_header(line)
    ]
    gazetteer = names.Gazetteer.from_correspondents(pairs)
    gold_n = dict.fromkeys((*KINDS, "all"), 0)
    found_n, correct_n = dict(gold_n), dict(gold_n)
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        text, gold = recognisers.parse_labelled(line)
        want = {(e.kind, e.start, e.end) for e in gold}
        got = {(e.kind, e.start, e.end) for e in names.recognise(text, gazetteer)}
        got = {g for g in got if g[0] in KINDS}
        for kind, *_span in want:
            gold_n[kind] += 1
            gold_n["all"] += 1
        for g in got:
            found_n[g[0]] += 1
            found_n["all"] += 1
            if g in want:
                correct_n[g[0]] += 1
                correct_n["all"] += 1
    return {k: recognisers.KindScore(k, gold_n[k], found_n[k], correct_n[k]) for k in gold_n}


@pytest.fixture(scope="module")
def spec_scores():
    return scores(SPEC.read_text(encoding="utf-8").splitlines())


def test_the_fixture_is_what_the_issue_asks_for(spec_scores):
    lines = [x for x in SPEC.read_text(encoding="utf-8").splitlines() if x and x[0] != "#"]
    assert len(lines) >= 300
    assert all(spec_scores[k].gold >= 25 for k in KINDS)


def test_recall_and_precision_overall_meet_the_targets(spec_scores):
    overall = spec_scores["all"]
    assert overall.recall >= 0.95 and overall.precision >= 0.90, overall


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_keeps_its_precision_and_recall(spec_scores, kind):
    # the per-kind floors sit a little under what docs/redaction.md reports, so a real
    # regression fails and a one-line change does not
    score = spec_scores[kind]
    assert score.precision >= 0.90 and score.recall >= 0.90, score
