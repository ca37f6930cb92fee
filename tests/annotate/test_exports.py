"""Final labels, qrels and annotation-table exports, agreement of a round, adjudication."""

import csv
import datetime
import io
import json
import math
import threading
import uuid
import zipfile

import ir_measures
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotate import exports, judgments, projects, selectors, services
from annotate.models import Judgment, Round, Task
from tests.exportkit import two_exports_of_one_snapshot
from tests.waitkit import until


def judge_through_api(user, project, answer):
    """Judge every task the annotator is given, through the API; ``answer(docid)``."""
    client = Client()
    client.force_login(user)
    done = 0
    while True:
        r = client.post(reverse("api-task-next", args=[project.slug]))
        if r.status_code == 204:
            return done
        assert r.status_code == 200, r.content
        task = Task.objects.select_related("document").get(pk=r.json()["task"])
        body = {"active_seconds": 3.0, "started_at": "2026-11-21T10:00:00Z", "comment": ""}
        body.update(answer(task.document.docid))
        r = client.post(
            reverse("api-judgment-submit", args=[task.pk]),
            body,
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
        )
        assert r.status_code == 201, r.content
        done += 1


@pytest.fixture
def training(make_project):
    """Two annotators judge the same six tasks of a training round."""
    project, users = make_project(annotators=2, n_tasks=6, kind=Round.Kind.TRAINING)
    docids = list(Task.objects.order_by("id").values_list("document__docid", flat=True))
    return project, users, docids


def answers(grades, sensitive, comments=None):
    def answer(docid):
        return {
            "relevance": grades[docid],
            "persona_sensitive": sensitive[docid],
            "personal_sensitive": "no",
            "comment": (comments or {}).get(docid, ""),
        }

    return answer


def test_qrels_round_trip_through_ir_measures_gives_the_expected_ndcg(training):
    project, (a, b), docs = training
    grades_a = dict(zip(docs, [2, 1, 0, 0, 1, 2], strict=True))
    grades_b = dict(zip(docs, [2, 0, 0, 1, 1, 2], strict=True))  # differs on docs 1 and 3
    no = dict.fromkeys(docs, "no")
    assert judge_through_api(a, project, answers(grades_a, no)) == 6
    assert judge_through_api(b, project, answers(grades_b, no)) == 6

    files = exports.export_files(project)
    qrels = list(ir_measures.read_trec_qrels(io.StringIO(files["qrels.txt"])))
    got = {q.doc_id: q.relevance for q in qrels}
    # Disagreements resolved by the default rule: the more relevant grade.
    final = {d: max(grades_a[d], grades_b[d]) for d in docs}
    assert got == final
    assert {q.query_id for q in qrels} == {"1"}

    ranking = [docs[i] for i in (3, 2, 1, 0, 5, 4)]
    run = [ir_measures.ScoredDoc("1", d, 10.0 - i) for i, d in enumerate(ranking)]
    ndcg = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], qrels, run)[ir_measures.nDCG @ 10]
    # trec_eval's nDCG: gain = grade, discount log2(rank + 1).
    dcg = sum(final[d] / math.log2(r + 2) for r, d in enumerate(ranking))
    ideal = sorted(final.values(), reverse=True)
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    assert ndcg == pytest.approx(dcg / idcg, abs=1e-9)


def test_final_label_rules_are_applied_and_recorded(training, users):
    project, (a, b), docs = training
    sens_a = dict(zip(docs, ["yes", "no", "dont_know", "no", "dont_know", "no"], strict=True))
    sens_b = dict(zip(docs, ["no", "no", "yes", "no", "dont_know", "no"], strict=True))
    grades_a = dict(zip(docs, [2, 1, 0, 0, 1, 2], strict=True))
    grades_b = dict(zip(docs, [0, 1, 0, 0, 1, 2], strict=True))
    judge_through_api(a, project, answers(grades_a, sens_a, {docs[0]: "=HYPERLINK(1)"}))
    judge_through_api(b, project, answers(grades_b, sens_b, {docs[0]: "@SUM(A1)"}))
    task = Task.objects.get(project=project, document__docid=docs[1])
    judgments.adjudicate(
        user=users["lead"], task=task, relevance=2, persona_sensitive="yes", reason="Discussed"
    )

    files = exports.export_files(project)
    qrels = dict(line.split()[2:] for line in files["qrels.txt"].splitlines())
    assert qrels[docs[0]] == "2"  # 2 vs 0: the more relevant
    assert qrels[docs[1]] == "2"  # adjudicated over the agreed 1
    (persona_file,) = [n for n in files if n.startswith("sensitivity-") and n.endswith(".txt")]
    sens = dict(line.split()[2:] for line in files[persona_file].splitlines())
    assert sens[docs[0]] == "1"  # yes vs no: sensitive if any annotator said so
    assert sens[docs[1]] == "1"  # adjudicated
    assert sens[docs[2]] == "1"  # don't know vs yes
    assert sens[docs[3]] == "0"  # agreed
    assert docs[4] not in sens  # only "don't know": no label

    rows = list(csv.DictReader(io.StringIO(files["annotations.csv"])))
    assert len(rows) == 12 and len({r["judgment_id"] for r in rows}) == 12
    by_doc = {}
    for r in rows:
        by_doc.setdefault(r["docno"], []).append(r)
    assert {r["relevance_rule"] for r in by_doc[docs[0]]} == {"rule:higher"}
    assert {r["relevance_rule"] for r in by_doc[docs[1]]} == {"adjudicated"}
    assert {r["relevance_rule"] for r in by_doc[docs[5]]} == {"agreed"}
    assert {r["sensitivity_rule"] for r in by_doc[docs[0]]} == {"rule:any-sensitive"}
    assert {r["sensitivity_rule"] for r in by_doc[docs[4]]} == {"no-answer"}
    # Spreadsheet formulas are neutralised, and the JSONL keeps the text as written.
    assert sorted(r["comment"] for r in by_doc[docs[0]]) == ["'=HYPERLINK(1)", "'@SUM(A1)"]
    assert '"comment": "=HYPERLINK(1)"' in files["annotations.jsonl"]


def test_majority_rule_breaks_ties_upwards(make_project):
    project, users = make_project(annotators=3, n_tasks=2, kind=Round.Kind.TRAINING)
    docs = list(Task.objects.order_by("id").values_list("document__docid", flat=True))
    project.relevance_rule = project.RelevanceRule.MAJORITY
    project.save()
    no = dict.fromkeys(docs, "no")
    for user, grades in zip(users, ([0, 0], [0, 1], [2, 2]), strict=True):
        judge_through_api(user, project, answers(dict(zip(docs, grades, strict=True)), no))
    qrels = dict(
        line.split()[2:] for line in exports.export_files(project)["qrels.txt"].split("\n") if line
    )
    assert qrels == {docs[0]: "0", docs[1]: "2"}  # 0,0,2 -> 0; 0,1,2 (a tie) -> 2


EXPORT_FILES = [
    "annotations.csv",
    "annotations.jsonl",
    "kappa-per-round.png",
    "qrels.txt",
    "relevant-per-topic.png",
    "sensitivity-maeve.txt",
    "sensitivity-prevalence.png",
]
CSV_HEADER = (
    "judgment_id,project,round,round_kind,topic,persona,docno,annotator,relevance,"
    "persona_sensitive,personal_sensitive,comment,active_seconds,started_at,submitted_at,"
    "updated_at,version,final_relevance,relevance_rule,final_persona_sensitive,sensitivity_rule"
)


def test_a_small_known_project_exports_exactly_these_files_and_the_same_bytes_again(
    make_project,
):
    """Two annotators, three documents, known answers and times: every file the export must
    produce, its exact text (qrels, sensitivity, every CSV row, every JSONL object), PNGs
    for the pictures, and the same bytes from a second export and from the zip twice."""
    project, (a, b) = make_project(annotators=2, n_tasks=3, kind=Round.Kind.TRAINING)
    d1, d2, d3 = Task.objects.order_by("id").values_list("document__docid", flat=True)
    assert (d1, d2, d3) == (
        "sample/easy-ham-1-00001.eml",
        "sample/easy-ham-1-00014.eml",
        "sample/easy-ham-1-00067.eml",
    )
    grades_a, grades_b = {d1: 2, d2: 1, d3: 0}, {d1: 0, d2: 1, d3: 0}
    sens_a = {d1: "yes", d2: "no", d3: "dont_know"}
    sens_b = {d1: "no", d2: "no", d3: "dont_know"}
    assert judge_through_api(a, project, answers(grades_a, sens_a, {d1: "=1+1"})) == 3
    assert judge_through_api(b, project, answers(grades_b, sens_b)) == 3
    # Submission times are the clock's: pin them so that every byte is known.
    when = datetime.datetime(2026, 11, 21, 10, 0, 5, tzinfo=datetime.UTC)
    Judgment.objects.update(submitted_at=when, updated_at=when)
    ids = {(j.annotator.username, j.task.document.docid): j.pk for j in Judgment.objects.all()}

    files = exports.export_files(project)

    assert sorted(files) == EXPORT_FILES
    assert files["qrels.txt"] == f"1 0 {d1} 2\n1 0 {d2} 1\n1 0 {d3} 0\n"
    # d3 has only "don't know" answers: no sensitivity label.
    assert files["sensitivity-maeve.txt"] == f"1 0 {d1} 1\n1 0 {d2} 0\n"
    times = "3.0,2026-11-21T10:00:00+00:00,2026-11-21T10:00:05+00:00,2026-11-21T10:00:05+00:00,1"
    rows = {
        ("project-a0", d1): f"project,1,training,1,Maeve,{d1},project-a0,2,yes,no,'=1+1,{times},"
        "2,rule:higher,1,rule:any-sensitive",
        ("project-a0", d2): f"project,1,training,1,Maeve,{d2},project-a0,1,no,no,,{times},"
        "1,agreed,0,agreed",
        ("project-a0", d3): f"project,1,training,1,Maeve,{d3},project-a0,0,dont_know,no,,{times},"
        "0,agreed,,no-answer",
        ("project-a1", d1): f"project,1,training,1,Maeve,{d1},project-a1,0,no,no,,{times},"
        "2,rule:higher,1,rule:any-sensitive",
        ("project-a1", d2): f"project,1,training,1,Maeve,{d2},project-a1,1,no,no,,{times},"
        "1,agreed,0,agreed",
        ("project-a1", d3): f"project,1,training,1,Maeve,{d3},project-a1,0,dont_know,no,,{times},"
        "0,agreed,,no-answer",
    }
    in_id_order = sorted(rows, key=ids.__getitem__)
    assert files["annotations.csv"] == "".join(
        [CSV_HEADER + "\n"] + [f"{ids[k]},{rows[k]}\n" for k in in_id_order]
    )
    # The JSONL holds the same rows, typed, the comment as written, keys sorted.
    table = csv.DictReader(io.StringIO(files["annotations.csv"]))
    expected = []
    for row in table:
        row.update(
            judgment_id=int(row["judgment_id"]),
            round=int(row["round"]),
            relevance=int(row["relevance"]),
            active_seconds=3.0,
            version=1,
            final_relevance=int(row["final_relevance"]),
            final_persona_sensitive=(
                int(row["final_persona_sensitive"]) if row["final_persona_sensitive"] else None
            ),
            comment=row["comment"].removeprefix("'"),
        )
        expected.append(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    assert files["annotations.jsonl"] == "".join(expected)
    assert files["annotations.jsonl"].startswith('{"active_seconds": 3.0, "annotator": ')
    assert '"comment": "=1+1"' in files["annotations.jsonl"]
    for name in ("kappa-per-round.png", "relevant-per-topic.png", "sensitivity-prevalence.png"):
        assert files[name].startswith(b"\x89PNG\r\n\x1a\n"), name

    again = exports.export_files(project)
    assert again == files  # byte-identical: every text and every PNG
    archive = exports.export_zip(project)
    assert exports.export_zip(project) == archive
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        assert z.namelist() == [f"{project.slug}/{n}" for n in files]
        for name, content in files.items():
            data = content if isinstance(content, bytes) else content.encode()
            assert z.read(f"{project.slug}/{name}") == data, name


def test_export_command_writes_every_file(training, tmp_path):
    project, (a, _b), docs = training
    judge_through_api(a, project, answers(dict.fromkeys(docs, 2), dict.fromkeys(docs, "yes")))
    out = io.StringIO()
    call_command("export_qrels", project.slug, "--out", str(tmp_path / "x"), stdout=out)
    names = sorted(p.name for p in (tmp_path / "x").iterdir())
    assert names == [
        ".sasc-export.json",
        "annotations.csv",
        "annotations.jsonl",
        "kappa-per-round.png",
        "qrels.txt",
        "relevant-per-topic.png",
        "sensitivity-maeve.txt",
        "sensitivity-prevalence.png",
    ]
    assert (tmp_path / "x" / "relevant-per-topic.png").read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "x" / "qrels.txt").read_text().count("\n") == 6
    with pytest.raises(CommandError, match="no project 'nope'"):
        call_command("export_qrels", "nope", "--out", str(tmp_path / "y"))
    # Exported again into the same folder after the persona was renamed and with machine
    # labels before: the earlier export's files this one does not write go (fresh-eye
    # finding: sensitivity-maeve.txt stayed beside sensitivity-maeve-gallagher.txt), and a
    # file no export wrote stays.
    (tmp_path / "x" / "notes.txt").write_text("mine")
    project.personas.update(name="Maeve Gallagher")
    call_command("export_qrels", project.slug, "--out", str(tmp_path / "x"), stdout=out)
    names = {p.name for p in (tmp_path / "x").iterdir()}
    assert "sensitivity-maeve-gallagher.txt" in names and "notes.txt" in names
    assert "sensitivity-maeve.txt" not in names
    assert "sensitivity-maeve.txt: removed (an earlier export's" in out.getvalue()
    # A manifest not written by an export of this project removes nothing: one of another
    # project, a string where a list is (which once removed one-letter files), a number.
    manifest = tmp_path / "x" / ".sasc-export.json"
    for earlier in (
        {"project": "other", "files": ["notes.txt"]},
        {"project": project.slug, "files": "notes.txt"},
        {"project": project.slug, "files": 5},
        ["notes.txt"],
    ):
        (tmp_path / "x" / "n").write_text("mine")
        manifest.write_text(json.dumps(earlier))
        call_command("export_qrels", project.slug, "--out", str(tmp_path / "x"), stdout=out)
        assert (tmp_path / "x" / "notes.txt").exists() and (tmp_path / "x" / "n").exists()
        assert json.loads(manifest.read_text())["project"] == project.slug


def test_agreement_of_a_training_round_matches_scikit_learn_and_lists_disagreements(training):
    project, (a, b), docs = training
    grades_a = [2, 1, 0, 0, 1, 2]
    grades_b = [2, 0, 0, 1, 1, 2]
    no = dict.fromkeys(docs, "no")
    judge_through_api(a, project, answers(dict(zip(docs, grades_a, strict=True)), no))
    judge_through_api(b, project, answers(dict(zip(docs, grades_b, strict=True)), no))
    report = selectors.agreement_for(project=project, round_id=project.rounds.get().pk)
    (pair,) = report["pairs"]
    assert pair["annotators"] == (a.username, b.username)
    kappa = pair["facets"]["relevance"]
    assert kappa.n == 6
    assert kappa.value == pytest.approx(cohen_kappa_score(grades_a, grades_b, labels=[0, 1, 2]))
    assert kappa.ci_low is not None and kappa.ci_low <= kappa.value <= kappa.ci_high
    assert "single category" in pair["facets"]["persona_sensitive"].undefined
    assert sorted(d["task"].document.docid for d in report["disagreements"]) == sorted(
        [docs[1], docs[3]]
    )
    rounds = selectors.agreement_over_rounds(project=project)
    assert [r["pairs"][0][1].value for r in rounds] == [pytest.approx(kappa.value)]


@pytest.mark.parametrize(
    ("relevance", "sensitive", "reason", "message"),
    [
        (None, "", "why", "decide the relevance"),
        (3, "", "why", "relevance must be"),
        (1, "maybe", "why", "persona sensitivity must be"),
        (1, "", "  ", "give the reason"),
    ],
)
def test_adjudication_refuses_incomplete_or_invalid_labels(
    training, users, relevance, sensitive, reason, message
):
    project, _users, _docs = training
    task = Task.objects.filter(project=project).first()
    with pytest.raises(judgments.InvalidAnswers, match=message):
        judgments.adjudicate(
            user=users["lead"],
            task=task,
            relevance=relevance,
            persona_sensitive=sensitive,
            reason=reason,
        )


@pytest.mark.needs_postgres("exported snapshots are PostgreSQL's")
def test_t11_two_exports_of_one_snapshot_taken_while_annotators_submit_are_identical(
    transactional_db, make_project
):
    project, users = make_project(annotators=6, n_tasks=39, overlap=2)
    docs = list(Task.objects.order_by("id").values_list("document__docid", flat=True))

    def annotate(user):
        try:
            judge_through_api(
                user, project, answers(dict.fromkeys(docs, 1), dict.fromkeys(docs, "no"))
            )
        finally:
            connection.close()

    workers = [threading.Thread(target=annotate, args=(u,)) for u in users]
    for w in workers:
        w.start()
    until(lambda: Judgment.objects.count() >= 10, 60, "ten judgments submitted")
    first, second, n_judgments, n_docs = two_exports_of_one_snapshot(project)
    for w in workers:
        w.join(120)
    assert first == second
    assert first["qrels.txt"].count("\n") == n_docs
    assert first["annotations.csv"].count("\n") == n_judgments + 1  # the header
    assert n_judgments >= 10


def test_lead_sees_agreement_adjudicates_and_the_export_reflects_it(training, users, login):
    project, (a, b), docs = training
    no = dict.fromkeys(docs, "no")
    judge_through_api(a, project, answers(dict(zip(docs, [2, 1, 0, 0, 1, 2], strict=True)), no))
    judge_through_api(b, project, answers(dict(zip(docs, [2, 0, 0, 1, 1, 2], strict=True)), no))
    client = login(users["lead"])
    page = client.get(reverse("agreement", args=[project.slug]))
    assert page.status_code == 200
    text = page.content.decode()
    kappa = cohen_kappa_score([2, 1, 0, 0, 1, 2], [2, 0, 0, 1, 1, 2], labels=[0, 1, 2])
    assert f"{kappa:.3f}" in text
    assert text.count('class="card disagreement"') == 2
    task = Task.objects.get(project=project, document__docid=docs[3])
    r = client.post(
        reverse("adjudicate", args=[project.slug, task.pk]),
        {"relevance": "0", "persona_sensitive": "", "reason": "Off topic after discussion"},
    )
    assert r.status_code == 302
    assert "Off topic after discussion" in client.get(r["Location"]).content.decode()
    export = client.get(reverse("project-export", args=[project.slug]))
    assert export["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(export.content))
    qrels = archive.read(f"{project.slug}/qrels.txt").decode()
    assert f"1 0 {docs[3]} 0\n" in qrels  # adjudicated down from the rule's 1
    assert f"1 0 {docs[1]} 1\n" in qrels  # the rule: the more relevant grade
    again = client.get(reverse("project-export", args=[project.slug]))
    assert again.content == export.content  # same data, same bytes


def test_adjudication_form_names_what_was_wrong(training, users, login):
    project, _users, _docs = training
    task = Task.objects.filter(project=project).first()
    client = login(users["lead"])
    r = client.post(
        reverse("adjudicate", args=[project.slug, task.pk]),
        {"relevance": "", "persona_sensitive": "", "reason": "x"},
        follow=True,
    )
    assert "Not saved: decide the relevance, the persona sensitivity or both." in r.content.decode()


@pytest.mark.parametrize("role", ["annotator", "archivist", "searcher"])
def test_agreement_and_exports_are_the_leads_only(training, users, login, role):
    project, _users, _docs = training
    task = Task.objects.filter(project=project).first()
    client = login(users[role])
    assert client.get(reverse("agreement", args=[project.slug])).status_code == 404
    assert client.get(reverse("project-export", args=[project.slug])).status_code == 404
    chart = reverse("project-chart", args=[project.slug, "kappa-per-round"])
    assert client.get(chart).status_code == 404
    r = client.post(
        reverse("adjudicate", args=[project.slug, task.pk]),
        {"relevance": "2", "reason": "x"},
    )
    assert r.status_code == 404


def test_pictures_follow_the_labels_and_are_byte_stable(training, users, login):
    project, (a, b), docs = training
    client = login(users["lead"])
    url = reverse("project-chart", args=[project.slug, "relevant-per-topic"])
    empty = client.get(url)
    assert empty["Content-Type"] == "image/png" and empty.content.startswith(b"\x89PNG")
    no, yes = dict.fromkeys(docs, "no"), dict.fromkeys(docs, "yes")
    judge_through_api(a, project, answers(dict.fromkeys(docs, 2), yes))
    judge_through_api(b, project, answers(dict.fromkeys(docs, 1), no))
    drawn = client.get(url).content
    assert drawn != empty.content and client.get(url).content == drawn
    for name in ("kappa-per-round", "sensitivity-prevalence"):
        r = client.get(reverse("project-chart", args=[project.slug, name]))
        assert r.status_code == 200 and r.content.startswith(b"\x89PNG")
    assert client.get(reverse("project-chart", args=[project.slug, "nope"])).status_code == 404
    page = client.get(reverse("agreement", args=[project.slug])).content.decode()
    assert reverse("project-chart", args=[project.slug, "kappa-per-round"]) in page
    files = exports.export_files(project)
    assert files["relevant-per-topic.png"] == drawn  # the export carries the same pictures


def test_export_api_serves_each_file_and_names_a_wrong_one(training, users, login):
    project, (a, _b), docs = training
    judge_through_api(a, project, answers(dict.fromkeys(docs, 2), dict.fromkeys(docs, "no")))
    client = login(users["lead"])
    names = client.get(reverse("api-project-exports", args=[project.slug])).json()
    assert names[0] == "export.zip" and "qrels.txt" in names and "kappa-per-round.png" in names
    qrels = client.get(reverse("api-project-export", args=[project.slug, "qrels.txt"]))
    assert qrels["Content-Type"].startswith("text/plain")
    assert qrels.content.decode() == exports.export_files(project, pictures=False)["qrels.txt"]
    png = client.get(reverse("api-project-export", args=[project.slug, "relevant-per-topic.png"]))
    assert png["Content-Type"] == "image/png"
    missing = client.get(reverse("api-project-export", args=[project.slug, "nope.txt"]))
    assert missing.status_code == 404 and "no export file 'nope.txt'" in missing.json()["message"]


def test_agreement_api_reports_kappa_and_refuses_bad_filters(training, users, login):
    project, (a, b), docs = training
    no = dict.fromkeys(docs, "no")
    judge_through_api(a, project, answers(dict(zip(docs, [2, 1, 0, 0, 1, 2], strict=True)), no))
    judge_through_api(b, project, answers(dict(zip(docs, [2, 0, 0, 1, 1, 2], strict=True)), no))
    client = login(users["lead"])
    url = reverse("api-project-agreement", args=[project.slug])
    body = client.get(url, {"round": project.rounds.get().pk}).json()
    rel = body["pairs"][0]["facets"]["relevance"]
    assert rel["value"] == pytest.approx(
        cohen_kappa_score([2, 1, 0, 0, 1, 2], [2, 0, 0, 1, 1, 2], labels=[0, 1, 2])
    )
    assert body["pairs"][0]["facets"]["persona_sensitive"]["value"] is None
    assert len(body["disagreements"]) == 2
    bad = client.get(url, {"topic": "x"})
    assert bad.status_code == 400 and "topic must be an id" in bad.json()["message"]


def test_project_labels_compare_with_imported_qrels_and_sensitivity(
    training, users, login, tmp_path
):
    from annotate.models import Persona, ReferenceRelevance

    project, (a, b), docs = training
    qrels = tmp_path / "old.qrels"
    old_grades = [2, 1, 0, 0, 2, 2]
    qrels.write_text("".join(f"1 0 {d} {g}\n" for d, g in zip(docs, old_grades, strict=True)))
    assert services.import_run(collection=project.collection, fmt="qrels-trec", path=qrels).ok
    labels = tmp_path / "old.sens"
    labels.write_text("".join(f"* 0 {d} {int(i < 2)}\n" for i, d in enumerate(docs)))
    persona = Persona.objects.get(name="Maeve")
    report = services.import_run(
        collection=project.collection, fmt="sensitivity", path=labels, persona=persona
    )
    assert report.ok, [str(e) for e in report.errors]

    grades = [2, 1, 0, 1, 1, 2]
    sens = dict(zip(docs, ["yes", "yes", "no", "no", "no", "yes"], strict=True))
    judge_through_api(a, project, answers(dict(zip(docs, grades, strict=True)), sens))
    result = selectors.agreement_with_reference(project=project)
    (rel,) = [r for r in result if r["kind"] == "relevance"]
    assert rel["rows"][0].value == pytest.approx(
        cohen_kappa_score(grades, old_grades, labels=[0, 1, 2])
    )
    assert rel["rows"][0].n == 6 == ReferenceRelevance.objects.count()
    (sen,) = [r for r in result if r["kind"] == "sensitivity"]
    assert sen["persona"] == "Maeve" and sen["rows"][0].n == 6
    theirs = ["yes" if i < 2 else "no" for i in range(6)]
    assert sen["rows"][0].value == pytest.approx(
        cohen_kappa_score([sens[d] for d in docs], theirs, labels=["no", "yes"])
    )
    page = login(users["lead"]).get(reverse("agreement", args=[project.slug]))
    assert "Against imported judgments" in page.content.decode()


def test_a_round_can_be_built_from_the_imported_qrels(make_project, tmp_path):
    from annotate.models import Document

    project, _users = make_project(n_tasks=0)
    docs = list(Document.objects.order_by("docid").values_list("docid", flat=True)[:5])
    qrels = tmp_path / "old.qrels"
    qrels.write_text("".join(f"1 0 {d} {i % 2}\n" for i, d in enumerate(docs)))
    assert services.import_run(collection=project.collection, fmt="qrels-trec", path=qrels).ok
    round_ = projects.round_open(project=project, kind=Round.Kind.TRAINING)
    assert projects.project_tasks_from_reference(project=project, round_=round_) == 5
    again = projects.round_open(project=project)
    relevant = projects.project_tasks_from_reference(
        project=project, round_=again, only_relevant=True
    )
    assert relevant == 2


def test_hybrid_qrels_add_flagged_machine_labels_only_where_nobody_judged(training, users, login):
    from django.utils import timezone

    from annotate.models import Document, Topic
    from ranking.models import MachineLabel

    project, (a, _b), docs = training
    judge_through_api(a, project, answers(dict.fromkeys(docs, 2), dict.fromkeys(docs, "no")))
    topic = Topic.objects.get(number="1")
    unjudged = list(Document.objects.exclude(docid__in=docs).order_by("docid")[:2])
    for doc, relevant, p in ((unjudged[0], True, 0.91), (unjudged[1], False, 0.08)):
        MachineLabel.objects.create(
            project=project,
            topic=topic,
            document=doc,
            relevant=relevant,
            probability=p,
            model_version=3,
            labelled_at=timezone.now(),
        )
    judged = Document.objects.get(docid=docs[0])  # a machine label a person overrules
    MachineLabel.objects.create(
        project=project,
        topic=topic,
        document=judged,
        relevant=False,
        probability=0.2,
        model_version=3,
        labelled_at=timezone.now(),
    )
    human = exports.export_files(project, pictures=False)
    assert human["qrels.txt"].count("\n") == 6 and "machine-labels.txt" not in human
    hybrid = exports.export_files(project, pictures=False, machine_labels=True)
    lines = hybrid["qrels.txt"].splitlines()
    assert len(lines) == 8
    assert f"1 0 {unjudged[0].docid} 1" in lines and f"1 0 {unjudged[1].docid} 0" in lines
    assert f"1 0 {docs[0]} 2" in lines  # the person's grade, not the machine's 0
    assert hybrid["machine-labels.txt"].splitlines() == sorted(
        [f"1 0 {unjudged[0].docid} 1 0.910000 3", f"1 0 {unjudged[1].docid} 0 0.080000 3"],
        key=lambda line: line.split()[2],
    )
    client = login(users["lead"])
    url = reverse("api-project-export", args=[project.slug, "machine-labels.txt"])
    assert (
        client.get(url, {"machine_labels": "include"}).content.decode()
        == (hybrid["machine-labels.txt"])
    )
    assert client.get(url, {"machine_labels": "maybe"}).status_code == 400
