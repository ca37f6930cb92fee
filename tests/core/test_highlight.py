from core.highlight import highlight, query_stems, snippet


def stem(word: str) -> str:
    """A toy analyser: lower-case, drop 'the', strip a plural s."""
    w = word.lower()
    return "" if w == "the" else w.rstrip("s")


def test_query_stems_drop_stopwords():
    assert query_stems("The Servers, the server!", stem) == {"server"}


def test_highlight_escapes_everything_and_marks_matches():
    text = "<script>alert('x')</script>\nServers & <b>server</b>"
    out = highlight(text, query_stems("server", stem), stem)
    assert "<script>" not in out and "<b>" not in out
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;<br>" in out
    assert "<mark>Servers</mark> &amp; &lt;b&gt;<mark>server</mark>&lt;/b&gt;" in out


def test_hyphenated_words_are_marked_per_part():
    out = highlight("razor-report failed", query_stems("report", stem), stem)
    assert out == "razor-<mark>report</mark> failed"


def test_snippet_windows_on_the_densest_matches():
    text = ("filler " * 100) + "the flutter of wings and wing flutter " + ("tail " * 100)
    out = snippet(text, query_stems("flutter wings", stem), stem, width=80)
    assert out.startswith("… ") and out.endswith(" …")
    assert out.count("<mark>") == 4
    assert len(out.replace("<mark>", "").replace("</mark>", "")) < 100


def test_snippet_without_matches_is_the_escaped_start():
    out = snippet("<i>" + "word " * 100, frozenset({"zzz"}), stem, width=30)
    assert out.startswith("&lt;i&gt;word") and out.endswith(" …")
    assert "<mark>" not in out


def test_light_stem_folds_plurals_and_drops_noise():
    from core.highlight import light_stem

    assert [light_stem(w) for w in ("Servers", "upgrading", "the", "8", "0")] == [
        "server",
        "upgrad",
        "",
        "",
        "",
    ]
    out = highlight(
        "Red Hat 8.0 upgrade", query_stems("Red Hat 8.0 upgrades", light_stem), light_stem
    )
    assert out == "<mark>Red</mark> <mark>Hat</mark> 8.0 <mark>upgrade</mark>"
