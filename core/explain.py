"""The sensitivity classifier's features in words (``core.sensitivity``), pure: no Django.

An archivist reads why the classifier leans one way; ``meta:weekday_tue`` or
``graph:recipients_max_pagerank`` says nothing to them. Every family of feature names the
featurizer produces has a phrase here:

- ``subject:WORD``, ``body:WORD``, ``attachments:WORD``: TF-IDF of a word (never negative,
  so a feature that pushes a document's P has the word in it);
- ``meta:NAME`` (``sensitivity.METADATA``) and ``graph:NAME`` (``sensitivity.GRAPH``):
  standardised over the collection, so what pushes a document is its value being *above*
  the collection's mean (sent on a Tuesday, a longer body than usual) or *below* it (not sent
  on a Tuesday, a shorter body).

``above``: whether the document's value is above the collection's mean; for a feature's
weight overall (what a higher value does), leave it True. An unknown name raises
``ValueError``: a new family must get its words here (``tests/core/test_explain.py``
feeds every name the featurizer can produce).
"""

TEXT_FIELDS = {
    "subject": "in the subject",
    "body": "in the body",
    "attachments": "in an attachment",
}

# meta:NAME -> (above the mean, below the mean)
METADATA = {
    "hour_sin": (
        "sent in the morning (nearer 6 am than 6 pm)",
        "sent in the evening (nearer 6 pm than 6 am)",
    ),
    "hour_cos": (
        "sent at night (nearer midnight than noon)",
        "sent in the daytime (nearer noon than midnight)",
    ),
    **{
        f"weekday_{d[:3].lower()}": (f"sent on a {d}", f"not sent on a {d}")
        for d in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
    },
    "weekend": ("sent at the weekend", "sent on a weekday"),
    "no_date": ("has no date", "has a date"),
    "sender_internal": (
        "sent from inside the organisation",
        "sent from outside the organisation",
    ),
    "recipients_internal_share": (
        "more of its recipients inside the organisation than usual",
        "fewer of its recipients inside the organisation than usual",
    ),
    "any_external_recipient": (
        "sent to someone outside the organisation",
        "sent to no one outside the organisation",
    ),
    "log_recipients": ("more recipients than usual", "fewer recipients than usual"),
    "log_subject_length": ("a longer subject than usual", "a shorter subject than usual"),
    "log_body_length": ("a longer text than usual", "a shorter text than usual"),
    "attachments": ("more attachments than usual", "fewer attachments than usual"),
    "reply": ("a reply", "not a reply"),
    "priority": ("marked urgent or high priority", "not marked urgent or high priority"),
}

# graph:sender_C and graph:recipients_AGG_C: who, and what their place in the exchange of
# mail is (singular and plural verbs, above and below the mean)
_WHO = {
    "sender": ("its sender", True),
    "recipients_min": ("all of its recipients", False),
    "recipients_max": ("one of its recipients", True),
    "recipients_mean": ("its recipients on average", False),
}
_CENTRALITY = {
    # centrality: ((singular above, plural above), (singular below, plural below))
    "in_degree": (
        ("receives mail from many people", "receive mail from many people"),
        ("receives mail from few people", "receive mail from few people"),
    ),
    "out_degree": (
        ("writes to many people", "write to many people"),
        ("writes to few people", "write to few people"),
    ),
    "betweenness": (
        (
            "links otherwise separate groups of correspondents",
            "link otherwise separate groups of correspondents",
        ),
        ("stays within one group of correspondents", "stay within one group of correspondents"),
    ),
    "pagerank": (
        ("is central in the exchange of mail", "are central in the exchange of mail"),
        ("is on the edge of the exchange of mail", "are on the edge of the exchange of mail"),
    ),
}


# entity:KIND (``sensitivity.ENTITY``): how many the recognisers found (core.recognisers)
ENTITIES = {
    "card": "card numbers",
    "iban": "IBANs",
    "account": "bank account numbers",
    "national_id": "national identifiers (social security, National Insurance)",
    "email": "email addresses in the text",
    "name": "people's names",
    "phone": "phone numbers",
    "dob": "dates of birth",
    "address": "postal addresses",
    "health": "health terms",
    "financial": "personal finance terms",
}


def _graph_phrase(name: str, above: bool) -> str | None:
    for who, (noun, singular) in _WHO.items():
        prefix = who + "_"
        if name.startswith(prefix) and name[len(prefix) :] in _CENTRALITY:
            verbs = _CENTRALITY[name[len(prefix) :]][0 if above else 1]
            return f"{noun} {verbs[0 if singular else 1]}"
    return None


def feature_phrase(name: str, *, above: bool = True) -> str:
    """Return a feature of the classifier (``Featurizer.names``) in words.

    ``name``: ``FAMILY:ITEM`` as the featurizer names it; ``above``: whether the document's
    value is above the collection's mean (for a weight overall: True). Raises ``ValueError``
    for a name of no known family."""
    family, sep, item = name.partition(":")
    if sep and item:
        if family in TEXT_FIELDS:
            word = f"the word “{item}” {TEXT_FIELDS[family]}"
            return word if above else f"without {word}"
        if family == "meta" and item in METADATA:
            return METADATA[item][0 if above else 1]
        if family == "entity" and item in ENTITIES:
            return f"{'more' if above else 'fewer'} {ENTITIES[item]} than usual"
        if family == "graph":
            phrase = _graph_phrase(item, above)
            if phrase is not None:
                return phrase
    raise ValueError(f"no words for the classifier feature {name!r}")


def contribution_phrase(name: str, contribution: float, weight: float) -> str:
    """Return what pushed one document's P, in words: ``contribution`` is weight x value for
    the document, ``weight`` the feature's weight, so their signs tell whether the
    document's (standardised) value is above the collection's mean. A weight of 0 means it
    is not known (a stored version without its model): a word pushes only a document that
    holds it (TF-IDF is never negative), and any other feature is read as above."""
    if weight == 0:
        return feature_phrase(name)
    return feature_phrase(name, above=(contribution > 0) == (weight > 0))


def weights_in_words(pairs) -> list[tuple[str, float]]:
    """Return a model report's ``(feature name, weight)`` pairs with each name in words (a
    higher value pushes P by the weight's sign). A name of a family this version does not
    know (a report stored by an older featurizer) is kept as it was, marked as such."""
    out = []
    for name, weight in pairs or ():
        try:
            out.append((feature_phrase(name), weight))
        except ValueError:
            out.append((f"{name} (no words for this older feature)", weight))
    return out
