"""Person names in email text, from a gazetteer of the collection's own correspondents; pure:
no Django, no app data.

The most common personal data in donated mail is people's names, and most of the people named
in a mailbox are its correspondents: their names are in the From/To/Cc/Bcc headers. A
``Gazetteer`` is built from those ``(display name, address)`` pairs once per detection run and
finds, in a subject or body:

- full names as written and shortened: ``Maeve Gallagher``, ``Maeve A. Gallagher``,
  ``Gallagher, Maeve``, ``MAEVE GALLAGHER``;
- an initial and the surname: ``M. Gallagher``, ``M Gallagher``, ``M.Gallagher``;
- the surname alone and the first name alone: ``Gallagher``, ``Maeve``;
- the correspondent's address local part when it is made of the name (``maeve.gallagher``,
  ``mgallagher``, ``maeve_g``), lower case, as a word of its own (a whole address stays kind
  ``email``: ``maeve.gallagher@example.org`` is no name, nor ``/home/mgallagher/``);
- a display name written in lower case as written (``kevin lyda``);
- a first name and a surname next to each other, of one person or two, as one span, with a
  middle initial between them or an initial before (``Maeve A. Brown``, ``R. Kevin Oberman``);
- a surname with its particles as one span, the particles capitalised at a sentence's start
  or not (``van der Berg``, ``Van der Berg``, ``De la Fuente``, ``Mac Giolla``), and the two
  surnames of a Spanish or Portuguese name (``Fernández Vidal`` of ``Lucía Fernández Vidal``;
  ``Lucía Fernández``; ``Fernández`` alone only in a name's context);
- a hyphenated first name and its initials (``Jean-Pierre``, ``J.-P. Lacroix``, ``J-P``);
- a first name written in lower case only greeted, thanked or signing off (``thx maeve,``,
  ``— grace``).

Matching is case-sensitive (a name is written capitalised, a local part lower case), by whole
words, accents folded on both sides (``Renee`` finds ``Renée`` and ``Núñez`` finds ``Nunez``;
the span is the text's), longest form first; spans never overlap. The text is read once,
word by word, each word looked up in one dict holding every form and every leading part of a
longer form (so the cost is per word, not per name in the gazetteer).

Precision:

- display names that are no person are skipped: one word only (``Customers``, ``guardian``),
  a digit or an ``@``, a word of ``NOT_A_PERSON`` (``Customer Service``, ``SpamAssassin
  List``, ``irish linux users group``, ``noreply``), or a word capitalised like a brand
  (``FOXSports``, ``FreshRPMs``);
- a first name or surname that is also an everyday word (``COMMON_WORDS``: *Will, Mark, May,
  Brown, Hall...*), a month or weekday, a word of one or two letters, an initial without its
  dot before a common surname or before ``A``/``I``, and a local part not made of the name,
  count only in a name's context: after a title (``Mr Brown``), in a greeting or sign-off
  (``Hi Will,``, ``Thanks, Mark`` ending a line, ``Mark`` alone on a line, ``-- Will``),
  before *wrote/said*, next to another part of a name (``Maeve Brown``: a first name then a
  surname, found as one span), or in a list with a name (``Priya, Rose and Mark``); a first
  name also calling someone at a line's start (``Mark, can you...``, not ``May, June``) or
  after thanks and a few words (``Thanks again, May -``);
- a name before a street's or a building's word (``Kevin Street``, ``Wilson Library``,
  ``Stephen's Green``, ``Patrick's Day``) or after *St*/*Saint* is no person; nor a surname or
  first name alone before capitalised words with a company's word (``Brandt Technik GmbH``,
  ``Doyle Consulting``: ``COMPANY_WORDS``).

Precision and recall on ``tests/fixtures/names_dev.txt`` are in ``docs/redaction.md``.
"""

import email.utils
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from core import recognisers
from core.recognisers import Entity

# Everyday English words that are also common first names or surnames, months, weekdays, and
# places that are also names. Written by hand for this module (no list was downloaded): the
# given names and surnames that came to mind as frequent in the US and UK and that a writer
# also uses as ordinary words, or capitalised at the start of a sentence, in business mail
# (the sample's *Frank*, *Wood*, *Hall*, *Self*, *Shore*, *French*, *Mason*, *Angles*).
_COMMON_WORDS = """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
    monday tuesday wednesday thursday friday saturday sunday
    will bill mark rose grant hope faith grace joy dawn eve ray art pat sue rob don jack frank
    guy drew chase chance sky summer autumn winter holly ivy lily daisy heather iris jade amber
    ruby pearl crystal olive violet hazel fern robin jay wren lark gene max rich dick bob sandy
    rusty penny sunny misty cliff dale glen heath forest rocky clay brook river reed major earl
    duke prince king miles hunter mason sterling page storm rain star christian ernest earnest
    constance prudence patience charity honor honour justice mercy ginger candy honey colt buck
    hawk fox wolf bear lamb gale gay merry chip chuck chad ward wade lance pierce rod sherry
    brandy nick tom ken melody harmony destiny trinity blossom dusty woody buddy angel cherry
    coral norman german angles van said long
    brown young white black green gray grey wood woods hill hall baker cook cooper carpenter
    miller walker turner porter fisher farmer butler potter shepherd weaver price rice short
    little small strong sharp wise bird swan crow bishop dean knight lord bond banks ford lane
    street field fields park parks marsh moss rivers waters stone church castle bell chambers
    gates wells hay house frost snow summers spring day best hardy love good friend guest child
    law cash gold silver steel bush rush hart hunt pope power read bright burns cross english
    french irish welsh savage noble swift wild self shore story fair ball bull bacon cotton
    cole barber archer carter glass hope sweet early late moody person parish bank buy sell
    ask call post link lay pace bass
    houston dallas austin paris jackson washington lincoln chester kent devon georgia virginia
    carolina india israel jordan sydney victoria florence orlando madison phoenix denver
    cleveland florida london charlotte savannah dakota montana aurora chelsea kingston
    hamilton wellington york
"""
COMMON_WORDS = frozenset(_COMMON_WORDS.split())

# Words that make a display name no person's: lists, groups, roles, services, organisations.
_NOT_A_PERSON = """
    list lists listserv group groups users user members member team staff support service
    services customer customers client clients help helpdesk desk info information admin
    administrator administration noreply no-reply donotreply reply postmaster mailer daemon
    webmaster hostmaster abuse root nobody owner bounce bounces request news newsletter
    newsletters digest bulletin alert alerts notification notifications notify update updates
    announce announcement announcements sales marketing billing accounts accounting office
    department dept board committee council club society association union foundation
    institute university college school library museum company inc ltd llc corp corporation
    plc gmbh partners bank store shop travel reservations booking bookings orders order
    security system systems server bot robot automated auto mail mailbox mailing email e-mail
    online web website discussion talk forum social workers subscribers editor editors
    editorial press media feed feeds rss flash sports the and of for via on behalf at to from
    your my our project projects dev devel developers calendar jobs careers recruiting events
    event tickets payments payment invoice invoices receipts hotline operator operations
    reception contact contacts feedback enquiries inquiries questions community network
    official global international national central city county state government ministry
    agency tech technical linux
    daily weekly monthly edition software computer computers archive archives shell core
    magazine journal times post herald review report reports digital labs studio studios
"""
NOT_A_PERSON = frozenset(_NOT_A_PERSON.split())

# Words of a company's name: its legal form, or a trade's word a firm is named with after its
# founder ("Doyle Consulting", "Whitfield PR"). Case-sensitive ("AS", not "as").
_COMPANY_WORDS = """
    GmbH AG KG KGaA OHG UG eV AS ASA AB ApS Oy Oyj BV NV VOF SA SAS SARL SL SLU SpA Srl SRL
    Ltd LTD Limited LLC LLP LP Inc INC Corp Corporation Co Company PLC plc Pty Bros Brothers
    Sons Partners Partnership Associates Advies Arkitekter Architects Architecten Maschinenbau
    Technik Consulting Consultants Consultancy Advisors Advisory PR HVAC Group Holdings Holding
    Logistics Solutions Services Systems Engineering Construction Builders Electrical Plumbing
    Properties Estates Eiendom Vastgoed Immobilien Bau Design Software Technologies Capital
    Ventures Investments Insurance Legal Solicitors Lawyers Accountants Motors Foods Transport
    Trading Industries Verlag Stiftung Foundation Trust Media Studio Management Marketing Labs
"""
COMPANY_WORDS = frozenset(_COMPANY_WORDS.split())
# capitalised words of a title-case subject line that end a company's name: "Meeting With
# Okafor About Group Finances" is no company
_STOPS = "About With For From To On In At Re Fwd Fw The Of Regarding And Or Our Your"
_TITLE_CASE_STOPS = frozenset(_STOPS.split())
# Words after a name that make it a place's or a building's (after 's only for the words
# that are also surnames: "Stephen's Green", "Patrick's Day", not "Will Hall").
_PLACE_WORDS = (
    "Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Square|Sq|Place|Pl|Drive|Terrace|Crescent|Quay"
    "|Boulevard|Blvd|Parade|Mews|Alley|Gardens|Way|Close|Court|Row|Grove|Walk|Strasse|Straße"
    "|Gasse|Platz|Allee|Library|Hospital|College|University|School|Institute|Centre|Center"
    "|Station|Airport|Hotel|Stadium|Theatre|Theater|Museum|Cathedral|Chapel|Building"
)
_PLACE_AFTER = re.compile(
    rf"(?:['’]s)?[ \t]+({_PLACE_WORDS})\b(?!['’-]\w)"
    r"|['’]s[ \t]+(Day|Eve|Night|Park|Green|Hall|Church|Bridge|Hill|Well)\b"
)
_SAINT_BEFORE = re.compile(r"(?<![\w.])(?:St|Saint|Sainte|Ste|Sankt|San|Santa|Santo|São)\.?[ \t]+$")

TITLES = (
    "Mr", "Mrs", "Ms", "Miss", "Mx", "Dr", "Prof", "Professor", "Sir", "Dame", "Rev",
    "Sr", "Sra", "Srta", "Dra", "Dña", "Señor", "Señora", "Herr", "Frau", "Mme", "Mlle",
    "Madame", "Monsieur", "Mevr", "Dhr", "Dott", "Sig", "Signor", "Signora", "Ing",
)  # fmt: skip
_SUFFIXES = {"jr", "sr", "ii", "iii", "iv", "phd", "md", "esq", "dds", "cpa", "mba", "obe"}
# Words before a surname that belong to it: "van der Berg", "de la Cruz", "von Arnim", "du
# Plessis", "Mac Giolla", "Ó Néill". Those of _CAP_PARTICLES are written capitalised.
_PARTICLES = {
    "van", "von", "de", "der", "den", "del", "della", "di", "da", "du", "la", "le", "st",
    "bin", "binti", "ibn", "al", "el", "dos", "das", "ter", "ten", "op", "zu", "vom", "zum",
    "zur", "des", "dei", "degli", "af", "av", "mac", "mc", "ó", "ní", "nic", "uí",
}  # fmt: skip
_CAP_PARTICLES = {"mac", "mc", "ó", "ní", "nic", "uí", "st"}

# Flags of a form: what part of a name it is, and whether it needs a name's context.
GIVEN, SURNAME, FULL, LOCAL, GATED = 1, 2, 4, 8, 16
_FORM, _PREFIX = 32, 64  # a whole form; the leading words of a longer one
# a first name written in lower case ("thx maeve,"): only greeted, thanked or signing off
INFORMAL = 128

# a word: letters and digits, with the combining accents of a decomposed text ("e\u0301")
_TOKEN = re.compile(r"[^\W_]+")
_TOKEN_MARKS = re.compile(r"[^\W_]+(?:[\u0300-\u036f]+[^\W_]*)*")
_COMBINING = re.compile(r"[\u0300-\u036f]")
# between two words of a name: spaces (one line break at most), ". ", ", ", or a joiner, a
# dot before a hyphen too ("J.-P.")
_NEXT = re.compile(r"(\.?,?[ \t]*\n?[ \t]*|\.?[-'’_.])([^\W_]+(?:[\u0300-\u036f]+[^\W_]*)*)")
_SPACES = re.compile(r"\s+")
# A name glued to these and a word is part of an address, a file name or a path; a slash
# only for a lower-case handle (``/~mgallagher/``): between capitalised names it separates
# people (``Maeve/Chidi``) or a Lotus Notes name from its unit (``Kay Mann/Corp/Enron``).
_GLUE = "._-+\\=%~"
_GLUE_LOWER = _GLUE + "/"

_GREETING = (
    r"hi|hello|hey|hiya|dear|morning|good\s+(?:morning|afternoon|evening)|thanks|thank\s+you"
    r"|thx|cheers|regards|best(?:\s+regards|\s+wishes)?|kind\s+regards|warm\s+regards"
    r"|many\s+thanks|love|yours|sincerely|take\s+care|bye|ciao|congratulations|congrats"
    r"|welcome|sorry|ok|okay"
)
_GREETING_BEFORE = re.compile(rf"[ \t>|]*(?:{_GREETING})\b[ \t,!:.-]*", re.IGNORECASE)
# thanks, a greeting, and a few words before the comma: "Thanks so much, Joy"
_THANKS = r"thanks|thank\s+you|many\s+thanks|thx|ta|cheers|hi|hey|hello|dear|(?:good\s+)?morning"
_THANKS_BEFORE = re.compile(rf"[ \t>|]*(?:{_THANKS})\b[^\n,.!?;:]{{0,40}}?,[ \t]*", re.IGNORECASE)
_INFORMAL_BEFORE = re.compile(rf"[ \t>|]*(?:{_THANKS})\b[ \t,!:.-]*", re.IGNORECASE)
_GREETING_AFTER = re.compile(r"[ \t]*(?:[,!:.;?)\-–—].*|\s+(?:and|&)\s.*)?")
_SIGN_OFF_LINE = re.compile(rf"[ \t>|]*(?:{_GREETING})[ \t]*[,!.]?[ \t]*", re.IGNORECASE)
_QUOTED = re.compile(r"[ \t>|]*")
_DASH_BEFORE = re.compile(r"[ \t>|]*[-–—~]+[ \t]*")
_INFORMAL_ALONE_AFTER = re.compile(r"[ \t]*,?[ \t]*")
_INFORMAL_END = re.compile(r"[ \t]*(?:[,!:.;?)\-–—\n]|$|(?:and|&)[ \t])")
_MONTHS_DAYS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
)
# a first name calling someone at the start of a line: "Mark, can you..." (not "May, June")
_VOCATIVE_AFTER = re.compile(rf"[ \t]*,(?:[ \t]*$|[ \t]+(?!(?:{_MONTHS_DAYS})\b)[^\W\d_])")
_ALONE_BEFORE = re.compile(r"[ \t>|]*(?:[-–—~/*.]+[ \t]*)?")
_ALONE_AFTER = re.compile(r"[ \t]*[,.!]?[ \t]*")
_TITLE_BEFORE = re.compile(rf"(?:^|\W)(?:{'|'.join(TITLES)})\.?[ \t]+$")
_SAID_AFTER = re.compile(r"[ \t]+(?:wrote|writes|said|says)\b")
_MIDDLE = re.compile(r" [A-Z]\.? ")
_LIST_JOIN = re.compile(r",[ \t]*|,?[ \t]+(?:and|&)[ \t]+")
_DIGIT_AFTER = re.compile(r"[ \t]*\d")
_INITIAL_BEFORE = re.compile(r"(?<![\w.])[A-Z]\. ")


# --- who is a person -------------------------------------------------------------------------


class PersonName:
    """A correspondent's name: the words (capitalised), the first name they go by, the
    surname (with its particles) and the words between."""

    __slots__ = ("words", "given", "surname", "middle", "lower")

    def __init__(self, words: list[str], given: str, surname: str, middle: list[str], lower=False):
        self.words, self.given, self.surname, self.middle = words, given, surname, middle
        self.lower = lower  # the display name was written in lower case ("kevin lyda")

    def __repr__(self):
        words = " ".join(self.words)
        return f"PersonName({words!r}, given={self.given!r}, surname={self.surname!r})"


_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*\.?")
_BRAND_CAPS = re.compile(r"[A-Z]{2,}[a-z]|[a-z][A-Z]{2}")
_INNER_CAP = re.compile(r"[a-z]{2,}[A-Z]")
_CAP_PREFIXES = ("Mac", "Fitz", "Van", "Von", "Della", "Le", "La", "De", "Di", "Du", "Da")


def _is_initial(word: str) -> bool:
    return len(word.rstrip(".")) == 1


def person_name(display: str) -> PersonName | None:
    """The person's name in a display name, or None when it does not look like a person's
    (see the module's docstring)."""
    d = unicodedata.normalize("NFC", display).strip().strip("\"'").strip()
    d = re.sub(r"\([^)]*\)|\[[^\]]*\]|\"[^\"]*\"", " ", d)  # comments, quoted nicknames
    if not d or "@" in d or any(c.isdigit() for c in d):
        return None
    d = re.sub(r"\s+(?:via|on behalf of)\s.*$", "", d, flags=re.IGNORECASE)
    d = re.sub(r"\.(?=[^\W\d_])", ". ", d)  # "R.Hughes" -> "R. Hughes"
    d = _SPACES.sub(" ", d).strip(" ,;")
    if "," in d:
        parts = [p.strip() for p in d.split(",")]
        parts = [p for p in parts if p and p.lower().rstrip(".") not in _SUFFIXES]
        if len(parts) > 2:
            return None
        words = (parts[1].split() + parts[0].split()) if len(parts) == 2 else parts[0].split()
    else:
        words = d.split()
    while words and words[0].rstrip(".") in TITLES:
        words = words[1:]
    while words and words[-1].lower().rstrip(".") in _SUFFIXES:
        words = words[:-1]
    if not 2 <= len(words) <= 5:
        return None
    for w in words:
        if not _WORD.fullmatch(w) or (w.endswith(".") and not _is_initial(w)):
            return None
        if any(p.lower() in NOT_A_PERSON for p in re.split(r"['’-]", w.rstrip("."))):
            return None
        if _BRAND_CAPS.search(w) or (_INNER_CAP.search(w) and not w.startswith(_CAP_PREFIXES)):
            return None
    letters = "".join(words)
    lower = letters.islower()
    if lower or letters.isupper():  # "kevin lyda", "HAMILTON, DAVID"
        words = [
            w.lower() if w.lower() in _PARTICLES.difference(_CAP_PARTICLES) else w.title()
            for w in words
        ]
    else:  # "GALLAGHER Maeve": the surname in capitals, first or last
        shouted = [i for i, w in enumerate(words) if len(w) > 2 and w.isupper()]
        words = [w.title() if i in shouted else w for i, w in enumerate(words)]
        if shouted == [0] and len(words) == 2:
            words.reverse()
    for w in words:
        if not w[0].isupper() and w.lower() not in _PARTICLES:
            return None
    # the surname: the last word with the particles before it ("van der Berg")
    i = len(words) - 1
    while i > 1 and words[i - 1].lower() in _PARTICLES:
        i -= 1
    surname, before = " ".join(words[i:]), words[:i]
    if not before or _is_initial(surname):
        return None
    # the first name they go by: "R. Kevin Oberman" goes by Kevin
    given = next((w for w in before if not _is_initial(w)), None)
    if given is None:
        return None
    middle = [w for w in before if w is not given]
    return PersonName(words, given, surname, middle, lower)


@lru_cache(maxsize=65536)
def _unaccented(word: str) -> str:
    """A word without its accents, its case kept (``Núñez`` -> ``Nunez``, ``Ó`` -> ``O``), a
    typographic apostrophe as a plain one: how the gazetteer's keys and the text's words are
    compared, so a name is found written with or without the accents of its display name."""
    if word.isascii():
        return word
    s = unicodedata.normalize("NFKD", word.replace("’", "'"))
    return "".join(c for c in s if not unicodedata.combining(c))


def _fold(word: str) -> str:
    """Lower case, accents and joiners dropped: how a name is written in an address."""
    s = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in s if c.isalnum() and not unicodedata.combining(c))


def _local_forms(name: PersonName, address: str) -> dict[str, bool]:
    """``{local part: made of the name}`` for an address whose local part is a handle of
    letters (a ``+tag`` dropped): ``maeve.gallagher``, ``mgallagher``, ``maeve_g`` are made
    of the name; ``kre`` is not (it counts only in a name's context)."""
    local = address.rsplit("@", 1)[0].split("+", 1)[0].lower()
    if not local or not re.fullmatch(r"[a-z]+(?:[._'-][a-z]+)*\d*", local):
        return {}
    bare = local.rstrip("0123456789")
    pieces = [p.replace("'", "") for p in re.split(r"[._-]", bare)]  # "d.o'shea": d, oshea
    bare = "".join(pieces) if len(pieces) == 1 else bare
    if any(p in NOT_A_PERSON for p in pieces) or bare in COMMON_WORDS:
        return {}
    g, m = _fold(name.given), "".join(_fold(w)[:1] for w in name.middle)
    surnames = {_fold(name.surname.split()[-1]), _fold(name.surname)}  # "berg", "vanderberg"
    two = _two_surnames(name)
    if two:  # "ruiz", "ruizortega"
        surnames |= {_fold(two[0]), _fold(two[1])}
    made, pairs = {g}, set()
    for s in surnames:
        made |= {s, g + s, g[0] + s, g + s[0], s + g, s + g[0], g[0] + m + s}
        pairs |= {(g, s), (s, g), (g[0], s), (g, s[0]), (s, g[0]), (g, m, s), (g[0], m, s)}
    ok = bare in made if len(pieces) == 1 else tuple(pieces) in pairs
    if not ok and (len(pieces) > 1 or len(bare) < 3):
        return {}
    return {local: ok}


def _common(word: str) -> bool:
    return len(word) <= 2 or word.lower() in COMMON_WORDS


def _particle_variants(surname: str) -> list[str]:
    """A surname with particles as it is written at the start of a sentence and inside one:
    ``van der Berg``, ``Van der Berg``, ``Van Der Berg`` (``Mac Giolla`` stays capitalised)."""
    words = surname.split()
    if len(words) < 2:
        return [surname]
    *parts, last = words
    low = [p if p.lower() in _CAP_PARTICLES else p.lower() for p in parts]
    cap = [p[:1].upper() + p[1:] for p in low]
    return list(
        dict.fromkeys(
            [surname, " ".join([*low, last]), " ".join([cap[0], *low[1:], last])]
            + [" ".join([*cap, last])]
        )
    )


def _two_surnames(name: PersonName) -> tuple[str, str] | None:
    """``(first surname, both)`` of a name of three words or more whose last two follow the
    first name and are no initials nor particles: ``Ana Ruiz Ortega`` -> ``("Ruiz", "Ruiz
    Ortega")``, the Spanish and Portuguese way (for ``Mary Ann Smith``, ``Ann Smith`` is still
    her name)."""
    words, surname = name.words, name.surname
    if " " in surname or len(words) < 3:
        return None
    first = words[-2]
    if (
        _is_initial(first)
        or first.lower() in _PARTICLES
        or words.index(name.given) >= len(words) - 2
    ):
        return None
    return first, f"{first} {surname}"


def name_forms(name: PersonName, address: str = "") -> dict[str, int]:
    """Every form of a person's name the gazetteer finds, with its flags."""
    given, surname, middle = name.given, name.surname, name.middle
    forms: dict[str, int] = {}

    def add(form: str, flags: int):  # needs a name's context only if every reading does
        old = forms.get(form, GATED)
        forms[form] = (old | flags) & ~(GATED & ~(old & flags))

    full_words = [w for w in name.words]
    add(" ".join(full_words), FULL)
    add(" ".join(w.rstrip(".") for w in full_words), FULL)
    surnames = _particle_variants(surname)
    two = _two_surnames(name)
    if two:  # "Ruiz Ortega", "Sra. Ruiz", "Ana Ruiz"
        surnames.append(two[1])
        add(two[0], SURNAME | GATED)
        add(f"{given} {two[0]}", FULL | (GATED if _common(two[0]) else 0))
    givens = [given]
    if "-" in given:  # "Jean-Pierre", also "Jean Pierre"
        givens.append(given.replace("-", " "))
    between = name.words[name.words.index(given) + 1 : -2]
    if two and len(between) == 1 and not _is_initial(between[0]):  # "María José García López"
        givens.append(f"{given} {between[0]}")
    first = name.words[0] if _is_initial(name.words[0]) else given
    initials = {first[0], given[0]}
    if "-" in given:  # "J.-P. Lacroix", "J-P Lacroix", "J.P. Lacroix", "JP Lacroix"
        i = [p[0] for p in given.split("-") if p]
        initials |= {".-".join(i), "-".join(i), ".".join(i), "".join(i)}
    for sn in surnames:
        for g in givens:
            add(f"{g} {sn}", FULL)
            add(f"{sn}, {g}", FULL)
            add(f"{g} {sn}".upper(), FULL)
            add(f"{sn}, {g}".upper(), FULL)
        for initial in initials:
            add(f"{initial}. {sn}", FULL)
            add(f"{initial}.{sn}", FULL)
            risky = initial in "AIO" or _common(sn.split()[-1])
            add(f"{initial} {sn}", FULL | (GATED if risky else 0))
        add(sn, SURNAME | (GATED if _common(sn) else 0))
    if middle:
        initials_ = " ".join(w[0] + "." for w in middle)
        add(f"{given} {initials_} {surname}", FULL)
        add(f"{surname}, {given} {initials_}", FULL)
    if name.lower:  # who writes their name in lower case signs so too
        risky = _common(given) or _common(surname.split()[-1])
        add(" ".join(full_words).lower(), FULL | (GATED if risky else 0))
        add(f"{given} {surname}".lower(), FULL | (GATED if risky else 0))
    for g in givens:
        add(g, GIVEN | (GATED if _common(g) else 0))
        if " " not in g and len(g) > 2:  # "thx maeve,", "— grace"
            add(g.lower(), GIVEN | INFORMAL | GATED)
    last = surname.split()[-1]
    if last != surname:  # "van der Berg": "Berg" alone too
        add(last, SURNAME | (GATED if _common(last) else 0))
    for local, made in _local_forms(name, address).items():
        add(local, LOCAL | (0 if made else GATED))
    return forms


# --- the gazetteer -----------------------------------------------------------------------


class Gazetteer:
    """The name forms of a set of correspondents and how to find them in text.

    ``trie`` maps each form, and each run of leading words of a longer form, to flags
    (``_FORM`` with the form's own flags, ``_PREFIX`` when a longer form goes on); the
    words of a key are joined as the text joins them (``" "``, ``". "``, ``", "``, ``"."``,
    ``"-"``, ``"_"``, an apostrophe). A plain dict, so it pickles to worker processes."""

    def __init__(self, forms: dict[str, int] | None = None, people: int = 0):
        self.people = people
        self.forms = dict(forms or {})
        self.trie: dict[str, int] = {}
        for form, flags in self.forms.items():
            keys = _keys(_unaccented(form))
            for key in keys[:-1]:
                self.trie[key] = self.trie.get(key, 0) | _PREFIX
            self.trie[keys[-1]] = self.trie.get(keys[-1], 0) | _FORM | flags

    def __len__(self) -> int:
        return len(self.forms)

    def gated(self, ordinary: set[str]) -> "Gazetteer":
        """This gazetteer with its one-word forms that are ``ordinary`` words (lower case)
        counting only in a name's context (``ordinary_words``)."""
        forms = {
            form: flags | GATED if form.lower() in ordinary and form.isalpha() else flags
            for form, flags in self.forms.items()
        }
        return Gazetteer(forms, people=self.people)

    @classmethod
    def from_correspondents(cls, pairs: Iterable[tuple[str, str]]) -> "Gazetteer":
        """The gazetteer of ``(display name, address)`` pairs (duplicates are fine). A form
        two people share needs a name's context only if it does for both (a local part made
        of one's name is not gated by another's common word)."""
        flags: dict[str, int] = {}
        ungated: set[str] = set()
        people: set[tuple[str, ...]] = set()
        for display, address in set(pairs):
            name = person_name(display or "")
            if name is None:
                continue
            people.add(tuple(name.words))
            for form, f in name_forms(name, address or "").items():
                flags[form] = flags.get(form, 0) | (f & ~GATED)
                if not f & GATED:
                    ungated.add(form)
        forms = {form: f | (0 if form in ungated else GATED) for form, f in flags.items()}
        return cls(forms, people=len(people))

    def find(self, text: str) -> list[Entity]:
        """The names in ``text``, in order, without overlaps (kind ``name``)."""
        if not text or not self.trie:
            return []
        found = self._candidates(text)
        if found:
            found = [c for i, c in enumerate(found) if not _no_person(text, found, i)]
        if not found:
            return []
        accepted: list[bool] = []
        for i, (_s, _e, flags) in enumerate(found):
            accepted.append(not flags & GATED or _in_context(text, found, i, accepted))
        kept = [c for c, ok in zip(found, accepted, strict=True) if ok]
        out: list[Entity] = []
        for s, e, f in _joined(text, kept):
            if f & (GIVEN | FULL) and s >= 3 and _INITIAL_BEFORE.fullmatch(text, s - 3, s):
                s = s - 3  # "R. Kevin Oberman"
            if out and s < out[-1].end:  # spans never overlap: the longer one wins
                if e - s > out[-1].end - out[-1].start:
                    out[-1] = Entity("name", s, e, text[s:e])
                continue
            out.append(Entity("name", s, e, text[s:e]))
        return out

    def _candidates(self, text: str) -> list[tuple[int, int, int]]:
        """Every longest form at a word start whose edges are a name's: ``(start, end,
        flags)``, left to right, not overlapping."""
        trie, out, taken = self.trie, [], 0
        plain = text.isascii()  # most texts: no word to fold
        token = _TOKEN if plain or not _COMBINING.search(text) else _TOKEN_MARKS
        for m in token.finditer(text):
            key = m.group()
            if not plain and not key.isascii():
                key = _unaccented(key)
            v = trie.get(key)
            if v is None or m.start() < taken:
                continue
            start, end = m.start(), m.end()
            if not _edge_before(text, start):
                continue
            ends = [(end, v)] if v & _FORM else []
            while v & _PREFIX:
                n = _NEXT.match(text, end)
                if n is None:
                    break
                sep, word = n.group(1, 2)
                if len(sep) > 1 and sep not in (". ", ", "):
                    sep = _SPACES.sub(" ", sep)
                if not word.isascii() or sep == "’":
                    sep, word = sep.replace("’", "'"), _unaccented(word)
                v = trie.get(f"{key}{sep}{word}")
                if v is None:
                    break
                key, end = f"{key}{sep}{word}", n.end()
                if v & _FORM:
                    ends.append((end, v))
            for end, v in reversed(ends):
                if _edge_after(text, start, end):
                    out.append((start, end, v & ~(_FORM | _PREFIX)))
                    taken = end
                    break
        return out


def _keys(form: str) -> list[str]:
    """The leading runs of words of a form: ``"Tony L. Svanstrom"`` -> ``["Tony", "Tony L",
    "Tony L. Svanstrom"]``."""
    return [form[: m.end()] for m in _TOKEN.finditer(form)]


def _edge_before(text: str, start: int) -> bool:
    if start == 0:
        return True
    c = text[start - 1]
    if c == "@" or c == "~":
        return False
    glue = _GLUE if text[start].isupper() else _GLUE_LOWER
    return not (c in glue and start >= 2 and text[start - 2].isalnum())


def _edge_after(text: str, start: int, end: int) -> bool:
    if end >= len(text):
        return True
    c = text[end]
    if c == "@":
        return False
    nxt = text[end + 1 : end + 2]
    if c in (_GLUE if text[start].isupper() else _GLUE_LOWER) and nxt.isalnum():
        return False
    # "Don't": a contraction, not a name
    return not (c in "'’" and nxt == "t" and not text[end + 2 : end + 3].isalnum())


def _line(text: str, start: int, end: int) -> tuple[str, str]:
    """The text before ``start`` on its line, and after ``end`` on its line."""
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", end)
    return text[ls:start], text[end : le if le >= 0 else len(text)]


def _in_context(text: str, found: list, i: int, accepted: list[bool]) -> bool:
    """Whether a form that needs a name's context (a common word, a short word, a handle not
    made of the name) has one: a title before it, a greeting or sign-off around it, *wrote*
    or *said* after it, another part of a name next to it (a first name then a surname), or
    a name in the same list (``Priya, Rose and Mark``). ``accepted``: the verdicts on the
    forms before it."""
    start, end, flags = found[i]
    if flags & INFORMAL:
        return _informal(text, start, end)
    first, last = start, end  # with the other part of a name next to it: "Will Brown"
    if flags & GIVEN and i + 1 < len(found):
        s, e, f = found[i + 1]
        if f & SURNAME and text[end:s] == " ":
            if not f & GATED:
                return True
            last = e
    if flags & SURNAME and i > 0:
        s, e, f = found[i - 1]
        if f & GIVEN and text[e:start] == " ":
            if not f & GATED:
                return True
            first = s
    before, after = _line(text, first, last)
    if len(before) <= 60:
        if _TITLE_BEFORE.search(before[-12:]):
            return True
        if _GREETING_BEFORE.fullmatch(before) and _GREETING_AFTER.fullmatch(after):
            return True
        if _THANKS_BEFORE.fullmatch(before) and _GREETING_AFTER.fullmatch(after):
            return True  # "Thanks so much, Joy - the scans..."
        if flags & GIVEN and _QUOTED.fullmatch(before) and _VOCATIVE_AFTER.match(after):
            return True  # "Mark, can you..."
        if _ALONE_BEFORE.fullmatch(before) and _ALONE_AFTER.fullmatch(after):
            return True
    if _SAID_AFTER.match(after):
        return True
    if flags & (GIVEN | SURNAME) and not _DIGIT_AFTER.match(after):  # not "May 3"
        if i > 0 and accepted[i - 1] and _LIST_JOIN.fullmatch(text, found[i - 1][1], start):
            return not found[i - 1][2] & LOCAL
        if i + 1 < len(found) and not found[i + 1][2] & (GATED | LOCAL):
            return bool(_LIST_JOIN.fullmatch(text, end, found[i + 1][0]))
    return False


def _no_person(text: str, found: list, i: int) -> bool:
    """Whether a name found is part of a place's, a day's or an organisation's name: before a
    street's or a building's word (``Kevin Street``, ``Whitfield Road``, ``Wilson Library``;
    ``Stephen's Green``, ``Patrick's Day``), after *St* or *Saint* (``St Stephen's Day``), or,
    a surname or first name alone, followed by capitalised words with a company's word
    (``Brandt Technik GmbH``, ``Doyle Consulting``, ``Raman & Associates``; a full name
    stays a name: ``Stefan Brandt | Brandt Technik GmbH``)."""
    start, end, flags = found[i]
    if start and _SAINT_BEFORE.search(text, max(0, start - 8), start):
        return True
    place = _PLACE_AFTER.match(text, end)
    if place:  # unless that word is a name of the gazetteer: "Will Hall"
        after = place.start(1) if place.start(1) >= 0 else place.start(2)
        if not (i + 1 < len(found) and found[i + 1][0] == after):
            return True
    return not flags & FULL and _company_after(text, end)


def _company_after(text: str, end: int) -> bool:
    """Whether the words after ``end`` on its line, capitalised, name a company: up to four
    of them, joined by spaces or ``&``, one of them a company's word (``COMPANY_WORDS``)."""
    if text[end : end + 1] not in (" ", "\t"):
        return False
    for word in text[end + 1 : end + 80].split("\n", 1)[0].split()[:4]:
        core = word.rstrip(",;:!?)")
        if core.rstrip(".").replace(".", "").replace("/", "") in COMPANY_WORDS:
            return True
        if word in ("&", "and"):
            continue
        core = core.rstrip(".")
        if core != word or not core[:1].isupper() or core in _TITLE_CASE_STOPS:
            return False
    return False


def _informal(text: str, start: int, end: int) -> bool:
    """Whether a first name written in lower case is in an informal greeting or sign-off:
    after *hi*, *hey*, *thx*, *thanks*... (``thx maeve,``), alone on its line after a dash
    (``— grace``), or alone on its line under a sign-off (``cheers,`` then ``may``) or when
    it is no common word (``maeve``)."""
    if not _INFORMAL_END.match(text, end):  # most "will", "may" go on: "you will see"
        return False
    before, after = _line(text, start, end)
    if (
        _INFORMAL_BEFORE.fullmatch(before) or _THANKS_BEFORE.fullmatch(before)
    ) and _GREETING_AFTER.fullmatch(after):
        return True
    if not _INFORMAL_ALONE_AFTER.fullmatch(after):
        return False
    if _DASH_BEFORE.fullmatch(before):
        return True
    if not _QUOTED.fullmatch(before):
        return False
    if not _common(text[start:end]):
        return True
    line_start = start - len(before)
    previous = text.rfind("\n", 0, max(line_start - 1, 0)) + 1
    return line_start > 0 and bool(_SIGN_OFF_LINE.fullmatch(text, previous, line_start - 1))


def _joined(text: str, found: list) -> list:
    """A first name and a surname of (maybe) different correspondents written one after the
    other, ``Maeve Brown``, or with a middle initial, ``Maeve A. Brown``, are one name: one
    span."""
    out: list = []
    for s, e, f in found:
        if out and (text[out[-1][1] : s] == " " or _MIDDLE.fullmatch(text, out[-1][1], s)):
            ps, _pe, pf = out[-1]
            if pf & GIVEN and not pf & (FULL | LOCAL) and f & SURNAME and not f & (FULL | LOCAL):
                out[-1] = (ps, e, FULL)
                continue
        out.append((s, e, f))
    return out


# --- correspondents --------------------------------------------------------------------------


# A simple address list (plain ASCII, ``Name <a@b>`` or ``"Name" <a@b>`` or ``a@b``, comma
# separated) is read with one regular expression (anything else by the standard library,
# five times slower); ``core.parsing.emails`` reads headers with the same ones.
_ATEXT = r"[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+"
_DOT_ATOM = rf"{_ATEXT}(?:\.{_ATEXT})*"
ADDR_SPEC = rf"{_DOT_ATOM}@{_DOT_ATOM}"
_QCHARS = r"[!#-\[\]-~]+"  # printable ASCII but the quote and the backslash
MAILBOX = re.compile(
    rf"(?P<bare>{ADDR_SPEC})"
    rf"|(?:(?P<atoms>{_ATEXT}(?: {_ATEXT})*)"
    rf'|"(?P<quoted>{_QCHARS}(?: {_QCHARS})*)") <(?P<addr>{ADDR_SPEC})>'
)
_SHAPE = re.sub(r"\(\?P<\w+>", "(?:", MAILBOX.pattern)
ADDRESS_LIST = re.compile(rf"[ \t]*(?:{_SHAPE})(?:[ \t]*,[ \t]*(?:{_SHAPE}))*[ \t]*")


@lru_cache(maxsize=65536)
def header_correspondents(header: str) -> tuple[tuple[str, str], ...]:
    """The ``(display name, address)`` pairs of a From/To/Cc/Bcc header that have a display
    name (cached: the same header comes back in thousands of messages)."""
    if not header:
        return ()
    if header.isascii() and "=?" not in header and ADDRESS_LIST.fullmatch(header):
        pairs = [
            (m["atoms"] or m["quoted"], m["addr"]) for m in MAILBOX.finditer(header) if m["addr"]
        ]
    else:
        pairs = email.utils.getaddresses([header])
    return tuple(
        (name.strip(), addr.strip().lower()) for name, addr in pairs if name.strip() and "@" in addr
    )


_RUNNING_WORD = re.compile(r"(?<![\w@.])[^\W\d_][^\W\d_'’-]*(?![\w@])")


def ordinary_words(texts: Iterable[str], *, least: int = 5) -> set[str]:
    """The words (lower case) a collection's own texts write as everyday words: at least
    ``least`` times in lower case, and not less often than capitalised (``that``,
    ``software``, ``daily`` in a list's mail; ``chris`` or ``gary`` almost never). A
    correspondent's first name or surname alone that is one of them needs a name's context,
    like the built-in ``COMMON_WORDS``: display names such as "That Goddess Chick", "Core
    Software" or "Lockergnome Daily" otherwise made every "That" and "Daily" a name."""
    counts: dict[str, int] = {}
    for text in texts:
        for w in _RUNNING_WORD.findall(text or ""):
            counts[w] = counts.get(w, 0) + 1
    out = set()
    for w, n in counts.items():
        if w.islower() and n >= least and n >= counts.get(w.capitalize(), 0):
            out.add(w)
    return out


def gazetteer_of_headers(rows: Iterable[Iterable[str]]) -> Gazetteer:
    """The gazetteer of the correspondents of messages given as rows of their From, To, Cc
    and Bcc headers (an iterator of a query: each row is read once)."""
    pairs: set[tuple[str, str]] = set()
    for row in rows:
        for header in row:
            if header:
                pairs.update(header_correspondents(header))
    return Gazetteer.from_correspondents(pairs)


# --- with the other recognisers --------------------------------------------------------------

_installed: Gazetteer | None = None


def install(gazetteer: Gazetteer | None) -> None:
    """Keep ``gazetteer`` for ``texts_entities`` in this process (a worker pool's
    initializer: the gazetteer is sent once to each worker, not with every job)."""
    global _installed
    _installed = gazetteer


def recognise(text: str, gazetteer: Gazetteer, lexicons=None) -> list[Entity]:
    """``core.recognisers.recognise`` with the gazetteer's names, without overlaps (a name
    inside an address or an email address is left to them: the longer span wins)."""
    return recognisers.resolve_overlaps(
        recognisers.recognise(text, lexicons) + gazetteer.find(text)
    )


def texts_entities(job, gazetteer: Gazetteer | None = None) -> list[tuple]:
    """``core.recognisers.texts_entities`` with the names of ``gazetteer`` (or the one
    ``install`` kept) among each text's personal data; a persona's terms are as they were."""
    gazetteer = gazetteer if gazetteer is not None else _installed
    found = recognisers.texts_entities(job)
    if not gazetteer:
        return found
    personal: dict[tuple, list[Entity]] = {}
    out, persona_rows = [], []
    for key, persona_id, field, e in found:
        if persona_id is None:
            personal.setdefault((key, field), []).append(e)
        else:
            persona_rows.append((key, persona_id, field, e))
    for key, field, text in job[0]:
        spans = personal.get((key, field), [])
        names = gazetteer.find(text)
        if names:
            spans = recognisers.resolve_overlaps(spans + names)
        out.extend((key, None, field, e) for e in spans)
    return out + persona_rows


# --- evaluation --------------------------------------------------------------------------------


def correspondents_header(line: str) -> list[tuple[str, str]]:
    """The pairs of a labelled file's ``# correspondents: Name <address>; ...`` line."""
    body = line.split(":", 1)[1]
    return [p for part in body.split(";") for p in email.utils.getaddresses([part.strip()])]


def evaluate(lines: Iterable[str]) -> recognisers.KindScore:
    """Precision and recall of the names found in labelled lines (``[[name:...]]`` marks; the
    correspondents on ``# correspondents:`` lines), exact spans, with the other recognisers
    running too (a name inside an email address must not be found)."""
    pairs: list[tuple[str, str]] = []
    texts = []
    for line in lines:
        if line.startswith("# correspondents:"):
            pairs += correspondents_header(line)
        elif line.strip() and not line.startswith("#"):
            texts.append(recognisers.parse_labelled(line.rstrip("\n")))
    gazetteer = Gazetteer.from_correspondents(pairs)
    gold_n = found_n = correct = 0
    for text, gold in texts:
        want = {(e.start, e.end) for e in gold if e.kind == "name"}
        got = {(e.start, e.end) for e in recognise(text, gazetteer) if e.kind == "name"}
        gold_n, found_n, correct = gold_n + len(want), found_n + len(got), correct + len(want & got)
    return recognisers.KindScore("name", gold_n, found_n, correct)
