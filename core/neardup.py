"""Near-duplicates at collection scale: MinHash signatures and LSH banding, pure: no Django.

Built once per index version with the collection (``ranking.services.index_build``, by the
worker), saved beside the index and memory-mapped by readers, so asking for a document's
near-duplicates reads one row of a neighbour list instead of multiplying its TF-IDF row
with the whole collection's matrix.

Resemblance is the Jaccard similarity of the documents' sets of word 3-shingles (Broder
1997), estimated by the fraction of ``PERMS`` MinHash values two signatures share; the
hash family is 64-bit multiply-shift (Dietzfelbinger et al.), which keeps everything in
numpy's uint64 arithmetic. Candidate pairs come from LSH banding (``BANDS`` bands of
``ROWS`` rows: a pair at Jaccard s becomes a candidate with probability
1 - (1 - s^ROWS)^BANDS, 0.99 at s = 0.7 and 0.64 at s = 0.5), and each candidate is kept
only when its estimated Jaccard reaches ``THRESHOLD``. Kept pairs are the neighbour lists;
their connected components are the near-duplicate clusters (the archivist's queue groups by
them).

Pairwise questions (``similarity``, ``collapse``) read the two signatures only, never the
neighbour lists or clusters, which depend on every other document: the searcher's results
collapse near-duplicates with them, so a hidden document cannot change what a searcher sees.
"""

import json
import os
import re
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SHINGLE = 3  # words per shingle
PERMS = 64  # MinHash values per signature
BANDS, ROWS = 16, 4  # BANDS * ROWS == PERMS
THRESHOLD = 0.7  # estimated Jaccard at which two documents are near-duplicates
# A bucket bigger than this (thousands of copies of one notice) is linked as a star from
# its first members instead of pair by pair, so one boilerplate text costs linear work.
_ALL_PAIRS = 32
_STAR = 4
_SEED = 20261123
EMPTY = np.uint32(0xFFFFFFFF)  # the signature of a text without a word

_WORD = re.compile(r"[^\W_]+(?:['-][^\W_]+)*", re.UNICODE)
_lock = threading.Lock()
_cache: dict[str, "NearDuplicates"] = {}


def _hash_family(perms: int = PERMS, seed: int = _SEED) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**63, size=perms, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63, size=perms, dtype=np.uint64)
    return a, b


_A, _B = _hash_family()
_M1, _M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)


def _token_hashes(text: str, cache: dict) -> list[int]:
    tokens = _WORD.findall(text.casefold())
    hashes = list(map(cache.get, tokens))
    if None in hashes:
        for i, h in enumerate(hashes):
            if h is None:
                hashes[i] = cache.setdefault(tokens[i], zlib.crc32(tokens[i].encode("utf-8")))
    return hashes


def _shingle_hashes(words: np.ndarray, size: int) -> np.ndarray:
    """Hash every window of ``size`` consecutive values of ``words`` (uint64)."""
    count = len(words) - size + 1
    with np.errstate(over="ignore"):
        h = np.zeros(count, dtype=np.uint64)
        for i in range(size):
            h = h * _M1 + words[i : count + i]
        h ^= h >> np.uint64(29)
        h *= _M2
    return h


def shingles(text: str, *, size: int = SHINGLE) -> np.ndarray:
    """Return the distinct hashed word ``size``-shingles of ``text`` (case folded), uint64.

    A text shorter than ``size`` words is one shingle of all its words; a text without a
    word has none. Tokens are hashed with CRC-32, so a shingle's hash is the same in every
    process (Python's ``hash`` of a string is not)."""
    words = _token_hashes(text, {})
    if not words:
        return np.empty(0, dtype=np.uint64)
    words += [0] * (size - len(words))
    return np.unique(_shingle_hashes(np.array(words, dtype=np.uint64), size))


def text_signatures(texts, *, size: int = SHINGLE, batch: int = 2000) -> np.ndarray:
    """Return the MinHash signatures (n x ``PERMS`` uint32) of the word ``size``-shingles
    of ``texts`` (an iterable, read once), ``batch`` texts at a time; a text without a word
    gets ``EMPTY`` everywhere. The same values as ``signatures`` of ``shingles`` (a minimum
    does not mind repeated shingles, so they are not removed here)."""
    cache: dict = {}
    parts = []
    chunk: list[list[int]] = []

    def flush():
        sigs = np.full((len(chunk), PERMS), EMPTY, dtype=np.uint32)
        rows = [i for i, w in enumerate(chunk) if w]
        if rows:
            padded = [chunk[i] + [0] * (size - len(chunk[i])) for i in rows]
            lengths = np.array([len(w) for w in padded], dtype=np.int64)
            flat = np.fromiter(
                (h for w in padded for h in w), dtype=np.uint64, count=int(lengths.sum())
            )
            hashed = _shingle_hashes(flat, size)
            # Keep the windows that start and end inside one text.
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            counts = lengths - size + 1
            keep = np.repeat(starts, counts) + (
                np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
            )
            sigs[rows] = _min_hash(hashed[keep], np.cumsum(counts) - counts)
        parts.append(sigs)
        chunk.clear()

    for text in texts:
        chunk.append(_token_hashes(text, cache))
        if len(chunk) >= batch:
            flush()
    if chunk or not parts:
        flush()
    return np.concatenate(parts) if parts else np.empty((0, PERMS), dtype=np.uint32)


def _min_hash(flat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    out = np.empty((len(offsets), PERMS), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for p in range(PERMS):
            hashed = ((_A[p] * flat + _B[p]) >> np.uint64(32)).astype(np.uint32)
            out[:, p] = np.minimum.reduceat(hashed, offsets)
    return out


def signatures(shingle_sets: list[np.ndarray], *, batch: int = 200_000) -> np.ndarray:
    """Return the MinHash signatures (n x ``PERMS`` uint32) of ``shingle_sets``; a set
    without a shingle gets ``EMPTY`` everywhere. Works ``batch`` shingles at a time, one
    permutation after another, so memory stays near 8 * ``batch`` bytes per array."""
    n = len(shingle_sets)
    out = np.full((n, PERMS), EMPTY, dtype=np.uint32)
    start = 0
    while start < n:
        end, count = start, 0
        while end < n and (count == 0 or count + len(shingle_sets[end]) <= batch):
            count += len(shingle_sets[end])
            end += 1
        rows = [i for i in range(start, end) if len(shingle_sets[i])]
        if rows:
            flat = np.concatenate([shingle_sets[i] for i in rows])
            lengths = np.array([len(shingle_sets[i]) for i in rows])
            out[rows] = _min_hash(flat, np.concatenate([[0], np.cumsum(lengths)[:-1]]))
        start = end
    return out


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The fraction of MinHash values that signatures ``a`` and ``b`` (rows, broadcast)
    share; 0 when either is ``EMPTY`` (a text without words resembles nothing)."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    same = (a == b).mean(axis=1)
    empty = (a == EMPTY).all(axis=1) | (b == EMPTY).all(axis=1)
    return np.where(empty, 0.0, same)


def candidate_pairs(sigs: np.ndarray) -> np.ndarray:
    """Return the distinct LSH candidate pairs (m x 2, int64, i < j): rows that agree on
    every row of at least one band; empty signatures take part in none."""
    n = len(sigs)
    live = np.flatnonzero(~(sigs == EMPTY).all(axis=1))
    found = []
    for band in range(BANDS):
        part = sigs[live, band * ROWS : (band + 1) * ROWS].astype(np.uint64)
        key = np.zeros(len(live), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for col in range(ROWS):
                key = key * _M1 + part[:, col]
        order = np.argsort(key, kind="stable")
        sorted_keys = key[order]
        cuts = np.flatnonzero(np.diff(sorted_keys)) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(order)]])
        big = np.flatnonzero(ends - starts > 1)
        for s, e in zip(starts[big], ends[big], strict=True):
            members = live[order[s:e]]
            if len(members) <= _ALL_PAIRS:
                i, j = np.triu_indices(len(members), k=1)
                found.append(np.stack([members[i], members[j]], axis=1))
            else:
                hubs = members[:_STAR]
                i, j = np.triu_indices(len(hubs), k=1)
                found.append(np.stack([hubs[i], hubs[j]], axis=1))
                rest = members[_STAR:]
                for hub in hubs:
                    found.append(np.stack([np.full(len(rest), hub), rest], axis=1))
    if not found:
        return np.empty((0, 2), dtype=np.int64)
    pairs = np.concatenate(found).astype(np.int64)
    pairs.sort(axis=1)
    codes = np.unique(pairs[:, 0] * n + pairs[:, 1])
    return np.stack([codes // n, codes % n], axis=1)


@dataclass
class NearDuplicates:
    """A collection version's signatures, neighbour lists (CSR) and clusters."""

    docids: list[str]
    signatures: np.ndarray  # n x PERMS uint32
    indptr: np.ndarray  # n + 1, int64
    neighbours: np.ndarray  # int32 rows, each document's most similar first
    similarity: np.ndarray  # float32, beside ``neighbours``
    clusters: np.ndarray  # int32: the smallest row of each document's connected component
    _rows: dict = field(default=None, repr=False)

    @classmethod
    def build(cls, docs, *, threshold: float = THRESHOLD) -> "NearDuplicates":
        """Sign ``(docid, text)`` pairs, band them, verify the candidates and cluster."""
        import scipy.sparse as sp
        from scipy.sparse.csgraph import connected_components

        docids: list[str] = []

        def texts():
            for docid, text in docs:
                docids.append(docid)
                yield text

        sigs = text_signatures(texts())
        n = len(docids)
        pairs = candidate_pairs(sigs)
        sims = np.empty(len(pairs), dtype=np.float32)
        for s in range(0, len(pairs), 100_000):
            chunk = pairs[s : s + 100_000]
            sims[s : s + len(chunk)] = estimated_jaccard(sigs[chunk[:, 0]], sigs[chunk[:, 1]])
        keep = sims >= threshold
        pairs, sims = pairs[keep], sims[keep]
        rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
        cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
        vals = np.concatenate([sims, sims])
        # Sort each row's neighbours by similarity (desc), then row number, for stable output.
        order = np.lexsort((cols, -vals, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(indptr, rows + 1, 1)
        indptr = np.cumsum(indptr)
        graph = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n))
        _count, labels = connected_components(graph, directed=False)
        # Name each cluster after its smallest row, so the labels do not depend on scipy.
        first = np.full(labels.max() + 1 if n else 0, n, dtype=np.int64)
        np.minimum.at(first, labels, np.arange(n))
        return cls(
            docids,
            sigs,
            indptr,
            cols.astype(np.int32),
            vals.astype(np.float32),
            first[labels].astype(np.int32) if n else np.empty(0, dtype=np.int32),
        )

    def save(self, directory: Path) -> None:
        """Write the arrays to ``directory`` (created), memory-mappable."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name in ("signatures", "indptr", "neighbours", "similarity", "clusters"):
            np.save(directory / f"{name}.npy", getattr(self, name))
        meta = {"shingle": SHINGLE, "perms": PERMS, "bands": BANDS, "rows": ROWS}
        (directory / "meta.json").write_text(json.dumps(meta))
        (directory / "docids.json").write_text(json.dumps(self.docids))

    @classmethod
    def load(cls, directory: Path) -> "NearDuplicates":
        """Return the index in ``directory``, memory-mapped, loaded once per process."""
        key = os.fspath(Path(directory).resolve())
        with _lock:
            cached = _cache.get(key)
            if cached is not None:
                return cached
            d = Path(key)
            arrays = {
                name: np.load(d / f"{name}.npy", mmap_mode="r")
                for name in ("signatures", "indptr", "neighbours", "similarity", "clusters")
            }
            loaded = cls(json.loads((d / "docids.json").read_text()), **arrays)
            _cache[key] = loaded
            return loaded

    def row(self, docid: str) -> int | None:
        """The row of ``docid``, or None when this version does not hold it."""
        if self._rows is None:
            self._rows = {d: i for i, d in enumerate(self.docids)}
        return self._rows.get(docid)

    def neighbours_of(self, docid: str, *, threshold: float = THRESHOLD, limit: int = 20):
        """``[(docid, estimated Jaccard)]`` of the document's near-duplicates, most similar
        first, itself left out; only pairs kept at build time (at least ``THRESHOLD``)."""
        row = self.row(docid)
        if row is None:
            return []
        s, e = int(self.indptr[row]), int(self.indptr[row + 1])
        out = []
        for r, sim in zip(
            self.neighbours[s:e].tolist(), self.similarity[s:e].tolist(), strict=True
        ):
            if sim >= threshold:
                out.append((self.docids[r], float(sim)))
            if len(out) >= limit:
                break
        return out

    def cluster_of(self, docid: str) -> str | None:
        """A name for the document's near-duplicate cluster (its first member's docid),
        None for a document without near-duplicates or not in this version."""
        row = self.row(docid)
        if row is None or self.indptr[row] == self.indptr[row + 1]:
            return None
        return self.docids[int(self.clusters[row])]

    def similarity_between(self, a: str, b: str) -> float:
        """Estimated Jaccard of two documents from their two signatures alone."""
        ra, rb = self.row(a), self.row(b)
        if ra is None or rb is None:
            return 0.0
        return float(estimated_jaccard(self.signatures[ra], self.signatures[rb])[0])

    def collapse(self, docids: list[str], *, threshold: float = THRESHOLD) -> list[list[str]]:
        """Group a ranked list: walking down it, a document joins the first earlier group
        whose head it resembles at ``threshold`` or more, else heads a new group. Reads the
        signatures of these documents only (nothing about any other document); a docid this
        version lacks heads its own group."""
        groups: list[list[str]] = []
        heads: list[int] = []  # the row of each group's head
        owners: list[int] = []  # the group each of ``heads`` leads
        for docid in docids:
            row = self.row(docid)
            if row is None:
                groups.append([docid])
                continue
            if heads:
                sims = estimated_jaccard(self.signatures[heads], self.signatures[row])
                close = np.flatnonzero(sims >= threshold)
                if len(close):
                    groups[owners[int(close[0])]].append(docid)
                    continue
            heads.append(row)
            owners.append(len(groups))
            groups.append([docid])
        return groups


def forget(directory: Path) -> None:
    """Drop a cached index (its files are about to be removed)."""
    with _lock:
        _cache.pop(os.fspath(Path(directory).resolve()), None)
