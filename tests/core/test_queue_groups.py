"""The archivist's queue grouped by thread: subjects normalised, participants shared."""

import pytest

from core.queue_groups import body_snippet, subject_normalised, threads_group


@pytest.mark.parametrize(
    "subject, expected",
    [
        ("Re: Salary review", "Salary review"),
        ("RE: re: FWD: Salary  review", "Salary review"),
        ("Fw: [Razor-users] Re: razor fails", "razor fails"),
        ("[SAdev] RE[2]: spam rules", "spam rules"),
        ("AW: SV: WG: Tr: Antw: Budget", "Budget"),
        ("Re:Re:tight", "tight"),
        ("Regarding the budget", "Regarding the budget"),  # a word, not a prefix
        ("Fwd:", ""),
        ("", ""),
        ("[a very long bracketed text that is not a list tag at all, surely] x", None),
    ],
)
def test_reply_forward_prefixes_and_list_tags_are_stripped(subject, expected):
    assert subject_normalised(subject) == (subject if expected is None else expected)


def _group(items):
    return [
        [i["id"] for i in t.items]
        for t in threads_group(items, subject=lambda i: i["s"], participants=lambda i: i["p"])
    ]


def test_one_thread_per_subject_among_people_who_share_a_participant():
    items = [
        {"id": 1, "s": "Budget", "p": ["ann@x", "bob@x"]},
        {"id": 2, "s": "Lunch", "p": ["ann@x"]},
        {"id": 3, "s": "Re: budget", "p": ["BOB@x", "cat@x"]},  # shares Bob with 1
        {"id": 4, "s": "RE: Budget", "p": ["cat@x", "dan@x"]},  # shares Cat with 3: with 1
        {"id": 5, "s": "Budget", "p": ["eve@y"]},  # the same subject among others
        {"id": 6, "s": "Fwd: Lunch", "p": ["zed@z"]},
        {"id": 7, "s": "Re: Lunch", "p": []},  # nobody: grouped by subject with 8
        {"id": 8, "s": "lunch", "p": []},
    ]
    assert _group(items) == [[1, 3, 4], [2], [5], [6], [7, 8]]
    first = threads_group(items, subject=lambda i: i["s"], participants=lambda i: i["p"])[0]
    assert first.subject == "Budget"
    assert first.participants == {"ann@x", "bob@x", "cat@x", "dan@x"}


def test_threads_follow_the_order_of_their_first_item():
    items = [
        {"id": 1, "s": "B", "p": ["a@x"]},
        {"id": 2, "s": "A", "p": ["a@x"]},
        {"id": 3, "s": "Re: B", "p": ["a@x"]},
    ]
    assert _group(items) == [[1, 3], [2]]
    assert _group([]) == []


def test_a_snippet_is_the_messages_own_words_cut_at_a_word():
    body = "On Mon, Ann wrote:\n> quoted salary\n>> older\n\nThe  budget is\nready.\n-- \nBob"
    assert body_snippet(body) == "The budget is ready. -- Bob"
    assert body_snippet("> only a quote") == "> only a quote"
    assert body_snippet("") == ""
    long = "word " * 100
    cut = body_snippet(long, length=50)
    assert cut.endswith("…") and len(cut) <= 51 and not cut[:-1].endswith(" ")
