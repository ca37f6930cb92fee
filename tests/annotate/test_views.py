import re

import pytest
from django.urls import reverse

from annotate.models import Document, Job
from tests.conftest import FIXTURES

EDGE = FIXTURES / "emails" / "edge"

PAGES = ["collection-list", "collection-detail", "document-detail", "search"]


def url_for(name, doc):
    if name == "collection-list":
        return reverse(name)
    if name == "document-detail":
        return reverse(name, args=[doc.collection.slug, doc.pk])
    return reverse(name, args=[doc.collection.slug])


@pytest.fixture
def doc(sample_collection):
    return Document.objects.filter(collection=sample_collection).first()


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_users_are_sent_to_login(client, doc, name):
    response = client.get(url_for(name, doc))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", PAGES)
@pytest.mark.parametrize(
    ("role", "status"),
    [("lead", 200), ("archivist", 200), ("annotator", 404), ("searcher", 404), ("norole", 404)],
)
def test_browsing_is_for_leads_and_archivists_only(login, users, doc, name, role, status):
    assert login(users[role]).get(url_for(name, doc)).status_code == status


@pytest.mark.parametrize("role", ["annotator", "searcher", "archivist", "norole"])
def test_import_pages_are_for_leads_only(login, users, role):
    client = login(users[role])
    assert client.get(reverse("import")).status_code == 404
    job = Job.objects.create(kind=Job.Kind.IMPORT)
    assert client.get(reverse("job-detail", args=[job.pk])).status_code == 404


def test_every_page_sends_security_headers(login, users, doc):
    response = login(users["lead"]).get(url_for("document-detail", doc))
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "object-src 'none'" in csp
    assert "unsafe-inline" not in csp
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"


def test_hostile_email_renders_inert(login, users, collection, tmp_path):
    from annotate import services

    box = tmp_path / "x"
    box.mkdir()
    (box / "xss.eml").write_bytes((EDGE / "xss.eml").read_bytes())
    (box / "att.eml").write_bytes((EDGE / "attachments.eml").read_bytes())
    services.import_run(collection=collection, fmt="emails", path=box)
    client = login(users["lead"])
    for d in Document.objects.filter(collection=collection):
        html = client.get(reverse("document-detail", args=[collection.slug, d.pk])).content.decode()
        body = html.split("<main>", 1)[1]
        # The only tags in the page body are the template's own: nothing from the message.
        assert "<script" not in body and "<svg" not in body and "<img" not in body
        assert not re.search(r"<a [^>]*javascript:", body)
        assert "onerror=" not in body.replace("onerror=alert(&#x27;subject&#x27;)", "")
    xss = Document.objects.get(collection=collection, docid="x/xss.eml")
    html = client.get(reverse("document-detail", args=[collection.slug, xss.pk])).content.decode()
    assert "&lt;script&gt;alert(&#x27;body&#x27;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(&#x27;subject&#x27;)&gt;" in html


def test_document_page_shows_headers_body_and_attachments(login, users, collection, tmp_path):
    from annotate import services

    box = tmp_path / "a"
    box.mkdir()
    (box / "att.eml").write_bytes((EDGE / "attachments.eml").read_bytes())
    services.import_run(collection=collection, fmt="emails", path=box)
    d = Document.objects.get(collection=collection)
    html = (
        login(users["archivist"])
        .get(reverse("document-detail", args=[collection.slug, d.pk]))
        .content.decode()
    )
    for expected in (
        "Report and picture",
        "Erin &lt;erin@example.org&gt;",
        "notes.txt",
        "The budget is 1200 euros.",
        "passwd.png",
        "(not shown)",
        "Inner body text about budgets.",
    ):
        assert expected in html, expected


def test_collection_page_lists_counts_and_jobs(login, users, sample_collection):
    Job.objects.create(kind=Job.Kind.IMPORT, collection=sample_collection, message="39 created")
    html = (
        login(users["lead"])
        .get(reverse("collection-detail", args=[sample_collection.slug]))
        .content.decode()
    )
    assert "39 created" in html and "Not fully decoded" in html
    assert "not built" in html


def test_search_without_index_explains_itself(login, users, sample_collection):
    html = (
        login(users["lead"])
        .get(reverse("search", args=[sample_collection.slug]), {"q": "razor"})
        .content.decode()
    )
    assert "no search index yet" in html


def test_upload_queues_an_import_job_and_reports_problems(
    login, users, collection, settings, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.CELERY_TASK_ALWAYS_EAGER = True
    from config.celery import app

    app.conf.task_always_eager = True
    client = login(users["lead"])
    mbox = (
        b"From a Mon Sep  2 10:00:00 2002\nFrom: a@example.org\nSubject: one\n\nbody\n"
        b"\nFrom b Mon Sep  2 11:00:00 2002\nnot a message\n"
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("import"),
            {
                "collection": collection.pk,
                "format": "emails",
                "new_kind": "email",
                "file": SimpleUploadedFile("../../etc/inbox.mbox", mbox),
            },
        )
    app.conf.task_always_eager = False
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert response.status_code == 302 and response["Location"] == reverse(
        "job-detail", args=[job.pk]
    )
    assert job.status == Job.Status.FAILED or job.status == Job.Status.SUCCEEDED
    assert job.report["created"] == 1 and job.report["error_count"] == 1
    assert job.report["issues"][0]["source"] == "inbox.mbox"
    assert job.params["label"] == "inbox.mbox"
    assert not list(settings.SASC_UPLOAD_DIR.iterdir()), "the upload is removed after import"
    html = client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "no RFC-822 header lines found" in html


def test_upload_form_errors_name_the_problem(login, users):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = login(users["lead"]).post(
        reverse("import"),
        {
            "format": "sensitivity",
            "new_kind": "email",
            "file": SimpleUploadedFile("s.txt", b"x"),
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Choose a collection or name a new one." in html
    assert "Sensitivity labels need a persona." in html


def test_a_personas_upload_naming_a_new_collection_is_refused_and_makes_none(login, users):
    """Personas belong to no collection; a name typed in "New collection name" beside a
    personas file made an empty collection (fresh-eye finding)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotate.models import Collection, Job

    response = login(users["lead"]).post(
        reverse("import"),
        {
            "format": "personas",
            "new_collection": "Oops",
            "new_kind": "email",
            "file": SimpleUploadedFile("p.json", b'[{"name": "Ann"}]'),
        },
    )
    assert response.status_code == 200
    assert "Personas are shared by every collection" in response.content.decode()
    assert not Collection.objects.exists() and not Job.objects.exists()


def test_leads_manage_sasc_models_in_the_admin_and_others_cannot(login, users, doc):
    url = reverse("admin:annotate_document_changelist")
    assert login(users["lead"]).get(url).status_code == 200
    response = login(users["archivist"]).get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_upload_over_the_limit_is_refused_by_the_form(login, users, collection, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.SASC_MAX_IMPORT_FILE_BYTES = 1024 * 1024
    response = login(users["lead"]).post(
        reverse("import"),
        {
            "collection": collection.pk,
            "format": "emails",
            "new_kind": "email",
            "file": SimpleUploadedFile("big.mbox", b"x" * (1024 * 1024 + 1)),
        },
    )
    assert response.status_code == 200
    assert "big.mbox is 1.0 MB; the limit is 1 MB." in response.content.decode()
    assert not Job.objects.exists()


def test_upload_takes_outlook_messages_and_eaxs_accounts_with_their_folders(
    login, users, collection, settings, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotate.models import Document
    from config.celery import app
    from tests.msgwriter import MsgMessage, build_msg

    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = True
    client = login(users["lead"])
    eaxs = (
        b'<?xml version="1.0"?><Account xmlns="https://github.com/StateArchivesOfNorthCarolina/'
        b'tomes-eaxs-2"><GlobalId>a</GlobalId><Folder><Name>Inbox</Name><Message>'
        b"<LocalId>7</LocalId><MessageId>&lt;e1@x&gt;</MessageId><From>ann@x.org</From>"
        b"<Subject>Minutes</Subject><SingleBody><ContentType>text/plain</ContentType>"
        b"<BodyContent><Content>Board minutes.</Content></BodyContent></SingleBody>"
        b"</Message></Folder></Account>"
    )
    uploads = [
        SimpleUploadedFile("account.xml", eaxs),
        SimpleUploadedFile("reply.msg", build_msg(MsgMessage(subject="Re: Minutes", body="ok"))),
    ]
    try:
        for upload in uploads:
            with django_capture_on_commit_callbacks(execute=True):
                client.post(
                    reverse("import"),
                    {
                        "collection": collection.pk,
                        "format": "emails",
                        "new_kind": "email",
                        "file": upload,
                    },
                )
    finally:
        app.conf.task_always_eager = False
    docs = {d.docid: d for d in Document.objects.filter(collection=collection)}
    assert docs["account.xml#7"].folder == "Inbox"
    assert docs["account.xml#7"].body == "Board minutes."
    assert docs["reply.msg"].body == "ok"
    # The Outlook reply joins the EAXS message's thread by its subject.
    assert docs["reply.msg"].thread_key == docs["account.xml#7"].thread_key != ""
    assert ".pst" in client.get(reverse("import")).content.decode()
