"""Locust workload for bench/judging_load.py: annotators judging continuously.

One loop = submit the current task's judgment and receive the next task to preload, in one
request (what the judging page does). SASC_PACE sets the think time per judgment (0 = none).
"""

import os
import random
import re
import time

from locust import HttpUser, between, task

PACE = float(os.environ.get("SASC_PACE", "0"))
START_AT = float(os.environ.get("SASC_START_AT", "0"))
PROJECT = os.environ.get("SASC_PROJECT", "bench")
MODE = os.environ.get("SASC_MODE", "judge")
TASK = re.compile(r'data-task-id="(\d+)" data-key="([0-9a-f]+)"')
_next_user = iter(range(10_000))


class Annotator(HttpUser):
    # Paced users wait 0.5x to 1.5x the pace between judgments (mean = the pace), so 40
    # annotators do not all press Enter in the same instant.
    wait_time = between(PACE / 2, PACE * 1.5) if PACE else between(0, 0)

    def on_start(self):
        # Each simulated annotator logs in as its own account, with its own session.
        self.username = f"bench{next(_next_user) % 40:02d}"
        page = self.client.get("/accounts/login/", name="login page")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        self.client.post(
            "/accounts/login/",
            {"username": self.username, "password": "bench-pw", "csrfmiddlewaretoken": token},
            name="login",
        )
        self.queue = []
        if MODE == "judge":
            # What the judging page does: GET it (it claims nothing), then its script claims
            # the current task and one to preload, by POST.
            self.client.get(f"/annotate/{PROJECT}/judge/", name="judge page")
            for _ in range(2):
                r = self.client.post(
                    f"/annotate/{PROJECT}/judge/next/",
                    data={"held": [t for t, _ in self.queue]},
                    name="claim a task",
                    headers={
                        "X-Requested-With": "fetch",
                        "X-CSRFToken": self.client.cookies.get("csrftoken", ""),
                    },
                )
                self.queue.extend(TASK.findall(r.text))
        # Warm-up: 40 logins hash 40 passwords (PBKDF2, by design slow). Measured work starts
        # together, once every annotator is in, at SASC_START_AT.
        time.sleep(max(0.0, START_AT - time.time()))
        if PACE:
            # Annotators at a steady pace do not all press Enter in the same instant: each
            # one's first judgment falls somewhere in the first pace interval.
            time.sleep(random.uniform(0, PACE))

    @task
    def step(self):
        if MODE == "health":
            self.client.get("/health/", name="baseline GET /health/")
            return
        if not self.queue:  # this annotator's share of the tasks is done
            return
        task_id, key = self.queue.pop(0)
        held = [t for t, _ in self.queue]
        data = {
            "relevance": "1",
            "persona_sensitive": "no",
            "personal_sensitive": "no",
            "comment": "",
            "active_seconds": "5.0",
            "started_at": "2026-11-21T10:00:00+00:00",
            "held": held,
        }
        with self.client.post(
            f"/annotate/{PROJECT}/judge/{task_id}/",
            data=data,
            catch_response=True,
            name="submit + next task",
            headers={
                "Idempotency-Key": key,
                "X-Requested-With": "fetch",
                "X-CSRFToken": self.client.cookies.get("csrftoken", ""),
            },
        ) as r:
            if r.status_code != 200 or "X-Judgment" not in r.headers:
                r.failure(f"{r.status_code}: {r.text[:200]}")
                return
            self.queue.extend(TASK.findall(r.text))
