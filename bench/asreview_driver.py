"""Run ASReview's default model (ELAS u4) on jobs read from stdin; run by ASReview's own
Python, never the project's (``bench/screening.py`` starts it):

    /tmp/asr/bin/python bench/asreview_driver.py < job.json > result.json

The job: ``{"texts": [...], "runs": [{"labels": [0/1 per text], "priors": [rel, irr]}]}``.
For each run: the priors are labelled first, then ASReview's simulation labels one document
per retrain until the last relevant one is found (its default stopper). Returned per run:
the judging order (priors first) and the seconds between consecutive labels (one model
fit + ranking + labelling each).
"""

import json
import sys

import numpy as np
import pandas as pd
from asreview.learner import ActiveLearningCycle
from asreview.models.models import AI_MODEL_CONFIGURATIONS
from asreview.simulation.simulate import Simulate


def main() -> None:
    job = json.load(sys.stdin)
    elas = next(m for m in AI_MODEL_CONFIGURATIONS if m["name"] == "elas_u4")["value"]
    data = pd.DataFrame({"title": job["texts"], "abstract": [""] * len(job["texts"])})
    features = None
    out = []
    for run in job["runs"]:
        labels = np.asarray(run["labels"], dtype=int)
        cycle = ActiveLearningCycle.from_meta(elas)
        if features is None:  # the same texts for every run: extract once, as ASReview does
            features = cycle.transform(data)
        sim = Simulate(features, labels, cycle, skip_transform=True, print_progress=False)
        sim.label(run["priors"])
        sim.review()
        results = sim._results
        times = results["time"].to_numpy(dtype=float)[len(run["priors"]) - 1 :]
        out.append(
            {
                "order": [int(r) for r in results["record_id"]],
                "step_seconds": np.diff(times).tolist(),
            }
        )
    json.dump({"model": "elas_u4", "runs": out}, sys.stdout)


if __name__ == "__main__":
    main()
