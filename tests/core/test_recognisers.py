"""The offline recognisers (issue 20): checksums, formats, lexicons, overlaps, redaction,
and their precision and recall on the labelled fixtures (numbers in docs/redaction.md)."""

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import recognisers
from core.recognisers import recognise

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "entities.txt"
DEV = FIXTURES.parent / "entities_dev.txt"  # written while the recognisers were rebuilt
EMAILS = FIXTURES.parent / "emails"


def _kinds(text, lexicons=None):
    return [(e.kind, e.text) for e in recognise(text, lexicons)]


@pytest.mark.parametrize(
    ("number", "valid"),
    [("4111111111111111", True), ("4111111111111112", False), ("378282246310005", True)],
)
def test_luhn(number, valid):
    assert recognisers.luhn_valid(number) is valid


def test_iban_checks_the_country_length_and_mod_97():
    assert recognisers.iban_valid("GB82 WEST 1234 5698 7654 32")
    assert not recognisers.iban_valid("GB82 WEST 1234 5698 7654 33")  # check digits wrong
    assert not recognisers.iban_valid("GB82 WEST 1234 5698 7654 3")  # too short for GB


IBANS = [
    "GB29 NWBK 6016 1331 9268 19",
    "IE29AIBK93115212345678",
    "NO93 8601 1117 947",  # the shortest, 15
    "MT84 MALT 0110 0001 2345 MTLC AST0 01S",
    "LC55 HEMM 0001 0001 0012 0012 0002 3015",  # 32
    "SE45 5000 0000 0583 9825 7466",
    "BR97 0036 0305 0000 1000 9795 493P 1",
    "UA21 3223 1300 0002 6007 2335 6600 1",
    "KZ86 125K ZT50 0410 0100",
    "EG38 0019 0005 0000 0000 2631 8000 2",
    "SC18 SSCB 1101 0000 0000 0000 1497 USD",
    "ME25505000012345678951",
    "SD21 2901 0501 2340 01",
    "FO62 6460 0001 6316 34",
]


@pytest.mark.parametrize("iban", IBANS)
def test_an_iban_of_any_registry_country_is_found_whole(iban):
    assert recognisers.iban_valid(iban)
    assert _kinds(f"Wire it to {iban} by Friday.") == [("iban", iban)]
    assert _kinds(f"IBAN: {iban}. Thanks") == [("iban", iban)]


def test_the_iban_lengths_come_from_the_registry():
    assert recognisers.IBAN_LENGTHS["GB"] == 22 and recognisers.IBAN_LENGTHS["NO"] == 15
    assert len(recognisers.IBAN_LENGTHS) >= 80  # the SWIFT registry, not a hand-kept subset


@pytest.mark.parametrize(
    "text",
    [
        "The IBAN GB29 NWBK 6016 1331 9268 18 bounced.",  # check digits
        "Our BIC is AIBKIE2D and the sort code 93-11-52.",
        "VAT numbers IE6388047V, GB123456789 and DE123456789.",
        "Part AB12 CD34 EF56 GH78 in the catalogue.",  # no such country
        "Room NO12 3456 7890 for Oslo.",  # too short for Norway
    ],
)
def test_strings_that_are_not_ibans_are_left_alone(text):
    assert [k for k, _ in _kinds(text) if k == "iban"] == []


def test_a_card_number_must_pass_luhn_and_a_routing_number_the_aba_checksum():
    assert _kinds("card 4111 1111 1111 1111 ok") == [("card", "4111 1111 1111 1111")]
    assert _kinds("card 4111 1111 1111 1112 ok") == []
    assert _kinds("routing 021000021") == [("account", "021000021")]
    assert _kinds("routing 123456789") == []


CARDS = [
    "4526 0181 5908 3012",  # Visa, 4-4-4-4
    "4661318609133",  # Visa, 13 digits
    "4909 9603 0824 6281 946",  # Visa, 19 digits, 4-4-4-4-3
    "5182-1993-5181-9098",  # Mastercard, dashes
    "2221 1948 7574 9111",  # Mastercard 2-series, both ends of the range
    "2720 8625 2760 1890",
    "3449 746507 52919",  # American Express, 4-6-5
    "3770-342366-71271",
    "6011 6842 6846 5635",  # Discover
    "6442 1223 3079 2446",
    "6578 6666 1760 3136",
    "6221 2672 1590 1096",  # Discover / UnionPay 622126-622925
    "6011 6245 9571 1777 744",
    "3528 1215 4728 0389",  # JCB 3528-3589
    "3589528084148520",
    "3007 500474 3957",  # Diners Club, 4-6-4
    "38726516761224",
    "3920 297299 7529",
    "6234 8395 4862 0570",  # UnionPay
    "62279180588871800",
    "5018 3340 1877",  # Maestro, 12 digits
    "6304 8017 5989 8340",  # Maestro / Laser
    "6759 7887 8384 8372 62",  # Maestro UK, 18 digits
    "2200 5058 7706 5898",  # Mir
    "6042 6462 8897 5144",  # RuPay
    "8141 7058 6492 0837",
    "5060 9924 5040 0084",  # Verve
    "650010433532650200",
    "9792 1462 0168 4937",  # Troy
    "5019 4072 2470 4556",  # Dankort
]


@pytest.mark.parametrize("number", CARDS)
def test_a_card_of_every_issuer_is_found_in_its_grouping(number):
    assert _kinds(f"Please charge {number}, exp 05/27.") == [("card", number)]
    assert _kinds(f"card: {number} 05/27") == [("card", number)]


@pytest.mark.parametrize(
    "text",
    [
        "The card 4526 0181 5908 3013 failed the check.",  # Luhn
        "USPS 9400 1000 0000 0000 0000 00 and 9205 5900 1234 5678 9012 34",  # no card inside
        "The IMEI is 35 209900 176148 1, or 490154203237518.",  # Luhn-valid, no issuer length
        "ISBN 978-0-306-40615-7, EAN 9780306406157.",
        "Serial 1234-5678-9012-3456 on the unit.",  # no issuer's range
        "Order 2001-10-15-0001 is confirmed.",
        "Card 4526 0181-5908 3012 with mixed separators.",  # not a grouping issuers print
        "A total of 1.4526018159083012 units.",
    ],
)
def test_digit_runs_that_are_not_cards_are_left_alone(text):
    assert [k for k, _ in _kinds(text) if k == "card"] == []


def test_social_security_numbers_skip_the_never_issued_areas():
    assert _kinds("SSN 123-45-6789.") == [("national_id", "123-45-6789")]
    assert _kinds("ticket 666-12-3456 and 900-12-3456") == []


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("My SSN is 536-90-4399 for the form.", "536-90-4399"),
        ("SSN 123456789, keep it safe.", "123456789"),
        ("Her social security no. is 078 05 1121.", "078 05 1121"),
        ("His NI number is AB 12 34 56 C.", "AB 12 34 56 C"),
        ("National Insurance: JG103724A.", "JG103724A"),
        ("Her PPS number is 7808820F.", "7808820F"),
        ("PPSN: 3139221DA for Revenue.", "3139221DA"),
        ("My PPS No. is 4480013B.", "4480013B"),
        ("Personal Public Service Number 4099783NA.", "4099783NA"),
    ],
)
def test_national_identifiers_are_found_with_their_checks(text, number):
    assert _kinds(text) == [("national_id", number)]


@pytest.mark.parametrize(
    "text",
    [
        "The wallet number 078-05-1120 is a famous fake.",  # stdnum's list of advertised SSNs
        "Batch 000-12-3456 and batch 123-00-4567 are labels.",
        "SSN 123-45-0000 is not a number.",
        "The HMRC example QQ 12 34 56 C is not a real NI number.",
        "VAT is GB 12 34 56 A on the invoice.",
        "PPS number 7808820E has a wrong check letter.",
        "The part code 7808820F is in the catalogue.",  # no PPS without its context word
    ],
)
def test_look_alikes_of_national_identifiers_are_left_alone(text):
    assert [k for k, _ in _kinds(text) if k == "national_id"] == []


def test_an_international_number_is_one_span_subscriber_part_included():
    # Fresh-eye finding on the demo: only "+353 21" was offered, so a redaction accepted as
    # suggested left the subscriber's digits readable and searchable.
    assert _kinds("Tel.: +353 21 4933200 / Fax: +353 21 4933201") == [
        ("phone", "+353 21 4933200"),
        ("phone", "+353 21 4933201"),
    ]
    assert _kinds("Berlin: +49 30 12345678.") == [("phone", "+49 30 12345678")]


@pytest.mark.parametrize(
    "address",
    [
        "o'brien@example.ie",
        "first.last+tag@sub.example.co.uk",
        "j.doe@xn--mller-kva.de",  # punycode
        "anna@müller.de",  # an IDN as itself
        "ops@company.technology",  # a long top-level domain
        "a#b@example.com",
        "tom&jerry@example.net",
        "user/dept@example.org",
        "~sysadmin@example.org",
        "x!y@example.org",
        "me=you@example.com",
        "100%real@example.com",
        "{list}@example.org",
        "jane*doe@example.com",
        "b^c@example.com",
        "first.m.last@dept.example-company.com",
    ],
)
def test_an_address_using_any_atext_character_is_found_whole(address):
    assert _kinds(f"Write to {address}.") == [("email", address)]
    assert _kinds(f"<{address}>, '{address}'") == [("email", address)] * 2


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("See http://lists.example.com/x?user=ann@example.com today", "ann@example.com"),
        ("unsubscribe.asp?sid= 12535&email=ann01@example.com>", "ann01@example.com"),
        ("http://www.mail-archive.com/crypto@example.com/msg02554.html", "crypto@example.com"),
        ("mailto:ann@example.com.", "ann@example.com"),
        ("|devel@lists.example.net |", "devel@lists.example.net"),
        # found whole, as RFC 5322 allows (a VERP bounce address)
        ("From: list-bounces+ann=oz.net@example.org", "list-bounces+ann=oz.net@example.org"),
    ],
)
def test_an_address_in_a_link_or_a_table_is_the_address_alone(text, address):
    assert _kinds(text) == [("email", address)]


def test_addresses_joined_by_a_bar_are_both_found():
    found = _kinds("set to editor@example.com|apps@example.com now")
    assert found == [("email", "editor@example.com"), ("email", "apps@example.com")]


@pytest.mark.parametrize(
    "text",
    [
        "Follow @enron_news on the site.",
        "The version is 1.2@build3 on staging.",
        "Send it to john..doe@example.com (a typo).",
        "Part image001.png@01C8AB12.34567890 of the message.",
        'whitelist_from *@example.com, "*@isp.com"',  # a pattern, not an address
    ],
)
def test_strings_that_are_not_addresses_are_left_alone(text):
    assert [k for k, _ in _kinds(text) if k == "email"] == []


PHONES = [
    # US: parentheses, dots, +1 and 1-, 011 out of the US, extensions
    "(617) 253-1000",
    "617.253.1000",
    "+1 212 555 0123",
    "1 (800) 642-7676",
    "1-713-853-5620",
    "713/853-5620",
    "011 353 1 234 5678",
    "713-853-5620 x123",
    "(212) 555-7788 ext. 45",
    "713 853 3848 ext 4567",
    "+1 713 853 6062 extension 12",
    # GB: a trunk prefix in parentheses, 00, an area code in parentheses, mobiles
    "+44 (0)20 7946 0958",
    "0044 131 496 0000",
    "(0117) 496 0123",
    "07911 123456",
    "01223 336000",
    # IE: short area codes, 00353, mobiles, freephone
    "(01) 671 1234",
    "+353 (0)1 671 1234",
    "00353 87 234 5678",
    "021 427 1234",
    "091 524411",
    "1800 123 456",
    # EU, with the country code and nationally with a trunk 0 (slashes, dashes)
    "+49 (0)30 1234 5678",
    "089/1234567",
    "0049 69 12345678",
    "+33 1 42 68 53 00",
    "01 42 68 53 00",
    "020-555 1234",
    "02/512 34 56",
    "01/534 00 00",
    "08-123 456 78",
    "+39 06 6988 1234",
    "+34 912 345 678",
    "+48 22 123 45 67",
    "+420 212 345 678",
    "+372 612 3456",
    # with the country code, numbers of numbering plans since changed (London's 0171 before
    # 2000, Moscow's 095 before 2005, Brazil's 8-digit mobiles): an archive's old mail has them
    "+44 171 946 0958",
    "+7 095 768-7067",
    "+55-21-9135-3679",
]


@pytest.mark.parametrize("number", PHONES)
def test_a_phone_number_is_found_whole_as_written(number):
    assert _kinds(f"Call me on {number} tomorrow.") == [("phone", number)]
    assert _kinds(f"Tel.: {number}. Fax: none") == [("phone", number)]


@pytest.mark.parametrize(
    "text",
    [
        "ISBN 978-0-306-40615-7 and ISBN 0-306-40615-2, EAN 9780306406157.",
        "USPS 9400 1000 0000 0000 0000 00; UPS 1Z 999 AA1 01 2345 6784; FedEx 7489 1234 5678.",
        "Order # 1002-3344-5566, invoice 100234567, PO 4500012345, ticket 34567890.",
        "Case No. 01-12345-H, docket 4:01-cv-03624, case 02-10-5533.",
        "Meeting on 10/12/2001 from 10:30 to 11:45; deadline 2001-10-15; 01.11.2001.",
        "Published: Aug 02 2002 12:00AM.",
        "Server 192.168.100.200, gateway [62.226.214.36], DNS 208.67.222.222.",
        "Kernel 2.4.18-14, build 5.0.2195.6717, load 0.10 0.11 0.10.",
        "It cost $1,234,567.89, or EUR 2.345.678,00; the Dow at 8542.48 69.37.",
        "The zip code is 77002-1234; p = 0.0462364; unix time 1003145678.",
        "Serial numbers 123-456-7890 to 123-456-7899 are reserved.",
        "HELO port-216-3073879-ds200.example.net",
        "http://example.com/detail/-/0596003161/ref and ?item=2057697313&x=1",
        "The wallet number 078-05-1120 is a famous fake.",
        "Confirmation 2125550123 is attached; row 45667223 25,000 345.50 1234567890.",
        "md: hda5's event counter: 00000004 [events: 00000002]",
    ],
)
def test_look_alikes_of_phone_numbers_are_left_alone(text):
    assert [t for k, t in _kinds(text) if k == "phone"] == []


def test_a_caller_id_is_a_phone_and_another_id_is_not():
    assert _kinds("Caller ID: 617-253-1000") == [("phone", "617-253-1000")]
    assert _kinds("Customer ID: 617-253-1000") == []


@pytest.mark.parametrize(
    "iban",
    ["SE45 5000 0000 0583 9825 7466", "LB62 0999 0000 0001 0019 0122 9114", "NO9386011117947"],
)
def test_an_iban_wins_over_a_phone_reading_of_its_digits(iban):
    assert _kinds(f"Account {iban}, thanks") == [("iban", iban)]


def test_the_phone_matcher_reads_only_runs_of_digits():
    recognisers._phone_matches.cache_clear()
    recognise("Call on Monday 10:30 about order 12 and the 2001 plan.\n" * 50)
    recognise("Deal 45667223, ticket 1234-5678-90, 2125550123, 123 4567.")
    recognise("0.000  0.075  0.050\n0.025  0.000\non 07.10.2002 and 02/08/2002 at 192.168.100.200")
    assert recognisers._phone_matches.cache_info().misses == 0
    recognise("Call 617-253-1000, or 617-253-1000, today")  # the same window: read once
    assert recognisers._phone_matches.cache_info().hits == 1


def test_a_date_is_a_date_of_birth_only_after_words_that_say_so():
    assert _kinds("born on March 3, 1958 in Omaha") == [("dob", "March 3, 1958")]
    assert _kinds("meeting on March 3, 2001") == []


def test_a_persona_lexicon_finds_its_phrases_as_whole_words():
    found = recognise("Ask Project Raptor about it; raptors fly.", {"projects": ["project raptor"]})
    assert [(e.kind, e.text, e.label) for e in found] == [("persona", "Project Raptor", "projects")]
    assert recognisers.lexicon_terms("# people\nKen Lay, Jeff Skilling\n\nRaptor\n") == [
        "Ken Lay",
        "Jeff Skilling",
        "Raptor",
    ]


def test_overlapping_claims_keep_the_longer_span():
    found = recognise("Call +1 713 853 6062 ext. 3 today")
    assert [(e.kind, e.text) for e in found] == [("phone", "+1 713 853 6062 ext. 3")]


def test_texts_entities_runs_the_recognisers_once_per_text_with_the_same_answer():
    texts = [(i, "body", line) for i, line in enumerate(FIXTURES.read_text().splitlines())]
    texts += [(-1, "subject", ""), (-2, "body", "Call Dr Raptor at 713-853-5620 re chemo")]
    lexicons = {
        7: {"projects": ["raptor", "Project Raptor"], "people": ["Kim", "Vince Kaminski"]},
        9: {"words": ["chemo", "713-853-5620", "cell"]},  # a term inside a phone loses to it
    }
    expected = []
    for key, field, text in texts:  # what texts_entities did before: recognise per persona
        expected.extend((key, None, field, e) for e in recognise(text))
        for persona_id, named in lexicons.items():
            for e in recognise(text, named):
                if e.kind == "persona":
                    expected.append((key, persona_id, field, e))
    found = recognisers.texts_entities((texts, lexicons))
    assert found == expected
    assert sum(1 for _k, persona, _f, _e in found if persona) >= 3


def test_precision_and_recall_on_the_labelled_fixtures():
    scores = recognisers.evaluate(FIXTURES.read_text().splitlines())
    overall = scores["all"]
    assert overall.gold >= 60
    # docs/redaction.md reports the figures; a change to the recognisers that lowers them
    # fails here
    assert overall.precision >= 0.95 and overall.recall >= 0.95
    for kind in ("card", "iban", "national_id", "email", "dob"):
        assert scores[kind].precision == 1.0 and scores[kind].recall == 1.0, scores[kind]


def test_precision_and_recall_on_the_development_set():
    lines = DEV.read_text().splitlines()
    texts = [line for line in lines if line.strip() and not line.startswith("#")]
    assert len(texts) >= 150
    assert sum(1 for line in texts if "[[" not in line) >= 60  # negatives: look-alikes
    scores = recognisers.evaluate(lines)
    # docs/redaction.md reports the table; the set was written by the engineer who tuned the
    # recognisers on it, so these are optimistic figures, not a held-out estimate
    assert scores["all"].precision >= 0.95 and scores["all"].recall >= 0.95, scores["all"]
    measured = [kind for kind in recognisers.KINDS if scores[kind].gold >= 10]
    assert set(measured) >= {"card", "iban", "national_id", "email", "phone"}
    for kind in measured:
        assert scores[kind].precision >= 0.95 and scores[kind].recall >= 0.95, scores[kind]


def _flat_pattern(terms):
    """``lexicon_pattern`` before its alternation was grouped by first character."""
    parts = {r"\s+".join(re.escape(w) for w in t.lower().split()) for t in terms if t.split()}
    body = "|".join(sorted(parts, key=len, reverse=True))
    return re.compile(rf"(?<![\w@])(?:{body})(?:e?s)?(?![\w@])", re.IGNORECASE)


def _matches(pattern, text):
    return [(m.start(), m.end()) for m in pattern.finditer(text)]


LEXICON_WORDS = ["car", "care", "career", "cares", "Care Home", "chapter 11", "401(k)", "ms", "a"]


@given(
    st.lists(st.sampled_from(LEXICON_WORDS), min_size=1, max_size=6),
    st.lists(
        st.sampled_from([*LEXICON_WORDS, " ", "  ", "\n", "s", "es", "@", "-", "x", "CARE", "K"]),
        max_size=20,
    ).map("".join),
)
@settings(max_examples=600, deadline=None, derandomize=True)
def test_a_lexicon_pattern_matches_as_the_flat_alternation(terms, text):
    assert _matches(recognisers.lexicon_pattern(terms), text) == _matches(
        _flat_pattern(terms), text
    )


def test_the_builtin_lexicons_match_as_the_flat_alternation():
    texts = FIXTURES.read_text().splitlines()
    texts += [p.read_text(errors="replace") for p in EMAILS.rglob("*") if p.is_file()]
    texts += [" ".join(recognisers.HEALTH_TERMS), " ".join(recognisers.FINANCIAL_TERMS).upper()]
    for terms in (recognisers.HEALTH_TERMS, recognisers.FINANCIAL_TERMS):
        grouped, flat = recognisers.lexicon_pattern(terms), _flat_pattern(terms)
        found = 0
        for text in texts:
            assert _matches(grouped, text) == _matches(flat, text), text[:80]
            found += len(_matches(flat, text))
        assert found > 30


def test_a_lexicon_pattern_prefers_the_longest_term_at_a_place():
    pattern = recognisers.lexicon_pattern(["care", "Care Home", "car"])
    text = "a care  home visit, cars and careers"
    assert _matches(pattern, text) == _matches(_flat_pattern(["care", "Care Home", "car"]), text)
    assert [m.group() for m in pattern.finditer(text)] == ["care  home", "cars"]


def test_an_image_named_at_a_resolution_is_no_address():
    assert _kinds("Use logo@2x.png for retina and icon@3x.JPG; mail ann@example.com") == [
        ("email", "ann@example.com")
    ]
