"""Index and feature build time for the demo corpus and for all 6,046 messages.

Reports the one-off JVM + pyserini start separately, because a worker pays it once per
process, then Lucene indexing and the TF-IDF matrix. Baseline in the same run: writing the
same texts to a JSONL file (the I/O floor every index build pays).

    .venv/bin/python bench/index_build.py
"""

import json
import time

from _setup import corpus_root, django_setup


def main():
    work = django_setup("index")
    from annotate import services
    from annotate.models import Collection
    from annotate.selectors import collection_index_documents
    from config.demo import corpus
    from core import lucene
    from ranking.services import index_build

    root = corpus_root()
    started = time.perf_counter()
    lucene.warm()
    jvm = time.perf_counter() - started
    print(f"JVM + pyserini import (once per process): {jvm:.1f} s")
    for label, folders in (("ham (demo)", corpus.HAM_FOLDERS), ("all folders", corpus.ALL_FOLDERS)):
        collection = Collection.objects.create(name=label, slug=label.split()[0])
        for f in folders:
            services.import_run(collection=collection, fmt="emails", path=root / f)
        started = time.perf_counter()
        with open(work / f"{collection.slug}.jsonl", "w") as out:
            for docid, text in collection_index_documents(collection=collection):
                out.write(json.dumps({"id": docid, "contents": text}) + "\n")
        floor = time.perf_counter() - started
        started = time.perf_counter()
        result = index_build(collection_id=collection.pk)
        total = time.perf_counter() - started
        print(
            f"{label:<12} {result['documents']:>5} docs: index + features {total:5.1f} s "
            f"(Lucene {result['lucene_seconds']} s, TF-IDF {result['features_seconds']} s, "
            f"latent topics {result['latent_seconds']} s, "
            f"{result['terms']} terms); baseline JSONL dump {floor:.2f} s"
        )


if __name__ == "__main__":
    main()
