"""The ranking commands end to end on the mini collection: al_simulate reads the same
qrels from the database or from a file; evaluate_protection names what is wrong with its
sensitivity labels."""

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotate import services
from ranking.services import index_build

pytestmark = pytest.mark.lucene
SMART = Path(__file__).parents[1] / "fixtures" / "smart"


@pytest.fixture
def mini(mini):
    """The mini collection of tests/ranking/conftest.py, indexed."""
    index_build(collection_id=mini.pk)
    return mini


def test_al_simulate_reads_the_imported_qrels_or_a_file_alike(mini, tmp_path):
    common = ["--collection", "mini", "--strategy", "cal", "--seed-mode", "is"]
    common += ["--min-topic-relevant", "1"]  # the mini topics have one to four relevant
    call_command("al_simulate", *common, "--out", str(tmp_path / "db"), stdout=None)
    call_command(
        "al_simulate",
        *common,
        "--qrels",
        str(SMART / "mini.rel"),
        "--qrels-format",
        "cranfield",
        "--out",
        str(tmp_path / "file"),
    )
    db, file = (json.loads((tmp_path / d / "al_simulate.json").read_text()) for d in ("db", "file"))
    assert db["results"][0]["points"] == list(range(0, 101, 10))
    for result in (*db["results"], *file["results"]):
        result.pop("seconds")  # all else is the same
    assert db["results"] == file["results"]
    assert sorted(p.name for p in (tmp_path / "db").glob("*.png")) == [
        "mini-f1.png",
        "mini-recall.png",
        "mini-tau.png",
        "mini-tau_infap.png",
    ]
    assert (db["c"], db["labeller"]) == (1e8, "selection")  # Rahman et al.'s protocol
    with pytest.raises(CommandError, match="cannot read"):
        call_command("al_simulate", *common, "--qrels", str(tmp_path / "missing.txt"))


def test_al_simulate_takes_a_list_of_topic_numbers(mini, tmp_path):
    from annotate.models import Topic

    numbers = sorted(mini.topics.values_list("number", flat=True), key=int)
    chosen = numbers[1::2]
    common = ["--collection", "mini", "--strategy", "cal", "--seed-mode", "is"]
    common += ["--min-topic-relevant", "1"]  # the mini topics have one to four relevant
    out = tmp_path / "some"
    call_command("al_simulate", *common, "--topic", ",".join(chosen), "--out", str(out))
    result = json.loads((out / "al_simulate.json").read_text())["results"][0]
    left_out = len(result["topics_without_relevant_in_pool"])
    assert result["topics"] + left_out == len(chosen)
    with pytest.raises(CommandError, match="no topic numbered 999"):
        call_command("al_simulate", *common, "--topic", "999", "--out", str(out))
    Topic.objects.create(collection=mini, number="998", title="unjudged")
    with pytest.raises(CommandError, match="no reference qrels for topic 998"):
        call_command("al_simulate", *common, "--topic", f"{chosen[0]},998", "--out", str(out))


def test_evaluate_protection_names_what_is_wrong_with_its_labels(mini, tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        call_command(
            "evaluate_protection", "--collection", "mini", "--sensitivity", str(tmp_path / "x")
        )
    bad = tmp_path / "sensitivity.txt"
    bad.write_text("* 0 1 1\n* 0 nowhere 0\n")
    with pytest.raises(CommandError, match="unknown documents: nowhere"):
        call_command("evaluate_protection", "--collection", "mini", "--sensitivity", str(bad))
    with pytest.raises(CommandError, match="no persona 'Nobody'"):
        call_command("evaluate_protection", "--collection", "mini", "--persona", "Nobody")
    for value, message in (
        ("bibliography", "write FIELD=REGEX"),
        ("bibliography=(", "not a regular expression"),
        ("nothing=x", "no document of 'mini' has metadata field 'nothing'"),
    ):
        with pytest.raises(CommandError, match=message.replace("(", r"\(")):
            call_command("evaluate_protection", "--collection", "mini", "--metadata", value)


def test_metadata_surrogate_labels_only_documents_with_the_field(mini):
    from ranking.classifier import metadata_labels

    labels = metadata_labels(collection=mini, match="bibliography=^cacm")
    by_docid = {mini.documents.get(pk=pk).docid: v for pk, v in labels.items()}
    assert by_docid["1"] == 1  # "CACM March, 1962"
    assert "2" not in by_docid  # no .B: no label
    assert metadata_labels(collection=mini, match="bibliography=naca") == dict.fromkeys(labels, 0)


def test_evaluate_protection_gives_the_joint_ranker_each_messages_features(
    sample_collection, tmp_path
):
    """On email the rankers read Table 3.12's message features beside relevance; the run
    completes and reports them (five topics of the sample mail, labels from its words)."""
    from core.ltr import NAMES
    from core.sensitivity import RANKING

    docs = list(sample_collection.documents.all())
    words = ("list", "mail", "free", "time", "new", "use")
    topics, qrels = [], []
    for n, word in enumerate(words, 1):
        topics.append(f"<top>\n<num> {n}\n<title> {word}\n<desc> {word}\n</top>\n")
        qrels += [f"{n} 0 {d.docid} 1" for d in docs if word in f"{d.subject} {d.body}".lower()]
    (tmp_path / "topics").write_text("".join(topics))
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    labels = [f"* 0 {d.docid} {int('linux' in (d.subject + d.body).lower())}" for d in docs]
    (tmp_path / "sensitive").write_text("\n".join(labels) + "\n")
    services.import_run(collection=sample_collection, fmt="topics-trec", path=tmp_path / "topics")
    services.import_run(collection=sample_collection, fmt="qrels-trec", path=tmp_path / "qrels")
    index_build(collection_id=sample_collection.pk)
    out = tmp_path / "out"
    call_command(
        "evaluate_protection",
        "--collection",
        sample_collection.slug,
        "--sensitivity",
        str(tmp_path / "sensitive"),
        "--depth",
        "20",
        "--restarts",
        "1",
        "--workers",
        "1",
        "--out",
        str(out),
    )
    report = json.loads((out / "protection.json").read_text())
    assert report["features"] == [*NAMES[:-2], *RANKING]
    assert set(report["trained"]["table"]) >= {"joint", "baseline: P(sensitive) sort"}
