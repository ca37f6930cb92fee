from core.parsing.mail_threads import (
    MAX_REFERENCES,
    ThreadInput,
    assign_threads,
    base_subject,
    id_list,
    normalise_id,
)


def _m(key, mid, subject, *, parent="", refs=(), when="2001-01-01"):
    return ThreadInput(key, mid, parent, tuple(refs), subject, (when, str(key)))


def test_reply_headers_join_a_thread_even_when_the_middle_message_is_missing():
    keys = assign_threads(
        [
            _m(1, "root@x", "Budget"),
            # The reply to the (absent) message 2 names the root in References.
            _m(3, "c@x", "Re: Re: Budget", parent="b@x", refs=("root@x", "b@x")),
            _m(4, "d@x", "Lunch?"),
        ]
    )
    assert keys[1] == keys[3]
    assert keys[4] != keys[1]


def test_a_reply_without_headers_joins_its_subjects_thread_but_two_originals_do_not():
    keys = assign_threads(
        [
            _m(1, "a@x", "Q3 numbers", when="2001-01-01"),
            _m(2, "b@x", "RE: [finance] Q3 numbers", when="2001-01-02"),
            _m(3, "c@x", "Minutes"),
            _m(4, "d@x", "Minutes"),
            _m(5, "e@x", ""),
            _m(6, "f@x", "Re:"),
        ]
    )
    assert keys[1] == keys[2]
    assert keys[3] != keys[4]  # two meetings' minutes are not one thread
    assert keys[5] != keys[6]  # empty subjects join nothing


def test_a_message_linked_by_headers_is_not_pulled_into_another_thread_by_its_subject():
    keys = assign_threads(
        [
            _m(1, "a@x", "Status"),
            _m(2, "b@x", "Re: Status", parent="other-root@x"),
            _m(3, "c@x", "Re: Status"),
        ]
    )
    assert keys[1] == keys[3]
    assert keys[2] != keys[1]


def test_the_thread_key_is_stable_when_more_of_the_thread_arrives():
    first = assign_threads([_m(1, "a@x", "Plan", when="2001-01-01")])
    later = assign_threads(
        [
            _m(2, "b@x", "Re: Plan", parent="a@x", when="2001-01-02"),
            _m(1, "a@x", "Plan", when="2001-01-01"),
        ]
    )
    assert later[1] == later[2] == first[1]


def test_messages_without_a_message_id_still_get_their_own_thread():
    keys = assign_threads([_m(1, "", "One"), _m(2, "", "Two")])
    assert keys[1] and keys[2] and keys[1] != keys[2]


def test_subject_prefixes_in_many_languages_and_list_tags_are_removed():
    assert base_subject("AW: WG: [team] Fwd:  Hello   World") == ("hello world", True)
    assert base_subject("SV: Re[2]: Plan") == ("plan", True)
    assert base_subject("[team] Plan") == ("plan", False)
    assert base_subject("Return of the plan") == ("return of the plan", False)


def test_reference_lists_keep_the_root_and_the_nearest_ancestors_only():
    ids = [f"<m{i}@x>" for i in range(500)]
    kept = id_list(" ".join(ids) + " (a comment) <m3@x>")
    assert len(kept) == MAX_REFERENCES
    assert kept[0] == "m0@x" and kept[-1] == "m499@x"
    assert normalise_id("  <abc@x> ") == "abc@x"
    assert normalise_id("not an id") == ""


def test_a_subject_joins_only_messages_that_share_a_participant():
    def m(key, subject, *people):
        return _m(key, f"{key}@x", subject)._replace(participants=frozenset(people))

    keys = assign_threads(
        [
            m(1, "Salary review", "ann@corp", "bob@corp"),
            m(2, "Re: salary review", "bob@corp", "cat@corp"),
            m(3, "Salary review", "eve@else", "fay@else"),  # another team's
            m(4, "RE: Salary review", "fay@else", "gus@else"),
        ]
    )
    assert keys[1] == keys[2] and keys[3] == keys[4]
    assert keys[1] != keys[3]
