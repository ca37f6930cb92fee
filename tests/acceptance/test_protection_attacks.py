"""T8, the searcher as attacker (issue 14): a searcher account with only HTTP access to
gunicorn tries to learn what is withheld, on a collection protected by a real classifier.

- displacement: ``common + canary`` against ``common + nonsense``: a hidden document that the
  canary lifts into the candidates must not push a visible one out;
- statistics: the visible ranking of a query whose terms hidden documents hold, against the
  same documents published without the hidden ones: identical;
- timing: hundreds of paired searches, a word only hidden documents hold against a word no
  document holds; Mann-Whitney U on the response times, and the run's own power (the
  delay it would detect) at most TIMING_BOUND_MS;
- stale pages: a document shown once is gone from its page and from the results page once
  the routing (here the band) would no longer show it;
- GET-triggered searches: a link with ``?q=`` records nothing and asks the archivist nothing.

Each attack was run against the build before issue 14 and succeeded there (figures in
``docs/protection.md``)."""

import random
import re
import time

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from annotate.models import Collection, Document, Persona, ReferenceSensitivity
from ranking.classifier import sensitivity_model_train
from ranking.services import index_build
from review import visibility
from review.models import Publication, ReviewRequest, SearchLog
from tests.acceptance.stack import Browser, report
from tests.reviewkit import FILLER, store_scores

BADGE = "confidentialbadge"  # what the classifier learns sensitive documents by
TIMING_PAIRS = 300
TIMING_ALPHA = 0.001
# The largest added delay the timing test must still detect (in 80% of runs at TIMING_ALPHA)
# on the response times of the run itself, or it fails as too noisy to tell: see
# test_timing_does_not_depend_on_hidden_matches.
TIMING_BOUND_MS = 8.0
TIMING_POWER = 0.8


def _doc(collection, docid, body, subject="Note"):
    return Document(
        collection=collection,
        docid=docid,
        subject=subject,
        from_header="someone@example.org",
        body=body,
        content_hash=docid,
    )


def _world_documents(rng, hidden: bool):
    """(docid, body, sensitive) of the attack collection; ``hidden=False`` leaves out every
    document the classifier should hide (the same collection as the public would see it)."""
    out = []
    for i in range(95):  # hidden, short, dense in "common": they fill the first 95 candidates
        out.append((f"pad{i:03d}", f"common common common {BADGE} {BADGE} pad{i}", True))
    for i in range(10):  # visible, one "common" in a longer text: candidates 96 to 105
        words = rng.choices(FILLER, k=40)
        out.append((f"vis{i:03d}", " ".join(["common", *words]), False))
    # the canary: hidden, one "common" in a text longer than theirs, so without the canary word
    # it ranks below every visible "common" document, and with it first
    out.append(("canary", " ".join(["qzcanary", "common", *[BADGE] * 20, *FILLER * 3]), True))
    # statistics: two visible documents, one with alphaterm, one with betaterm; hidden
    # documents hold alphaterm, which lowers its idf if they are counted
    out.append(("alpha", " ".join(["alphaterm", "alphaterm", *FILLER]), False))
    out.append(("beta", " ".join(["betaterm", "betaterm", *FILLER[:7]]), False))
    for i in range(60):
        # long, so that length tells the classifier nothing: only the badge does
        words = rng.choices(FILLER, k=40)
        out.append((f"alphahidden{i:03d}", " ".join(["alphaterm", BADGE, BADGE, *words]), True))
    for i in range(300):  # plain visible mail
        out.append((f"plain{i:03d}", " ".join(rng.choices(FILLER, k=30)), False))
    return [d for d in out if hidden or not d[2]]


def _publish(slug, docs):
    collection = Collection.objects.create(name=f"Attack {slug}", slug=slug, kind="emails")
    Document.objects.bulk_create([_doc(collection, d, body) for d, body, _s in docs])
    index_build(collection_id=collection.pk)
    collection.refresh_from_db()
    persona = Persona.objects.create(name=f"Donor {slug}")
    by_docid = {d.docid: d for d in collection.documents.all()}
    ReferenceSensitivity.objects.bulk_create(
        [
            ReferenceSensitivity(persona=persona, document=by_docid[d], sensitive=s, source="t")
            for d, _b, s in docs
        ]
    )
    publication = Publication.objects.create(
        collection=collection,
        persona=persona,
        published=True,
        band_low=0.3,
        band_high=0.7,
        review_k=20,
    )
    return collection, persona, publication


@pytest.fixture
def attack(worker_env, web, users):
    rng = random.Random(14)
    docs = _world_documents(rng, hidden=True)
    full, persona, publication = _publish("attack-full", docs)
    sensitivity_model_train(collection=full, persona=persona, source="reference")
    visible = visibility.view(publication).docids
    # The preconditions: the real classifier hides the canary and the documents dense in the
    # common word, shows the ten that hold it once, and hides most documents with alphaterm.
    hidden = {d for d, _b, _s in docs} - visible
    assert "canary" in hidden and {f"pad{i:03d}" for i in range(95)} <= hidden, hidden
    assert {f"vis{i:03d}" for i in range(10)} <= visible
    assert sum(d.startswith("alphahidden") for d in hidden) >= 50
    # The same collection as the public may see it: exactly the visible documents, published
    # with the full collection's classifier scores.
    alone, persona2, publication2 = _publish("attack-public", [d for d in docs if d[0] in visible])
    _copy_scores(full, persona, alone, persona2)
    assert visibility.view(publication2).docids == visible
    searcher = Browser(web, users["searcher"])
    return full, alone, publication, searcher


def _copy_scores(src, src_persona, dst, dst_persona):
    import joblib

    from ranking.models import SensitivityModel

    model = SensitivityModel.objects.get(collection=src, persona=src_persona)
    stored = joblib.load(model.path)
    keep = {d.docid for d in dst.documents.all()}
    rows = [i for i, d in enumerate(stored["docids"]) if d in keep]
    path = model.path.replace(".joblib", f"-copy-{dst.pk}.joblib")
    docids = [stored["docids"][i] for i in rows]
    store_scores(dst, dst_persona, docids, stored["scores"][rows], path, source="copy")


def _search(searcher, slug, query):
    """POST the query as the form does; the results page it lands on."""
    r = searcher.post(f"/search/{slug}/", data={"q": query})
    assert r.status_code == 200 and "/results/" in r.url, (r.status_code, r.url)
    return r


def _results(body: str) -> list[str]:
    """The subjects, senders and snippets of a results page, in order, document ids out."""
    items = re.findall(r'<li data-doc="\d+">(.*?)</li>', body, flags=re.S)
    return [re.sub(r"/documents/\d+/", "/documents/N/", item) for item in items]


def _docids(slug) -> list[str]:
    """What the latest search on the collection showed, as docids (in order)."""
    search = SearchLog.objects.filter(collection__slug=slug).latest("pk")
    docs = Document.objects.in_bulk(search.shown)
    return [docs[pk].docid for pk in search.shown]


def test_displacement(attack):
    full, _alone, _publication, searcher = attack
    # The canary lifts a hidden document into the candidates; a nonsense word lifts nothing.
    canary = _search(searcher, full.slug, "common qzcanary")
    canary_ids = _docids(full.slug)
    nonsense = _search(searcher, full.slug, "common qznothing")
    nonsense_ids = _docids(full.slug)
    passed = canary_ids == nonsense_ids and len(canary_ids) == 10
    report(
        "T8 displacement (common word + canary vs + nonsense)",
        passed,
        f"{len(canary_ids)} vs {len(nonsense_ids)} results (10 visible documents hold the "
        "common word)",
    )
    assert canary_ids == nonsense_ids
    assert len(canary_ids) == 10  # every visible "common" document, none pushed out
    assert _results(canary.text.replace("qzcanary", "Q")) == _results(
        nonsense.text.replace("qznothing", "Q")
    )


def test_statistics(attack):
    full, alone, _publication, searcher = attack
    differ = []
    queries = ("alphaterm betaterm", "alphaterm", "common alphaterm report", "betaterm lunch")
    for query in queries:
        with_hidden = _search(searcher, full.slug, query)
        a = _docids(full.slug)
        without = _search(searcher, alone.slug, query)
        b = _docids(alone.slug)
        shown = _results(with_hidden.text.replace(full.slug, "SLUG"))
        if a != b or shown != _results(without.text.replace(alone.slug, "SLUG")):
            differ.append((query, a[:3], b[:3]))
    report(
        "T8 statistics (ranking with and without 60 hidden documents holding the terms)",
        not differ,
        f"{len(queries) - len(differ)} of {len(queries)} queries ranked identically; "
        f"differing: {differ}",
    )
    assert not differ


def test_a_get_with_a_query_records_nothing(attack):
    full, _alone, _publication, searcher = attack
    searches, requests_before = SearchLog.objects.count(), ReviewRequest.objects.count()
    r = searcher.get(f"/search/{full.slug}/", params={"q": "qzcanary common"})
    made = SearchLog.objects.count() - searches, ReviewRequest.objects.count() - requests_before
    report(
        "T8 GET-triggered search (a link with ?q=)",
        made == (0, 0),
        f"searches recorded {made[0]}, review requests made {made[1]}",
    )
    assert r.status_code == 200 and 'value="qzcanary common"' in r.text
    assert made == (0, 0)
    assert 'id="results"' not in r.text


def test_stale_pages(attack):
    full, _alone, publication, searcher = attack
    page = _search(searcher, full.slug, "common")
    link = re.search(r'href="(/search/[^"]+/documents/\d+/)"', page.text).group(1)
    assert searcher.get(link).status_code == 200
    # The band changes so that search would show nothing below it any more.
    Publication.objects.filter(pk=publication.pk).update(band_low=0.0)
    after = searcher.get(link).status_code
    listed = link in searcher.get(page.url).text
    report(
        "T8 stale pages (a document shown, then the band lowered)",
        after == 404 and not listed,
        f"document page {after}, still listed on the results page: {listed}",
    )
    assert after == 404 and not listed


def test_timing_does_not_depend_on_hidden_matches(attack, worker):
    """300 shuffled pairs of searches, a word 156 hidden documents hold against a word none
    holds: the response times must not tell them apart (two-sided Mann-Whitney U, p above
    TIMING_ALPHA), and the run must have been able to tell them apart had they differed.

    A p-value alone passes more easily the noisier the machine: on a loaded one no leak is
    found. So the run measures its own power: it resamples its control times into two
    samples of TIMING_PAIRS, adds a delay to every time of one, and finds the smallest delay
    that the same test rejects at TIMING_ALPHA in TIMING_POWER of 200 resamples
    (``_detectable``; printed). It fails if that delay is above TIMING_BOUND_MS, 8 ms:

    - the build before issue 14 leaked 9 ms (docs/protection.md); a run that sees 8 ms in
      80% of resamples finds such a leak at least as often, and a run that cannot could pass
      such a build by chance (5 ms, tried first, left too thin a margin over the 4.5 ms a
      quiet CI run reached);
    - CI's runs on a quiet machine of this kind (2 cores, gunicorn and the worker beside
      the test) detected 3.0 to 4.5 ms (docs/reliability.md), so an ordinary run passes;
    - on the same machine shared with other sessions' test runs and simulations (load
      average 2 to 7, 2026-11-24), six runs detected only 6.5 to 10.5 ms (medians 68 to
      110 ms): the old leak could have gone unseen, and the test now fails as too noisy to
      tell instead of passing. Run ``make acceptance`` on a machine of its own.
    """
    full, _alone, _publication, searcher = attack
    # warm both paths (the JVM, the visible view, the connection)
    for _ in range(20):
        _search(searcher, full.slug, "qzwarm")
    rng = random.Random(8)
    hidden, control = [], []
    for i in range(TIMING_PAIRS):
        # the same visible result either way: a word only hidden documents hold (the 156
        # with the badge) against a word none holds, each beside a word of one visible document
        pair = [("hidden", f"{BADGE} betaterm"), ("control", f"qzctl{i} betaterm")]
        rng.shuffle(pair)
        for kind, query in pair:
            started = time.perf_counter()
            _search(searcher, full.slug, query)
            (hidden if kind == "hidden" else control).append(time.perf_counter() - started)
    _stat, p = mannwhitneyu(hidden, control, alternative="two-sided")
    h, c = np.median(hidden) * 1000, np.median(control) * 1000
    detects = _detectable(control)
    passed = p > TIMING_ALPHA and detects <= TIMING_BOUND_MS
    report(
        "T8 timing of hidden matches",
        passed,
        f"{TIMING_PAIRS} pairs (POST + results page): median {h:.1f} ms with hidden matches, "
        f"{c:.1f} ms with none; Mann-Whitney U two-sided p = {p:.3g} (fails below "
        f"{TIMING_ALPHA}); power: detects {detects:.2f} ms in {TIMING_POWER:.0%} of runs "
        f"(fails above {TIMING_BOUND_MS:g} ms)",
    )
    assert p > TIMING_ALPHA, f"the hidden matches changed the response times: {h, c, p}"
    assert detects <= TIMING_BOUND_MS, (
        f"too noisy to tell: this run would find only a delay of {detects:.2f} ms "
        f"(more than {TIMING_BOUND_MS:g} ms) in {TIMING_POWER:.0%} of runs"
    )


def _detectable(times, *, trials=200, step_ms=0.25, up_to_ms=50.0) -> float:
    """The smallest added delay (ms, in steps of ``step_ms``) that the timing test, on
    response times like ``times``, finds at TIMING_ALPHA in TIMING_POWER of ``trials`` runs:
    two samples of TIMING_PAIRS drawn from ``times`` with replacement, the delay added to
    every time of one (the same draws for every delay); inf if none up to ``up_to_ms``."""
    rng = np.random.default_rng(0)
    times = np.asarray(times)
    a = rng.choice(times, (trials, TIMING_PAIRS))
    b = rng.choice(times, (trials, TIMING_PAIRS))
    for shift_ms in np.arange(step_ms, up_to_ms + step_ms / 2, step_ms):
        p = mannwhitneyu(a, b + shift_ms / 1000, axis=1, alternative="two-sided").pvalue
        if np.mean(p < TIMING_ALPHA) >= TIMING_POWER:
            return float(shift_ms)
    return float("inf")
