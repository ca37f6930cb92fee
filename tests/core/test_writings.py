"""One rule for "the same string" (issue 31): every writing of a redacted value is found and
hidden, whatever its separators, case, quoting, wrapping, entities or invisible characters;
other values are left alone."""

import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core import writings
from core.writings import MARK, REDACTED, find, key, redact, redact_everywhere, scan

# Separators people (and mail software) put between the characters of a number or words.
SEPARATORS = [
    " ",
    "-",
    ".",
    "/",
    " - ",
    ") ",
    "(",
    "\n",
    "\n> ",
    "\n>> ",
    "\r\n> ",
    "\u00a0",  # no-break space
    "\u200b",  # zero-width space
    "\u00ad",  # soft hyphen
    "\u2060",  # word joiner
    "\u2011",  # non-breaking hyphen
    "&nbsp;",
    "&#45;",
    "&#x2D;",
    "_",
    "\t",
    "  ",
]


def _written(value: str, cuts: list[int], seps: list[str], case: list[bool]) -> str:
    """A writing of ``value``'s letters and digits with separators at ``cuts``."""
    chars = [c for c in value if c.isalnum()]
    out = []
    for i, c in enumerate(chars):
        if i and i in cuts:
            out.append(seps[cuts.index(i) % len(seps)])
        out.append(c.upper() if case[i % len(case)] else c.lower())
    return "".join(out)


VALUES = st.one_of(
    st.from_regex(r"\A[0-9]{6,19}\Z"),  # accounts, cards, national numbers
    st.from_regex(r"\A[A-Z]{2}[0-9]{2}[A-Z0-9]{11,26}\Z"),  # IBAN-shaped
    st.from_regex(r"\A[a-z]{3,9} [a-z]{3,12}\Z"),  # a name or phrase
    st.from_regex(r"\A[a-z0-9._]{3,12}@[a-z0-9]{2,10}\.(com|ie|org|co\.uk)\Z"),  # email
)


@settings(max_examples=400, deadline=None)
@given(
    value=VALUES,
    cuts=st.lists(st.integers(1, 30), max_size=8, unique=True),
    seps=st.lists(st.sampled_from(SEPARATORS), min_size=1, max_size=4),
    case=st.lists(st.booleans(), min_size=1, max_size=5),
    before=st.sampled_from(["", "see ", "acct ", "(", "\n> ", "RE_ payment to acct ", "#"]),
    after=st.sampled_from(["", " today", ".", ".eml", ")", "\n> thanks", "'s"]),
)
def test_every_writing_of_a_value_is_hidden(value, cuts, seps, case, before, after):
    assume(key(value))
    writing = _written(value, sorted(cuts), seps, case)
    text = before + writing + after
    out = redact_everywhere(text, [value])
    # nothing of the value is left to read: no run of its letters and digits survives
    left = writings.projection(out)
    assert key(value) not in left, (text, out)
    assert MARK in out
    assert scan([text], [value]) == {value}


# Many random digit strings read as a phone number somewhere (phonenumbers knows every
# country's plan), and those are the other rule's business: filtering them out is the point
# of the test's domain, so Hypothesis's health check on filtering is not a warning here (it
# failed a run with 9 kept of 59 drawn).
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    digits=st.from_regex(r"\A[1-9][0-9]{7,15}\Z"),
    extra=st.sampled_from(["0", "1", "9"]),
)
def test_a_longer_number_is_another_number(digits, extra):
    # whole edges: 12345678 is no writing inside 123456789 (nor 112345678)
    assume(not writings._phone_keys(digits, digits))
    assert find(digits + extra, [digits]) == []
    if extra != "0":
        assert find(extra + digits, [digits]) == []
    else:  # zeros in front pad a long number (fixed-width fields): the same number
        assert find(extra + digits, [digits]) == [(0, 1 + len(digits))]
    # a separator makes an edge: "1 2345678..." reads the value after the space
    assert (2, 2 + len(digits)) in find(extra + " " + digits, [digits])


def test_other_writings_of_a_value_that_people_and_software_make_are_hidden():
    """Issue 31's fresh-eye attacker: the account inside an IBAN, a padded number, a phone
    without its area code or extension, names in the other order, digits of other forms."""
    values = ["98765432101", "DE89 3704 0044 0532 0130 00", "(617) 555-0199"]
    values += ["Darragh Quinlivan", "(617) 555-0188 ext. 42"]
    for writing in (
        "Kto. 0532013000",
        "0098765432101",
        "call 555-0199",
        '"Quinlivan, Darragh" <dq@example.ie>',
        "QUINLIVAN Darragh",
        "617-555-0188",
        "+1 617 555 0188",
        "\U0001d7d4\U0001d7cf\U0001d7d5-\U0001d7d3\U0001d7d3\U0001d7d3-\U0001d7ce\U0001d7cf\U0001d7d7\U0001d7d7",
        "\u2076\u00b9\u2077 \u2075\u2075\u2075 \u2070\u00b9\u2079\u2079",
        "\u0669\u0668\u0667\u0666\u0665\u0664\u0663\u0662\u0661\u0660\u0661",
    ):
        out = redact_everywhere(f"see {writing} ok", values)
        assert out.startswith("see ") and out.endswith(" ok") and REDACTED in out, writing
        left = writings.projection(out.replace("dq@example.ie", ""))
        assert not any(c.isdigit() for c in left) and "quinlivan" not in left, (writing, out)
    # the bank's code alone and the last four digits are not the value (statements print them)
    assert redact_everywhere("BLZ 37040044, ending 2101", values) == "BLZ 37040044, ending 2101"


def test_the_issue_scenarios_are_hidden():
    phone, iban, account = "(617) 555-0199", "DE89 3704 0044 0532 0130 00", "98765432101"
    text = (
        "> Call me on (617) 555-0199 or 617 - 555 - 0199 or +1 617 555 0199 or +16175550199.\n"
        "> My IBAN is DE89370400440532013000, account 98765\n> 432101.\n"
        "RE_ payment to acct 98765432101.eml\n"
        "617&nbsp;555&#45;0199 and 6\u200b1\u200b7\u00ad5550199 and ６１７５５５０１９９\n"
    )
    out = redact_everywhere(text, [phone, iban, account])
    for part in ("617", "555", "0199", "DE89", "3704", "98765", "432101"):
        assert part not in out, out
    assert "(" + MARK not in out and "+" + MARK not in out  # the format is not shown either
    # nor where a span was ticked or typed, not found by the rule
    assert redact("call (617) 555-0199", [(6, 19)]) == f"call {REDACTED}"
    assert "Call me on" in out and "payment to acct" in out


def test_words_are_found_across_wraps_quotes_case_and_hyphens():
    text = (
        "Dear MAEVE\n> GALLAGHER, Ms Maeve Gal-\nlagher, maeve_gallagher and Maeveline Gallaghers"
    )
    out = redact_everywhere(text, ["Maeve Gallagher"])
    # "Gal-\nlagher, maeve_gallagher" also reads "Gallagher, Maeve": one mark for both
    assert out == f"Dear {REDACTED}, Ms {REDACTED} and Maeveline Gallaghers"
    assert "Maeveline" in out and "Gallaghers" in out  # other words are other words


def test_an_email_address_is_found_in_any_case():
    out = redact_everywhere(
        "From JOHN.Smith@Example.COM and john.smith@example.com.", ["john.smith@example.com"]
    )
    assert "smith" not in out.lower() and out.endswith(".")


def test_a_phone_is_found_with_or_without_its_country_and_prefixes():
    for writing in ("+16175550199", "1-617-555-0199", "001 617 555 0199", "011 1 617 555 0199"):
        assert "0199" not in redact_everywhere(f"tel {writing} ok", ["(617) 555-0199"]), writing
    for writing in ("+44 (0)20 7946 0123", "+442079460123", "020 7946 0123", "0044 20 7946 0123"):
        assert "0123" not in redact_everywhere(f"tel {writing} ok", ["020 7946 0123"]), writing


def test_other_values_stay_readable():
    text = "Order 6175550198, ISBN 978-0-306-40615-7, joann@example.com, annex"
    assert redact_everywhere(text, ["(617) 555-0199", "ann", "john.smith@example.com"]) == text


def test_redaction_takes_whole_words_and_leaves_no_term():
    text = "acct12345678 and 4111 1111 1111 1111."
    out = redact(text, [(4, 12), (17, 36)])
    assert "acct" not in out and "1111" not in out and out.endswith(".")
    assert MARK in out
    assert redact("abc", []) == "abc"


def test_every_redacted_span_leaves_the_same_mark_whatever_its_length():
    short = redact("PIN 7302 now", [(4, 8)])
    long = redact("PIN 4821 5678 9012 now", [(4, 18)])
    assert short == long == f"PIN {REDACTED} now"
    assert redact_everywhere("PIN 7302 now", ["7302"]) == redact_everywhere(
        "PIN 4821-5678-9012 now", ["4821 5678 9012"]
    )


def test_a_value_with_no_letter_or_digit_hides_nothing():
    assert redact_everywhere("nothing -- here", {"--", ""}) == "nothing -- here"
    assert key("(--)") == "" and writings.keys("") == set()


def test_the_scanner_agrees_with_find():
    texts = ["a 98765 432101 b", "a 987654321010 b", "no", "x 98765432101y"]
    for t in texts:
        assert bool(scan([t], ["98765432101"])) == bool(find(t, ["98765432101"])), t
    assert [bool(find(t, ["98765432101"])) for t in texts] == [True, False, False, True]


def test_the_canonical_key_is_the_letters_and_digits():
    assert key("(617) 555-0199") == key("617.555.0199") == "6175550199"
    assert key("DE89 3704 0044 0532 0130 00") == "de89370400440532013000"
    assert key("Maeve&nbsp;Gallagher") == "maevegallagher"
    assert re.fullmatch(r"[0-9]+", key("６１７"))


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(st.from_regex(r"\A[0-9a-z]{3,12}\Z"), min_size=201, max_size=260, unique=True),
    picks=st.lists(st.integers(0, 259), max_size=6),
    noise=st.text(alphabet="abc0123 -\n>", max_size=200),
)
def test_many_values_are_looked_up_as_one_substring_test_each(values, picks, noise):
    # over 200 keys the scanner looks places up by their first characters; the same keys
    chosen = [values[i % len(values)] for i in picks]
    text = noise + " " + " ; ".join(chosen) + " " + noise
    s = writings.scanner(values)
    projected = writings.projection(text)
    assert sorted(s.present(projected)) == sorted(k for k in s.by_key if k in projected)
    assert set(chosen) <= scan([text], values)
