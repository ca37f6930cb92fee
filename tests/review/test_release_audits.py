"""Release audits and their certificates (issue 33): the sample, the answers, the figures,
staleness, and that searchers learn nothing of an audit."""

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from core import release_audit
from review import release_audits, releases, selectors
from review.models import AuditEvent, Decision, ReleaseAudit, SearchLog
from tests.reviewkit import searcher_search

pytestmark = pytest.mark.lucene


def _open(published, users, margin=0.2, confidence=0.95):
    c, _persona, _docs, _kinds = published
    return release_audits.release_audit_open(
        publication=c.publication, user=users["lead"], margin=margin, confidence=confidence
    )


def _visible(published):
    c, _persona, docs, kinds = published
    return sorted(d.docid for d in docs if kinds[d.pk] == "safe")


def _page(response) -> bytes:
    """The results page without what differs between any two requests (the CSRF token, the
    search's own id in its links)."""
    body = re.sub(rb'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+', b"", response.content)
    return re.sub(rb"/(results|released)/\d+/", b"/\\1/N/", body)


def _judge_all(opened, users, sensitive_docids=()):
    for item in opened.items.select_related("document").order_by("position"):
        release_audits.release_audit_judge(
            item_id=item.pk,
            user=users["archivist"],
            sensitive=item.document.docid in sensitive_docids,
        )
    opened.refresh_from_db()
    return opened


def test_the_sample_is_drawn_from_what_searchers_see_at_the_calculators_size(published, users):
    opened = _open(published, users)
    frame = _visible(published)
    assert opened.frame_size == len(frame)
    expected = release_audit.sample_size(len(frame), 0.2, 0.95).n
    assert opened.sample_size == expected == opened.items.count()
    sampled = [i.document.docid for i in opened.items.order_by("position")]
    assert len(set(sampled)) == len(sampled) and set(sampled) <= set(frame)
    # the recorded seed draws the same sample again
    assert list(release_audit.draw_sample(frame, expected, opened.seed).ids) == sampled
    assert AuditEvent.objects.filter(action="release-audit-open").count() == 1


def test_a_second_open_audit_is_refused(published, users):
    _open(published, users)
    with pytest.raises(release_audits.AuditError, match="already being judged"):
        _open(published, users)
    assert ReleaseAudit.objects.count() == 1


def test_the_last_answer_fixes_the_certificates_figures(published, users):
    opened = _open(published, users)
    first = opened.items.order_by("position").first().document.docid
    opened = _judge_all(opened, users, {first})
    assert opened.status == ReleaseAudit.Status.CERTIFIED
    expected = release_audit.certificate(opened.frame_size, opened.sample_size, 1, 0.95)
    assert opened.figures["found"] == 1
    assert opened.figures["upper_number"] == expected.upper_number
    assert opened.figures["found_docids"] == [first]
    assert opened.figures["judges"] == [users["archivist"].username]


def test_audit_answers_change_nothing_a_searcher_sees_and_train_nothing(published, users, client):
    c, persona, docs, kinds = published
    frame = _visible(published)
    n = release_audit.sample_size(len(frame), 0.2, 0.95).n
    first = release_audit.draw_sample(frame, n, 7).ids[0]  # the audit below samples it
    doc = next(d for d in docs if d.docid == first)
    query = max(re.findall(r"[A-Za-z]{4,}", doc.subject + " " + doc.body), key=len)
    client.force_login(users["searcher"])
    before = _page(searcher_search(client, c, query))
    labels_before = selectors.decision_labels(collection=c, persona=persona)
    opened = release_audits.release_audit_open(
        publication=c.publication, user=users["lead"], margin=0.2, confidence=0.95, seed=7
    )
    assert opened.items.get(position=0).document == doc
    during = _page(searcher_search(client, c, query))
    _judge_all(opened, users, set(frame))  # every sampled one "sensitive"
    after = _page(searcher_search(client, c, query))
    assert before == during == after
    shown = list(SearchLog.objects.order_by("pk").values_list("shown", flat=True))
    assert len(shown) == 3 and shown[0] == shown[1] == shown[2] and doc.pk in shown[0]
    assert selectors.decision_labels(collection=c, persona=persona) == labels_before
    assert Decision.objects.count() == 0
    for name in ("release-audit-judge", "release-certificate"):
        assert client.get(reverse(name, args=[opened.pk])).status_code == 404
    assert client.get(reverse("release-audits", args=[c.slug])).status_code == 404


def test_a_certificate_turns_stale_on_a_release_and_says_why(published, users):
    c, persona, docs, kinds = published
    opened = _judge_all(_open(published, users), users)
    assert release_audits.certificate_state(certified=opened).stale is False
    uncertain = next(d for d in docs if kinds[d.pk] == "uncertain")
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=uncertain, kind="release"
    )
    state = release_audits.certificate_state(certified=opened)
    assert state.stale is True
    assert any("1 decision(s)" in r and "release" in r for r in state.reasons), state.reasons


def test_withholding_what_the_audit_found_keeps_the_certificate_current(published, users):
    c, persona, docs, kinds = published
    opened = _open(published, users)
    first, second = [i.document for i in opened.items.order_by("position")[:2]]
    opened = _judge_all(opened, users, {first.docid, second.docid})
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=first, kind="withhold"
    )  # one of the two found: still the frame the certificate speaks of, less what it found
    assert release_audits.certificate_state(certified=opened).stale is False
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=second, kind="withhold"
    )
    assert release_audits.certificate_state(certified=opened).stale is False
    other = next(d for d in docs if kinds[d.pk] == "safe" and d not in (first, second))
    releases.review_decide(
        archivist=users["archivist"], persona=persona, document=other, kind="withhold"
    )  # a message the audit did not find: the set is no longer the one sampled
    state = release_audits.certificate_state(certified=opened)
    assert state.stale is True and any("withhold" in r for r in state.reasons)


def test_bad_numbers_are_named_and_nothing_is_stored(published, users, client):
    c = published[0]
    client.force_login(users["lead"])
    url = reverse("release-audits", args=[c.slug])
    response = client.post(url, {"margin": "abc", "confidence": "0.95"})
    assert response.status_code == 400 and b"Margin" in response.content
    response = client.post(url, {"margin": "0.05", "confidence": "0.5"})
    assert response.status_code == 400 and b"Confidence" in response.content
    response = client.post(url, {"margin": "0.3", "confidence": "0.9"})  # not offered
    assert response.status_code == 400 and b"Margin: choose one of" in response.content
    assert ReleaseAudit.objects.count() == 0


def test_through_the_pages_open_judge_by_keys_and_download(published, users, client):
    c = published[0]
    client.force_login(users["lead"])
    calculator = client.get(
        reverse("release-audits", args=[c.slug]), {"margin": "0.2"}, HTTP_HX_REQUEST="true"
    )
    assert b'id="calculator"' in calculator.content and ReleaseAudit.objects.count() == 0
    client.post(reverse("release-audits", args=[c.slug]), {"margin": "0.2", "confidence": "0.9"})
    opened = ReleaseAudit.objects.get()
    client.force_login(users["archivist"])
    judge = reverse("release-audit-judge", args=[opened.pk])
    page = client.get(judge)
    assert b'data-keys="s:sensitive n:not_sensitive"' in page.content
    for item in opened.items.order_by("position"):
        response = client.post(judge, {"item": item.pk, "answer": "not_sensitive"})
    assert response.url == reverse("release-certificate", args=[opened.pk])
    certificate = reverse("release-certificate", args=[opened.pk])
    record = json.loads(client.get(certificate, {"format": "json"}).content)
    assert record["sample_size"] == opened.sample_size and record["found_sensitive"] == 0
    assert record["stale"] is False and record["confidence"] == 0.9
    rows = dict(
        csv.reader(io.StringIO(client.get(certificate, {"format": "csv"}).content.decode()))
    )
    assert rows["upper_number"] == str(record["upper_number"])
    assert b"Release certificate" in client.get(certificate).content


def test_the_audit_log_tells_an_audit_in_sentences(published, users):
    from review.audit import audit_described

    _judge_all(_open(published, users), users)
    text = " ".join(
        str(sentence)
        for _e, sentence in audit_described(
            AuditEvent.objects.filter(action__startswith="release-audit")
        )
    )
    assert "opened <a href=" in text and "certified by the last answer" in text
    assert "judged" in text and "not sensitive" in text
