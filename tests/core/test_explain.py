"""The classifier's features in words: every name the featurizer can produce has a phrase,
and none of them shows a raw feature id."""

import re
from datetime import datetime

import pytest

from core import explain, sensitivity

RAW = re.compile(r"\b(meta|graph|subject|body|attachments):|_|\b(sin|cos|log|pagerank)\b")


def _messages():
    """Messages that give every family of features a column: words in the subject, body
    and attachments, dates on every weekday and none, senders and recipients."""
    out = []
    for n in range(8):
        out.append(
            sensitivity.Message(
                docid=f"m{n}",
                subject=f"Re: salary review {n}",
                body=f"the salary figures for quarter {n} and the pension",
                attachments="budget.xls salary table" if n % 2 else "",
                attachment_count=n % 2,
                date=None if n == 7 else datetime(2002, 9, 2 + n, 9 + n, 30),
                sender=f"p{n % 3}@corp.example",
                recipients=[f"p{(n + 1) % 3}@corp.example", "x@elsewhere.example"],
                reply=n % 2 == 0,
                priority=n == 3,
            )
        )
    return out


def test_every_feature_the_featurizer_produces_has_words_in_both_directions():
    featurizer = sensitivity.Featurizer(("corp.example",))
    featurizer.fit_transform(_messages())
    families = {name.partition(":")[0] for name in featurizer.names}
    assert families == {"subject", "body", "attachments", "meta", "graph", "entity"}
    assert {f"meta:{n}" for n in sensitivity.METADATA} <= set(featurizer.names)
    assert {f"entity:{k}" for k in sensitivity.ENTITY} <= set(featurizer.names)
    assert {f"graph:{n}" for n in sensitivity.GRAPH} <= set(featurizer.names)
    for name in featurizer.names:
        for above in (True, False):
            phrase = explain.feature_phrase(name, above=above)
            assert phrase and not RAW.search(phrase), (name, above, phrase)
    # the two directions of a metadata or graph feature say different things
    for name in (
        [f"meta:{n}" for n in sensitivity.METADATA]
        + [f"graph:{n}" for n in sensitivity.GRAPH]
        + [f"entity:{k}" for k in sensitivity.ENTITY]
    ):
        assert explain.feature_phrase(name) != explain.feature_phrase(name, above=False), name


def test_the_phrases_name_what_the_feature_means():
    assert explain.feature_phrase("entity:card") == "more card numbers than usual"
    assert explain.feature_phrase("meta:weekday_tue") == "sent on a Tuesday"
    assert explain.feature_phrase("meta:weekday_tue", above=False) == "not sent on a Tuesday"
    assert explain.feature_phrase("body:salary") == "the word “salary” in the body"
    assert explain.feature_phrase("subject:salary") == "the word “salary” in the subject"
    assert explain.feature_phrase("attachments:xls") == "the word “xls” in an attachment"
    assert explain.feature_phrase("meta:reply", above=False) == "not a reply"
    assert explain.feature_phrase("graph:sender_out_degree") == "its sender writes to many people"
    assert (
        explain.feature_phrase("graph:recipients_mean_in_degree", above=False)
        == "its recipients on average receive mail from few people"
    )
    # a word with a colon in it is still a word
    assert explain.feature_phrase("body:re:x") == "the word “re:x” in the body"


def test_a_documents_contribution_reads_the_direction_from_the_signs():
    # weight > 0 and contribution > 0: the value is above the mean (it is Tuesday)
    assert explain.contribution_phrase("meta:weekday_tue", 0.4, 1.2) == "sent on a Tuesday"
    # weight > 0, contribution < 0: below the mean (not a Tuesday) pushes away
    assert explain.contribution_phrase("meta:weekday_tue", -0.4, 1.2) == "not sent on a Tuesday"
    # weight < 0, contribution > 0: below the mean pushes towards sensitive
    assert explain.contribution_phrase("meta:log_body_length", 0.3, -0.5) == (
        "a shorter text than usual"
    )


@pytest.mark.parametrize(
    "name", ["meta:weekday_xyz", "graph:sender_size", "salary", "weird:thing", "meta:", ""]
)
def test_an_unknown_feature_is_named_in_the_error(name):
    with pytest.raises(ValueError, match=re.escape(repr(name))):
        explain.feature_phrase(name)
