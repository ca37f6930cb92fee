"""Locust workload for bench/turkle_compare.py: annotators working through a Turkle batch.

One loop = accept the next task of the batch (a redirect to its assignment), load the task
page, submit the answer (POST with the page's CSRF token); no think time. With TURKLE_IFRAME=1
the loop also loads the iframe that holds the task's text and form, as a browser would.
Users bench00..bench39 with password bench-pw; TURKLE_BATCH names the batch's id.
"""

import os
import re
import time

from locust import HttpUser, between, task

START_AT = float(os.environ.get("SASC_START_AT", "0"))
BATCH = os.environ.get("TURKLE_BATCH", "1")
IFRAME = os.environ.get("TURKLE_IFRAME") == "1"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ASSIGNMENT = re.compile(r"/task/(\d+)/assignment/(\d+)/$")
_next_user = iter(range(10_000))


class Annotator(HttpUser):
    wait_time = between(0, 0)

    def on_start(self):
        self.username = f"bench{next(_next_user) % 40:02d}"
        page = self.client.get("/login/", name="login page")
        token = CSRF.search(page.text).group(1)
        self.client.post(
            "/login/",
            {"username": self.username, "password": "bench-pw", "csrfmiddlewaretoken": token},
            name="login",
        )
        # Measured work starts together, once every annotator is in.
        time.sleep(max(0.0, START_AT - time.time()))

    @task
    def step(self):
        with self.client.get(
            f"/batch/{BATCH}/accept_next_task/",
            name="accept next task",
            allow_redirects=False,
            catch_response=True,
        ) as r:
            # Refusals (no task left, "database busy") are redirects to the index too.
            found = ASSIGNMENT.search(r.headers.get("Location", ""))
            if r.status_code != 302 or not found:
                r.failure(f"{r.status_code} to {r.headers.get('Location')}")
                return
        task_id, assignment_id = found.groups()
        url = f"/task/{task_id}/assignment/{assignment_id}/"
        with self.client.get(url, name="task page", catch_response=True) as r:
            token = CSRF.search(r.text) if r.status_code == 200 else None
            if token is None:
                r.failure(f"{r.status_code}: no form")
                return
        if IFRAME:
            self.client.get(
                f"/task/{task_id}/assignment/iframe/{assignment_id}/", name="task iframe"
            )
        with self.client.post(
            url,
            {"relevance": "1", "csrfmiddlewaretoken": token.group(1)},
            name="submit",
            allow_redirects=False,
            catch_response=True,
        ) as r:
            if r.status_code != 302:
                r.failure(f"{r.status_code}: {r.text[:200]}")
