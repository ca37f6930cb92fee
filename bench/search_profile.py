"""cProfile of the searcher's search (POST, redirect, results page) on a synthetic archive
built as ``bench/scale.py`` builds it (mailgen, import, index, pool, a learning step, the
classifier, a publication).

    source .ci/services
    .venv/bin/python bench/search_profile.py 10000
"""

import cProfile
import os
import pstats
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    from _setup import django_setup
    from mailgen import generate

    work = django_setup("search-profile")
    import scale
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse

    from annotate import roles, services

    call_command("collectstatic", interactive=False, verbosity=0)
    users = {
        name: services.user_create(username=name, password="pw-bench-only", role_names=[role])
        for name, role in [
            ("searcher", roles.SEARCHER),
            ("archivist", roles.ARCHIVIST),
            ("annotator", roles.ANNOTATOR),
        ]
    }
    mail = work / "mail"
    generate(mail, int(sys.argv[1]), per_file=500)
    built = scale.build("p", mail, 2, users, baseline_rate=False)
    client = Client()
    client.force_login(users["searcher"])
    url = reverse("searcher-search", args=[built["collection"].slug])
    client.post(url, {"q": "warm up"}, follow=True)
    words = ["grant", "budget", "travel", "hotel", "permit", "salary", "board", "minutes"]
    rng = random.Random(1)
    profiler, times = cProfile.Profile(), []
    for _ in range(20):
        q = " ".join(rng.sample(words, 2))
        started = time.perf_counter()
        profiler.enable()
        client.post(url, {"q": q}, follow=True)
        profiler.disable()
        times.append(time.perf_counter() - started)
    print("search ms", sorted(int(t * 1000) for t in times), "load", os.getloadavg())
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(60)


if __name__ == "__main__":
    main()
