"""Offline recognisers of sensitive entities in email text, pure: no Django.

Each recogniser stands on a maintained library where one does the job, offline: Google's
libphonenumber (``phonenumbers``) finds phone numbers, python-stdnum checks IBANs against the
SWIFT registry, Luhn digits, US social security and Irish PPS numbers. Where no library does
it, the rule is ours and says why. No framework: presidio-analyzer needs a spaCy model
download even for its pattern recognisers, and scrubadub pulls models for names. Written for
correspondence (US, UK and Irish donors first), each with the check that keeps it precise:

- ``card``: 12 to 19 digits, compact or in the groupings issuers print (4-4-4-4, 4-4-4-4-3,
  4-6-5, 4-6-4; spaces or dashes), in a range of an issuer (``_IIN_RANGES``: Visa,
  Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro, Mir, RuPay, Verve, Troy and
  others) with one of its lengths, and a valid Luhn digit (``stdnum.luhn``). The range table
  is hand-written: no maintained library in our stack carries it;
- ``iban``: a country code, two check digits and the account, compact or in groups of 4: a
  country of the SWIFT IBAN registry with its length and BBAN structure, valid modulo 97
  (``stdnum.iban`` and its copy of the registry);
- ``account``: a bank account or routing number after a context word (``account``, ``acct``,
  ``a/c``, ``routing``, ``ABA``; a UK sort code alone names a branch, not a person); a
  9-digit number after ``routing``/``ABA`` must pass the ABA checksum;
- ``national_id``: a US social security number (``123-45-6789``; a bare 9-digit run only after
  ``SSN``) that ``stdnum.us.ssn`` accepts (not the never-issued areas 000, 666 and 9xx, group 00,
  serial 0000, nor the numbers printed in advertisements), a UK National Insurance number
  (HMRC's prefix rules, hand-written: python-stdnum has no module for it) and an Irish PPS
  number after ``PPS``/``PPSN``/``RSI`` with its check letter (``stdnum.ie.pps``);
- ``email``: an address as RFC 5322 writes it (dot-atom: every atext character, letters of any
  script; domains with hyphens, IDN or punycode, long top-level domains), hand-written: the
  libraries check a given string, none finds addresses in running text;
- ``phone``: what libphonenumber's ``PhoneNumberMatcher`` (leniency VALID) finds in runs of
  digits: any country's number with ``+``, ``00`` or ``011`` and its country code, a national
  number of the US or, with its trunk ``0``, of the regions ``PHONE_NATIONAL_REGIONS`` (GB, IE,
  DE, FR, NL, BE, AT, SE); parentheses, slashes, a trunk prefix in parentheses (``+44 (0)20
  ...``), short area codes, extensions (``x123``, ``ext. 45``). The span is the number as
  written with its extension. Not a phone: digits alone without ``+`` or ``00`` (nine in ten
  runs of 10 digits starting with 0 are valid in one of those regions: validity tells
  nothing there, the grouping does), a number after a word naming another identifier (ISBN,
  order, invoice, case, ticket, tracking...), a date, a time, a decimal, an IP address, a
  part of a link or host name, the digits inside a card, an IBAN or a UPS parcel number;
- ``dob``: a date after ``born``, ``DOB``, ``date of birth`` or ``birthday`` (only the date
  is the span);
- ``address``: a street address (number, one to four capitalised words, a street type, with
  an optional suite and ``City, ST 12345``), a ``P.O. Box``, or a UK postcode;
- ``health`` and ``financial``: terms of the lexicons below (``HEALTH``, ``FINANCIAL``),
  whole words, case-insensitive, plurals included;
- ``persona``: a persona's own lexicon (``Lexicon`` rows a lead edits: a persona's pain
  points, people's names, projects).

Spans never overlap: where two recognisers claim text, the longer span wins, then the more
specific kind (``KINDS`` order). Precision and recall on the labelled fixtures
(``tests/fixtures/entities.txt`` and the development set ``entities_dev.txt``) and the time
per message (``bench/recognise_time.py``) are in ``docs/redaction.md``.
"""

import functools
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import phonenumbers
from stdnum import iban as _iban
from stdnum import luhn as _luhn
from stdnum import numdb
from stdnum.ie import pps as _pps
from stdnum.us import ssn as _ssn

# Most specific first: the order breaks ties between spans of the same length.
KINDS = {
    "card": "card number",
    "iban": "IBAN",
    "account": "account number",
    "national_id": "national identifier",
    "email": "email address",
    "name": "person's name",
    "phone": "phone number",
    "dob": "date of birth",
    "address": "postal address",
    "health": "health",
    "financial": "financial",
    "persona": "persona's own term",
}


class Entity(NamedTuple):
    kind: str
    start: int
    end: int
    text: str
    label: str = ""  # the lexicon a persona term came from


# --- checksums -----------------------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """Return whether a string of digits passes the Luhn check (ISO/IEC 7812-1; python-stdnum's
    ``stdnum.luhn``)."""
    return digits.isdigit() and _luhn.is_valid(digits)


def _iban_lengths() -> dict[str, int]:
    """Each country's IBAN length, from python-stdnum's copy of the SWIFT IBAN registry: the
    country code, the two check digits and the BBAN's fields (``4!a6!n8!n``: 4 + 18)."""
    out = {}
    for _length, country, _high, props, _children in numdb.get("iban").prefixes:
        if "bban" in props:
            out[country] = 4 + sum(int(n) for n in re.findall(r"(\d+)!", props["bban"]))
    return out


IBAN_LENGTHS = _iban_lengths()


def iban_valid(iban: str) -> bool:
    """Return whether an IBAN (spaces allowed) is valid: a country of the SWIFT registry, its
    length and BBAN structure, and the ISO 7064 mod 97-10 check digits (``stdnum.iban``; the
    national check digits inside some BBANs are not checked: a number written by hand from the
    format is still found)."""
    s = re.sub(r"\s", "", iban).upper()
    return s.isalnum() and _iban.is_valid(s, check_country=False)


def aba_valid(digits: str) -> bool:
    """Return whether nine digits are a valid ABA routing number (weights 3, 7, 1)."""
    if len(digits) != 9 or not digits.isdigit():
        return False
    weights = (3, 7, 1) * 3
    return sum(int(d) * w for d, w in zip(digits, weights, strict=True)) % 10 == 0


# --- lexicons ------------------------------------------------------------------------------

# Health: conditions, treatments and care people would not want read by strangers (chosen
# from the ICD-10 chapter names and the everyday words for them in correspondence).
HEALTH = """
cancer tumor tumour chemo chemotherapy radiotherapy oncologist biopsy leukemia leukaemia
lymphoma diabetes diabetic insulin hiv aids hepatitis std herpes pregnancy pregnant
miscarriage abortion ivf fertility infertility depression depressed anxiety antidepressant
prozac zoloft xanax valium lithium bipolar schizophrenia psychiatrist psychiatric
therapist therapy counseling counselling rehab rehabilitation detox alcoholism alcoholic
addiction overdose suicide suicidal surgery operation hospitalized hospitalised
hospital emergency room stroke heart attack cardiac bypass dialysis transplant
diagnosis diagnosed prognosis terminal hospice dementia alzheimer's alzheimers
parkinson's parkinsons epilepsy seizure asthma arthritis ms multiple sclerosis
medication prescription migraine disability disabled sick leave medical leave
mri ct scan x-ray mammogram colonoscopy physiotherapy ptsd adhd autism eating disorder
anorexia bulimia obesity chronic illness
"""

# Financial: personal finances and pay (not trading vocabulary, which fills business mail).
FINANCIAL = """
salary salaries bonus bonuses compensation raise pay cut paycheck payroll severance
bankruptcy bankrupt chapter 11 chapter 7 debt debts loan loans mortgage foreclosure
overdraft overdrawn credit score credit report credit card bank statement bank account
tax return tax returns irs audit lien garnishment alimony child support inheritance
net worth 401k 401(k) ira pension stock options vesting w-2 1099 wire transfer
pin password
"""


def lexicon_terms(text: str) -> list[str]:
    """Return the terms of a lexicon as a lead writes it: one term or phrase per line, or
    several separated by commas; blank lines and ``#`` comments are skipped."""
    terms: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if "," in line:
            terms.extend(t.strip() for t in line.split(",") if t.strip())
        else:
            terms.append(line)
    return terms


def _builtin_terms(text: str) -> list[str]:
    """The built-in lexicons: single words separated by spaces, with the multiword phrases
    listed in ``_PHRASES`` kept whole."""
    words = text.split()
    out, i = [], 0
    while i < len(words):
        for n in (3, 2):
            phrase = " ".join(words[i : i + n])
            if phrase.lower() in _PHRASES:
                out.append(phrase)
                i += n
                break
        else:
            out.append(words[i])
            i += 1
    return out


_PHRASES = {
    "emergency room", "heart attack", "multiple sclerosis", "sick leave", "medical leave",
    "ct scan", "eating disorder", "chronic illness", "pay cut", "chapter 11", "chapter 7",
    "credit score", "credit report", "credit card", "bank statement", "bank account",
    "tax return", "tax returns", "irs audit", "child support", "net worth", "stock options",
    "wire transfer",
}  # fmt: skip

# "ms", "pin", "aids", "raise", "pay", "operation", "therapy" alone are too common in business
# mail; they count only inside a phrase
_TOO_COMMON = {"ms", "pin", "aids", "raise", "operation", "therapy", "audit", "password"}


def lexicon_pattern(terms: Iterable[str]) -> re.Pattern | None:
    """Return one regular expression matching any term as whole words (plural ``s`` and
    ``es`` allowed, any whitespace between the words of a phrase), or None if no terms."""
    parts = set()
    for term in terms:
        words = term.lower().split()
        if not words:
            continue
        parts.add(r"\s+".join(re.escape(w) for w in words))
    if not parts:
        return None
    return re.compile(rf"(?<![\w@])(?:{_alternation(parts)})(?:e?s)?(?![\w@])", re.IGNORECASE)


def _alternation(parts: set[str]) -> str:
    """The terms as one alternation, longest first. Python's ``re`` tries every alternative
    at every word start; grouped by their first character (ASCII letters and digits: no
    two groups can match the same character, even ignoring case), a position tries one
    group. The order within a group is kept, so the matches are the same
    (``test_a_lexicon_pattern_matches_as_the_flat_alternation``)."""
    ordered = sorted(parts, key=len, reverse=True)
    if not all(p[0].isascii() and p[0].isalnum() for p in ordered):
        return "|".join(ordered)
    groups: dict[str, list[str]] = {}
    for part in ordered:
        groups.setdefault(part[0], []).append(part[1:])
    return "|".join(f"{first}(?:{'|'.join(rests)})" for first, rests in groups.items())


HEALTH_TERMS = [t for t in _builtin_terms(HEALTH) if t.lower() not in _TOO_COMMON]
FINANCIAL_TERMS = [t for t in _builtin_terms(FINANCIAL) if t.lower() not in _TOO_COMMON]
_HEALTH = lexicon_pattern(HEALTH_TERMS)
_FINANCIAL = lexicon_pattern(FINANCIAL_TERMS)

# --- patterns ------------------------------------------------------------------------------

# An address as RFC 5322 writes it outside quotes (a dot-atom): the local part's atext is letters,
# digits and ! # $ % & ' * + - / = ? ^ _ ` { | } ~ (letters of any script, as RFC 6531 allows);
# the domain's labels are letters, digits and inner hyphens (an IDN as itself or as punycode),
# the last one letters (any length) or punycode. A trailing full stop ends the sentence, not the
# domain. Hand-written: the libraries (email-validator, stdnum) check a given string, none
# finds addresses in running text.
_ATEXT = r"[\w!#$%&'*+/=?^`{|}~-]"
_LABEL = r"[^\W_](?:[\w-]*[^\W_])?"
# Read from each "@" (scanning every position for a local part costs more than the rest of the
# address recogniser): the local part ending there, the domain starting after it.
_EMAIL_LOCAL = re.compile(rf"(?<![\w.]){_ATEXT}+(?:\.{_ATEXT}+)*\Z")
_EMAIL_DOMAIN = re.compile(
    rf"(?:{_LABEL}\.)+(?:xn--[a-z0-9-]+|[^\W\d_]{{2,63}})(?!\w|-[\w-])", re.IGNORECASE
)
_STREET_TYPES = (
    r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|"
    r"Parkway|Pkwy|Highway|Hwy|Terrace|Circle|Cir|Square|Sq|Trail|Crescent|Close|Row|Gardens"
)
_ADDRESS = re.compile(
    rf"\d(?<![\w-]\d)\d{{0,5}}\s+(?:(?:[NSEW]|North|South|East|West)\.?\s+)?"
    rf"(?:[A-Z][a-z]+\.?\s+|\d+(?:st|nd|rd|th)\s+){{1,4}}(?:{_STREET_TYPES})\b\.?"
    r"(?:,?\s+(?:Suite|Ste\.?|Apt\.?|Apartment|Floor|Unit|#)\s*[\w-]+)?"
    r"(?:,?\s+(?:[A-Z][a-z]+\s){0,2}[A-Z][a-z]+,\s+[A-Z]{2}\.?\s+\d{5}(?:-\d{4})?)?"
)
_PO_BOX = re.compile(r"\bP\.?\s?O\.?\s+Box\s+\d{1,7}\b", re.IGNORECASE)
_CITY_ZIP = re.compile(r"\b(?:[A-Z][a-z]+\s){0,2}[A-Z][a-z]+,\s+[A-Z]{2}\.?\s+\d{5}(?:-\d{4})?\b")
_UK_POSTCODE = re.compile(r"[A-PR-UWYZ](?<!\w\w)[A-HK-Y]?\d[A-Z\d]?\s\d[ABD-HJLNP-UW-Z]{2}\b")
# A run of digits written as a card number: compact, or groups joined by one kind of separator
# (a space or a dash). Not inside a longer run: no digit, dash or decimal point right before, no
# further group of the same run after (a 22-digit parcel number is not a card plus a tail), but
# a date may follow (``4111 1111 1111 1111 05/27``).
_CARD = re.compile(
    r"(?<![\w+./,:-])(?<!\d[ \u00a0-])\d{4,19}(?:([ \u00a0-])\d{1,6}(?:\1\d{1,6}){0,4})?"
    r"(?![\w-]|[.,/:]\d|\1\d++(?![/.:]\d))"
)
# Issuer identification number ranges: (first prefix, last prefix, lengths the scheme issues).
# Hand-written from the schemes' published ranges (ISO/IEC 7812 IINs as the issuers and
# the payment networks' own pages list them): no maintained library in our stack carries
# the table (python-stdnum has the Luhn check but no issuer ranges).
_IIN_RANGES = (
    ("4", "4", (13, 16, 19)),  # Visa (Electron, V Pay)
    ("51", "55", (16,)),  # Mastercard
    ("2221", "2720", (16,)),  # Mastercard 2-series
    ("34", "34", (15,)),  # American Express
    ("37", "37", (15,)),
    ("6011", "6011", (16, 17, 18, 19)),  # Discover
    ("644", "649", (16, 17, 18, 19)),
    ("65", "65", (16, 17, 18, 19)),  # Discover; RuPay and Troy issue in it too
    ("622126", "622925", (16, 17, 18, 19)),  # Discover / China UnionPay co-branded
    ("3528", "3589", (16, 17, 18, 19)),  # JCB
    ("300", "305", (14, 15, 16, 17, 18, 19)),  # Diners Club (Carte Blanche)
    ("3095", "3095", (14, 15, 16, 17, 18, 19)),  # Diners Club International
    ("36", "36", (14, 15, 16, 17, 18, 19)),
    ("38", "39", (14, 15, 16, 17, 18, 19)),
    ("62", "62", (16, 17, 18, 19)),  # China UnionPay
    ("5018", "5018", tuple(range(12, 20))),  # Maestro
    ("5020", "5020", tuple(range(12, 20))),
    ("5038", "5038", tuple(range(12, 20))),
    ("5893", "5893", tuple(range(12, 20))),
    ("6304", "6304", tuple(range(12, 20))),  # Maestro (and Ireland's Laser)
    ("6759", "6759", tuple(range(12, 20))),  # Maestro UK
    ("6761", "6763", tuple(range(12, 20))),
    ("676770", "676770", tuple(range(12, 20))),
    ("676774", "676774", tuple(range(12, 20))),
    ("2200", "2204", (16, 17, 18, 19)),  # Mir
    ("60", "60", (16,)),  # RuPay
    ("81", "82", (16,)),
    ("508", "508", (16,)),
    ("353", "353", (16,)),
    ("356", "356", (16,)),
    ("506099", "506198", (16, 18, 19)),  # Verve
    ("507865", "507964", (16, 18, 19)),
    ("650002", "650027", (16, 18, 19)),
    ("9792", "9792", (16,)),  # Troy
    ("5019", "5019", (16,)),  # Dankort
    ("636", "636", (16, 17, 18, 19)),  # InterPayment
    ("637", "639", (16,)),  # InstaPayment
    ("2205", "2205", (16,)),  # BORICA
    ("9860", "9860", (16,)),  # Humo
    ("8600", "8600", (16,)),  # UzCard
)


def _card_lengths(digits: str) -> set[int]:
    """The lengths a card number starting with ``digits`` may have (empty: no issuer's range)."""
    out: set[int] = set()
    for first, last, lengths in _IIN_RANGES:
        if first <= digits[: len(first)] <= last:
            out.update(lengths)
    return out


def _card_grouping(groups: list[int]) -> bool:
    """Whether digit groups are written as issuers print them: compact, fours (the last group
    shorter: 4-4-4-4, 4-4-4-4-3, 4-4-4-1), 4-6-5 (American Express), 4-6-4 (Diners Club) or
    4-3-3-3 (old 13-digit Visa)."""
    if len(groups) == 1:
        return True
    if len(groups) >= 3 and all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4:
        return True
    return groups in ([4, 6, 5], [4, 6, 4], [4, 3, 3, 3])


# A country code, check digits and 11 to 30 letters or digits, compact or in groups (print form:
# groups of 4, single spaces); ``_ibans`` cuts it at the country's length.
_IBAN = re.compile(r"(?<![\w-])[A-Z]{2}\d{2}(?:[ \u00a0]?[A-Z0-9]){11,30}")
_ACCOUNT = re.compile(
    r"\b(?:account|acct|a/c|routing|aba|bank\s+account)"
    r"(?:\s+(?:no|number|num|#))?\.?\s*(?:is|:|#|=)?\s*"
    r"(?P<number>\d(?:[\d -]{4,20}\d)?)(?![\d-])",
    re.IGNORECASE,
)
# A US social security number as written (``123-45-6789``), or 9 digits (grouped by spaces or
# not) after ``SSN`` or ``social security``; ``stdnum.us.ssn`` says whether it can be one.
_SSN = re.compile(r"\d(?<![\d-]\d)\d{2}-\d{2}-\d{4}(?![\d-])")
_SSN_BARE = re.compile(
    r"\b(?:ssn|social\s+security(?:\s+(?:no|number|#))?)\.?\s*(?:is|:|#)?\s*"
    r"(?P<number>\d{3}([ -]?)\d{2}\2\d{4})(?![\d-])",
    re.IGNORECASE,
)
# A UK National Insurance number: python-stdnum has no module for it, so HMRC's rules are
# written here (first letter not D, F, I, Q, U, V; second not D, F, I, O, Q, U, V; the
# prefixes BG, GB, KN, NK, NT, TN and ZZ never allocated; suffix A-D).
_NINO = re.compile(
    r"[A-CEGHJ-PR-TW-Z](?<!\w\w)[A-CEGHJ-NPR-TW-Z](?<!BG|GB|NK|KN|TN|NT|ZZ)"
    r"\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b"
)
# An Irish Personal Public Service number (7 digits, a check letter, an optional second
# letter) after ``PPS``, ``PPSN``, ``personal public service`` or ``RSI`` (its old name):
# 8 or 9 characters alone are too common a shape; ``stdnum.ie.pps`` checks the letter.
_PPS = re.compile(
    r"\b(?:ppsn?|personal\s+public\s+service|rsi)(?:\s+(?:no|number|num|#))?\.?\s*"
    r"(?:is|:|#|=)?\s*(?P<number>\d{7}\s?[A-W][ABHTWX]?)\b",
    re.IGNORECASE,
)
_MONTHS = (
    r"Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?"
)
_DATE = (
    rf"(?:\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:\d{{4}}|\d{{2}})"
    rf"|\d{{4}}-\d{{2}}-\d{{2}}"
    rf"|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\.?,?\s+\d{{4}})"
)
_DOB = re.compile(
    rf"\b(?:born(?:\s+on)?|d\.?o\.?b\.?|date\s+of\s+birth|birth\s*date|birthday)"
    rf"\s*(?:is|was|:|-)?\s*(?P<date>{_DATE})",
    re.IGNORECASE,
)


# --- phones --------------------------------------------------------------------------------

# Where libphonenumber's matcher (``phonenumbers.PhoneNumberMatcher``) looks: runs of at least 8
# digits (10 without ``+`` or a trunk 0) joined by phone punctuation (spaces, dots, dashes,
# slashes, parentheses), starting with ``+``, ``(`` or a digit that does not continue a number,
# a date or a decimal, not after a word naming another identifier; digits alone only with
# ``+`` or ``00``. The matcher is pure Python and slow (0.05-0.2 ms a call): it reads only
# these windows, and only for the regions a run's first digits allow.
_PHONE_RUN = re.compile(
    r"(?<![\w+/=&?-])(?<!\d[.,:])[+(]?\d(?:[ \t\u00a0]?[().\-/]{0,2}[ \t\u00a0]?\d)+"
)
_PHONE_EXTENSION = re.compile(
    r"[ \t\u00a0]*,?[ \t\u00a0]*(?:x|ext\.?|extn\.?|extension)[ \t\u00a0]*\d{1,6}(?!\w)",
    re.IGNORECASE,
)
# Numbers written nationally, with their trunk prefix 0, are read as numbers of these regions,
# in this order (GB first: it also reads 00-prefixed international numbers; the US reads 011).
# Decided by measurement on entities_dev.txt (docs/redaction.md): the EU countries whose
# national numbers start with the trunk 0 and are written that way in correspondence.
# Countries without a trunk prefix (Spain, Poland, Denmark, Greece...) are found only with
# their country code: their 8-9 bare digits are any number's shape.
PHONE_NATIONAL_REGIONS = ("GB", "IE", "DE", "FR", "NL", "BE", "AT", "SE")
_PHONE_MIN_DIGITS = 8
# A number after one of these words is an identifier of another kind, whatever its shape.
_NOT_PHONE_BEFORE = re.compile(
    r"(?:\b(?:isbn(?:-1[03])?|issn|order|invoice|inv|case|docket|ticket|tracking|po|lot|"
    r"serial|s/n|sn|patent|ref|reference|deal|build|version|ver|release|(?<!caller\s)id|imei|"
    r"isin|account|acct)\b\.?(?:\s*(?:no|number|num|nr)\b\.?)?\s*(?:[:#=]\s*)?)$",
    re.IGNORECASE,
)


# Shapes libphonenumber may read as a number but people write for something else: a date
# (01.11.2001; the matcher already skips 01/11/2001), an SSN's 3-2-4 groups, an IP address.
_NOT_PHONE_SHAPE = re.compile(
    r"\d{1,2}([./-])\d{1,2}\1\d{2,4}|\d{4}([./-])\d{1,2}\2\d{1,2}|\d{3}-\d{2}-\d{4}"
    r"|\d{1,3}(?:\.\d{1,3}){3}"
)
# Around a number: a date before it (Aug 02 2002 12:00), a time, a decimal, a host name's or a
# link's next part after it (port-216-3073879-ds200, /detail/-/0596003161/, ck=3694270848&tab=)
_NOT_PHONE_AFTER = re.compile(r"[-_][^\W_]|[/&=][^\W_]|[:.,]\d")
# ... or the part of a decimal or a dotted name before it (p = 0.0462364, laura.01001010.net).
_NOT_PHONE_BEFORE_CHARS = re.compile(r"[^\W_][.,]$")
_NOT_PHONE_MONTH_BEFORE = re.compile(rf"\b(?:{_MONTHS})\.?[ \t]*$", re.IGNORECASE)
# A list of decimals (load 0.10 0.11 0.10; DJIA 8542.48 69.37): a decimal point and a space.
_DECIMALS = re.compile(r"\d\.\d.*\d\s+\(?\d|\d\s+\(?\d.*\d\.\d")
# A UPS parcel number (1Z, then 16 letters or digits, often grouped): its digits are no phone.
_UPS = re.compile(r"\b1Z ?[0-9A-Z]{3} ?[0-9A-Z]{3} ?[0-9A-Z]{2} ?[0-9A-Z]{4} ?[0-9A-Z]{4}\b")


# A number written with its country code (+, 00, 011) is read with leniency POSSIBLE (the
# country's lengths), a national one with VALID (the numbering plan's ranges): the country code
# is evidence enough, and the plans change (London's 0171 became 020 7 in 2000, Moscow's 095
# became 495 in 2005, Brazil's mobiles took a ninth digit): a number valid when an old message
# was written is often not valid in today's metadata. Decided by measurement (docs/redaction.md).
PHONE_INTERNATIONAL_LENIENCY = phonenumbers.Leniency.POSSIBLE
# How a number written with its country code starts, in the regions read with it: + or the
# international prefix dialled there, then the country code (never 0: 00000004 is a counter).
_INTERNATIONAL = {
    "GB": re.compile(r"\(?(?:\+|00[ \t\u00a0]?[1-9])"),
    "US": re.compile(r"\(?(?:\+|011[ \t\u00a0]?[1-9])"),
}


def _phone_regions(run: str) -> tuple[tuple[str, bool], ...]:
    """How to read a run of digits: ``(region, international)`` passes, most likely first; an
    international pass keeps only the numbers written with their country code."""
    national = tuple((region, False) for region in PHONE_NATIONAL_REGIONS)
    digits = run.lstrip("(")
    if _INTERNATIONAL["GB"].match(run):
        # the region only names the 00 prefix; a national number may follow in the same run
        # (+46 8 123 456 78 (08-123 456 78))
        return (("GB", True), *national)
    if _INTERNATIONAL["US"].match(run) and sum(c.isdigit() for c in run) >= 12:
        return (("US", True), *national)
    if digits.startswith("0"):
        return national
    if digits.startswith("1"):
        return (("US", False), ("IE", False))  # 1-800-..., Ireland's 1800/1850 numbers
    return (("US", False),)


@functools.lru_cache(maxsize=8192)
def _phone_matches(
    window: str, passes: tuple[tuple[str, bool], ...]
) -> tuple[tuple[int, int], ...]:
    """The numbers libphonenumber finds in ``window``, as spans: each pass in turn, a later
    pass's numbers only where an earlier one found none. Cached: signatures and quoted
    replies repeat the same numbers through an archive."""
    found: list[tuple[int, int]] = []
    digits = sum(c.isdigit() for c in window)
    for region, international in passes:
        leniency = PHONE_INTERNATIONAL_LENIENCY if international else phonenumbers.Leniency.VALID
        for m in phonenumbers.PhoneNumberMatcher(window, region, leniency):
            if international and not _INTERNATIONAL[region].match(m.raw_string):
                continue
            start, end = m.start, m.end
            if window[start] == "(" and ")" not in window[start:end]:
                start += 1  # an opening parenthesis the number does not close
            while window[start] == "[":  # brackets around it: [62.226.214.36]
                start += 1
            while window[end - 1] == "]":
                end -= 1
            if _NOT_PHONE_SHAPE.fullmatch(window, start, end):
                continue
            if not any(start < e and s < end for s, e in found):
                found.append((start, end))
        if sum(sum(c.isdigit() for c in window[s:e]) for s, e in found) == digits:
            break  # every digit is read: the other passes have nothing left to find
    return tuple(found)


def _phones(text: str, taken: list[tuple[int, int]]):
    """Phone numbers in ``text``: the whole number as written (``+`` or ``00``/``011`` and the
    country code, a trunk prefix in parentheses) and an extension written right after it."""
    for m in _PHONE_RUN.finditer(text):
        run = m.group()
        # a number without its country code or trunk 0 is a US one (or Ireland's 1800): 10
        # digits at least
        us_like = run[0] != "+" and run.lstrip("(")[0] != "0"
        if sum(c.isdigit() for c in run) < (10 if us_like else _PHONE_MIN_DIGITS):
            continue
        if run.isdigit() and not _INTERNATIONAL["GB"].match(run):
            continue  # digits alone are an identifier's shape: a phone is grouped, or has +
        if _NOT_PHONE_SHAPE.fullmatch(run) or (
            _DECIMALS.search(run) and run.lstrip("(")[:2] in ("0.", "0,")
        ):
            continue  # a date, an IP address, a table of fractions: 8 regions would say no
        if any(s <= m.start() and m.end() <= e for s, e in taken):
            continue  # inside a card number, an IBAN or a parcel number
        if _NOT_PHONE_BEFORE.search(text, max(0, m.start() - 30), m.start()):
            continue  # an order, invoice, case... number: no need to ask the matcher
        lo = max(0, m.start() - 1)
        hi = m.end()
        if ext := _PHONE_EXTENSION.match(text, hi):
            hi = ext.end()
        for start, end in _phone_matches(text[lo : hi + 1], _phone_regions(run)):
            start, end = lo + start, lo + end
            if (
                _NOT_PHONE_BEFORE.search(text, max(0, start - 30), start)
                or _NOT_PHONE_MONTH_BEFORE.search(text, max(0, start - 12), start)
                or _NOT_PHONE_AFTER.match(text, end)
                or _NOT_PHONE_BEFORE_CHARS.search(text, max(0, start - 2), start)
                or _DECIMALS.search(text, start, end)
            ):
                continue
            yield Entity("phone", start, end, text[start:end])


def _spans(pattern: re.Pattern, kind: str, text: str, group: str | int = 0):
    for m in pattern.finditer(text):
        yield Entity(kind, m.start(group), m.end(group), m.group(group))


def _cards(text: str):
    for m in _CARD.finditer(text):
        groups = re.split(r"[ \u00a0-]", m.group())
        digits = "".join(groups)
        if (
            12 <= len(digits) <= 19
            and _card_grouping([len(g) for g in groups])
            and len(digits) in _card_lengths(digits)
            and luhn_valid(digits)
        ):
            yield Entity("card", m.start(), m.end(), m.group())


def _ibans(text: str):
    for m in _IBAN.finditer(text):
        # the match is greedy: keep the country's length of letters and digits (a word in
        # capitals may follow), ending at a word boundary
        length = IBAN_LENGTHS.get(m.group()[:2])
        if length is None:
            continue
        seen, end = 0, m.start()
        for i, ch in enumerate(m.group()):
            if ch.isalnum():
                seen += 1
                if seen == length:
                    end = m.start() + i + 1
                    break
        if seen < length or (end < len(text) and (text[end].isalnum() or text[end] == "-")):
            continue
        if iban_valid(text[m.start() : end]):
            yield Entity("iban", m.start(), end, text[m.start() : end])


# The context words the patterns after words need, for a cheap test before the pattern runs
# (a pattern that starts with a word boundary tries every position of the text).
_ACCOUNT_WORDS = ("account", "acct", "a/c", "routing", "aba")
_SSN_WORDS = ("ssn", "social")
_PPS_WORDS = ("pps", "rsi", "personal")
_DOB_WORDS = ("born", "birth", "dob", "d.o", "do.b")


def _mentions(low: str, words: tuple[str, ...]) -> bool:
    return any(w in low for w in words)


def _accounts(text: str, low: str):
    if not _mentions(low, _ACCOUNT_WORDS):
        return
    for m in _ACCOUNT.finditer(text):
        number = m.group("number").rstrip(" -")
        digits = re.sub(r"\D", "", number)
        if not 6 <= len(digits) <= 17:
            continue
        context = m.group().lower()
        if ("routing" in context or "aba" in context) and not aba_valid(digits):
            continue
        start = m.start("number")
        yield Entity("account", start, start + len(number), number)


def _email_spans(text: str):
    """The spans of the dot-atom addresses of ``text``, left to right, not overlapping."""
    done, at = 0, text.find("@")
    while at != -1:
        domain = _EMAIL_DOMAIN.match(text, at + 1)
        local = domain and _EMAIL_LOCAL.search(text, max(done, at - 256), at)
        if local:
            yield local.start(), domain.end()
            done = domain.end()
        at = text.find("@", max(done, at + 1))


def _emails(text: str):
    for start, end in _email_spans(text):
        local = text[start : text.index("@", start)]
        if re.search(r"[?&][^?&=]*=", local):
            # a link's query (http://host/p?to=ann@example.com, &email=ann@...): the address
            # is the value after it
            start += re.search(r"[^?&=]*$", local).start()
        elif "/" in local and (text[start - 1 : start] == ":" or "." in local.rsplit("/", 1)[0]):
            # a link's path (http://host/archive/ann@example.com): the last segment
            start += local.rindex("/") + 1
        while text[start] in "'`|/":  # quotes, a table's bar, a link's slashes
            start += 1
        if not any(c.isalnum() for c in text[start : text.index("@", start)]):  # *@isp.com
            continue
        if text[start:end].rsplit(".", 1)[-1].lower() in _FILE_EXTENSIONS:
            continue  # a file name: logo@2x.png, icon@3x.jpg (no such top-level domain)
        yield Entity("email", start, end, text[start:end])


# file extensions written after an "@" in image names (logo@2x.png); none is a top-level domain
_FILE_EXTENSIONS = {"png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "tif", "tiff", "ico", "pdf"}


def _national_ids(text: str, low: str):
    ssns = list(_spans(_SSN, "", text))
    if _mentions(low, _SSN_WORDS):
        ssns += _spans(_SSN_BARE, "", text, "number")
    for e in ssns:
        if _ssn.is_valid(re.sub(r"\D", "", e.text)):
            yield e._replace(kind="national_id")
    yield from _spans(_NINO, "national_id", text)
    if _mentions(low, _PPS_WORDS):
        for e in _spans(_PPS, "", text, "number"):
            if _pps.is_valid(e.text):
                yield e._replace(kind="national_id")


def _personal_data(text: str) -> list[Entity]:
    """Every claim of the personal-data recognisers on ``text``, overlaps not yet resolved."""
    low = text.lower()
    found: list[Entity] = []
    found += _cards(text)
    found += _ibans(text)
    found += _accounts(text, low)
    found += _national_ids(text, low)
    found += _emails(text)
    taken = [(e.start, e.end) for e in found if e.kind in ("card", "iban")]
    if "1z" in low:
        taken += [m.span() for m in _UPS.finditer(text)]
    found += _phones(text, taken)
    if _mentions(low, _DOB_WORDS):
        found += _spans(_DOB, "dob", text, "date")
    for pattern in (_ADDRESS, _PO_BOX, _CITY_ZIP, _UK_POSTCODE):
        found += _spans(pattern, "address", text)
    found += _spans(_HEALTH, "health", text)
    found += _spans(_FINANCIAL, "financial", text)
    return found


def _persona_terms(text: str, patterns: Mapping[str, re.Pattern]) -> list[Entity]:
    return [
        e._replace(kind="persona", label=name)
        for name, pattern in patterns.items()
        for e in _spans(pattern, "", text)
    ]


def _lexicon_patterns(lexicons: Mapping[str, Iterable[str]] | None) -> dict[str, re.Pattern]:
    patterns = {name: lexicon_pattern(terms) for name, terms in (lexicons or {}).items()}
    return {name: pattern for name, pattern in patterns.items() if pattern is not None}


def recognise(text: str, lexicons: Mapping[str, Iterable[str]] | None = None) -> list[Entity]:
    """Return the sensitive entities of ``text``, in order, without overlaps.

    ``lexicons``: a persona's own lexicons, name -> terms (each found as kind ``persona``
    with the lexicon's name as ``label``)."""
    if not text:
        return []
    terms = _persona_terms(text, _lexicon_patterns(lexicons))
    return resolve_overlaps(_personal_data(text) + terms)


_RANK = {kind: i for i, kind in enumerate(KINDS)}


def texts_entities(job) -> list[tuple]:
    """The entities of many texts, as plain tuples (a process pool's unit of work):
    ``job`` is ``(texts, lexicons)``, ``texts`` a list of ``(key, field, text)`` and
    ``lexicons`` ``{persona id: {lexicon name: terms}}``; returns ``(key, persona id or
    None, field, entity)`` for the personal data of each text and each persona's own terms.

    The same as ``recognise(text)`` and, for each persona, the persona terms of
    ``recognise(text, its lexicons)``, but the personal-data recognisers run once per text
    and each lexicon's pattern is built once per job."""
    texts, lexicons = job
    patterns = {persona_id: _lexicon_patterns(named) for persona_id, named in lexicons.items()}
    out = []
    for key, field, text in texts:
        if not text:
            continue
        personal = _personal_data(text)
        out.extend((key, None, field, e) for e in resolve_overlaps(personal))
        for persona_id, named in patterns.items():
            for e in resolve_overlaps(personal + _persona_terms(text, named)):
                if e.kind == "persona":
                    out.append((key, persona_id, field, e))
    return out


def resolve_overlaps(entities: Iterable[Entity]) -> list[Entity]:
    """Keep non-overlapping entities: longer first, then the more specific kind, then the
    earlier one; return them in text order."""
    ordered = sorted(entities, key=lambda e: (-(e.end - e.start), _RANK[e.kind], e.start))
    kept: list[Entity] = []
    taken: list[tuple[int, int]] = []
    for e in ordered:
        if e.end <= e.start:
            continue
        if any(e.start < end and start < e.end for start, end in taken):
            continue
        kept.append(e)
        taken.append((e.start, e.end))
    return sorted(kept, key=lambda e: e.start)


def counts(entities: Iterable[Entity]) -> dict[str, int]:
    """Return the number of entities of each kind (every kind present, 0 when none)."""
    out = dict.fromkeys(KINDS, 0)
    for e in entities:
        out[e.kind] += 1
    return out


# --- evaluation ----------------------------------------------------------------------------

_GOLD = re.compile(r"\[\[(\w+):(.+?)\]\]")


def parse_labelled(line: str) -> tuple[str, list[Entity]]:
    """Return the plain text of a labelled line (``[[kind:text]]`` marks) and its entities."""
    out, gold, pos = [], [], 0
    length = 0
    for m in _GOLD.finditer(line):
        out.append(line[pos : m.start()])
        length += m.start() - pos
        kind, span = m.group(1), m.group(2)
        if kind not in KINDS:
            raise ValueError(f"unknown entity kind {kind!r} in {line!r}")
        gold.append(Entity(kind, length, length + len(span), span))
        out.append(span)
        length += len(span)
        pos = m.end()
    out.append(line[pos:])
    return "".join(out), gold


class KindScore(NamedTuple):
    kind: str
    gold: int
    found: int
    correct: int

    @property
    def precision(self) -> float:
        return self.correct / self.found if self.found else 1.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 1.0


def evaluate(lines: Iterable[str], lexicons=None) -> dict[str, KindScore]:
    """Return precision and recall per kind (and ``all``) of ``recognise`` on labelled lines:
    a found entity is correct when its kind, start and end equal a gold one (exact match, the
    strict reading of MUC/CoNLL scoring)."""
    gold_n: dict[str, int] = dict.fromkeys([*KINDS, "all"], 0)
    found_n = dict(gold_n)
    correct_n = dict(gold_n)
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        text, gold = parse_labelled(line.rstrip("\n"))
        found = recognise(text, lexicons)
        gold_set = {(e.kind, e.start, e.end) for e in gold}
        for e in gold:
            gold_n[e.kind] += 1
            gold_n["all"] += 1
        for e in found:
            found_n[e.kind] += 1
            found_n["all"] += 1
            if (e.kind, e.start, e.end) in gold_set:
                correct_n[e.kind] += 1
                correct_n["all"] += 1
    return {k: KindScore(k, gold_n[k], found_n[k], correct_n[k]) for k in gold_n}
