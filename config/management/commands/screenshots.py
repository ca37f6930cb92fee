"""Refresh docs/screenshots/: each role's pages of the demo, on a desktop and a phone screen."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.management.commands.demo import PASSWORD, SLUG

VIEWPORTS = {"desktop": (1280, 720), "phone": (390, 844)}
JUDGING = "demo-judging"
LEARNING = "demo-active-learning"
QUERY = "red hat 8.0 upgrade"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]


class Command(BaseCommand):
    help = (
        "Set up the demo on a throwaway SASC_VAR_DIR, serve it, log in as each demo user and "
        "save a screenshot of each of their pages at 1280x720 and 390x844 (Playwright, Chromium)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--out", type=Path, default=Path(settings.BASE_DIR) / "docs" / "screenshots"
        )
        parser.add_argument(
            "--cache",
            type=Path,
            default=Path(settings.VAR_DIR) / "cache",
            help="a var/cache holding the downloaded corpus (copied; downloaded if absent)",
        )
        parser.add_argument(
            "--var-dir",
            type=Path,
            help="set up (or reuse) the demo here instead of in a throwaway folder",
        )
        parser.add_argument("--port", type=int, default=8795)
        parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
        parser.add_argument("--format", choices=["png", "jpeg"], default="png")

    def handle(self, *args, **opts):
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise CommandError("Playwright is missing: `make install` installs it") from None
        if not Path(opts["chromium"]).exists():
            raise CommandError(f"no Chromium at {opts['chromium']} (--chromium PATH)")
        out = opts["out"]
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="sasc-screenshots-") as tmp:
            var_dir = opts["var_dir"] or Path(tmp)
            if opts["cache"].is_dir() and not (var_dir / "cache").exists():
                shutil.copytree(opts["cache"], var_dir / "cache", symlinks=True)
            demo, url = self.start_demo(var_dir, opts["port"])
            try:
                with sync_playwright() as p:
                    browser = p.chromium.launch(
                        executable_path=opts["chromium"], args=CHROMIUM_ARGS
                    )
                    try:
                        saved = Shooter(browser, url, out, opts["format"], self.stdout).run()
                    finally:
                        browser.close()
            finally:
                os.killpg(demo.pid, signal.SIGTERM)
                demo.wait(timeout=60)
        self.stdout.write(f"Saved {saved} screenshots in {out}")

    def start_demo(self, var_dir: Path, port: int):
        """Run `manage.py demo` (setup, then web and worker); return it and its URL."""
        self.stdout.write(f"Setting up and starting the demo in {var_dir} ...")
        demo = subprocess.Popen(
            [sys.executable, "manage.py", "demo", "--port", str(port)],
            cwd=settings.BASE_DIR,
            env={**os.environ, "SASC_VAR_DIR": str(var_dir)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for line in demo.stdout:
            self.stdout.write(f"  demo: {line.rstrip()}")
            match = re.match(r"sasc is running at (\S+?)/? ", line)
            if match:
                # The demo keeps writing (relayed warnings): keep its pipe drained.
                threading.Thread(target=demo.stdout.read, daemon=True).start()
                return demo, match.group(1)
        demo.wait()
        raise CommandError(f"the demo stopped before serving (exit code {demo.returncode})")


class Shooter:
    """Log in as each demo user and save their pages, at every viewport."""

    def __init__(self, browser, url: str, out: Path, fmt: str, stdout):
        self.browser, self.url, self.out, self.fmt, self.stdout = browser, url, out, fmt, stdout
        self.saved = 0

    def run(self) -> int:
        for viewport, (width, height) in VIEWPORTS.items():
            self.viewport = viewport
            self.size = {"width": width, "height": height}
            # Until a classifier is trained every result waits for review: the searcher's
            # search makes the archivist's queue (through the worker), the archivist
            # releases a few, and the searcher's second search shows them.
            self.as_user("searcher", self.search)
            self.as_user("archivist", self.archivist)
            self.as_user("searcher", self.searcher)
            self.as_user("annotator1", self.annotator)
            self.as_user("lead", self.lead)
        return self.saved

    def as_user(self, username, pages):
        context = self.browser.new_context(viewport=self.size, device_scale_factor=1)
        # A busy machine: the first pages wait for the server's Lucene warm-up.
        context.set_default_timeout(120_000)
        page = context.new_page()
        try:
            page.goto(f"{self.url}/accounts/login/")
            page.fill("input[name=username]", username)
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit], input[type=submit]")
            page.wait_for_load_state("load")
            pages(page)
        finally:
            context.close()

    def shot(self, page, name: str, path: str | None = None) -> None:
        if path is not None:
            page.goto(f"{self.url}{path}")
        page.wait_for_load_state("load")
        time.sleep(0.5)  # htmx swaps and fonts settle
        target = self.out / f"{name}-{self.viewport}.{'jpg' if self.fmt == 'jpeg' else 'png'}"
        options = {"quality": 80} if self.fmt == "jpeg" else {}
        page.screenshot(path=str(target), type=self.fmt, full_page=False, **options)
        self.saved += 1
        self.stdout.write(f"  {target.name}")
        self.stdout.flush()

    def search(self, page):
        page.goto(f"{self.url}/search/{SLUG}/")
        page.fill("input[name=q]", QUERY)
        page.press("input[name=q]", "Enter")
        page.wait_for_load_state("load")

    def searcher(self, page):
        self.search(page)
        self.shot(page, "searcher-search-results")

    def annotator(self, page):
        page.goto(f"{self.url}/annotate/{JUDGING}/judge/")
        # The page's script claims the next task; wait until a document is shown.
        for _ in range(40):
            if page.locator("article, .document, [data-task]").count():
                break
            time.sleep(0.25)
        self.shot(page, "annotator-judging")

    def archivist(self, page):
        items = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # the worker files the search's review requests
            page.goto(f"{self.url}/review/")
            items = self.review_items(page)
            if items:
                break
            time.sleep(3)
        self.shot(page, "archivist-queue")
        if not items:
            self.stdout.write("  (the review queue stayed empty: no review page to show)")
            return
        self.shot(page, "archivist-review-item", items[0])
        for item in items[:5]:  # release a few, for the searcher's results
            page.goto(f"{self.url}{item}")
            page.click("button[name=kind][value=release]")
            page.wait_for_load_state("load")

    def review_items(self, page) -> list[str]:
        hrefs = page.locator("a[href^='/review/']").evaluate_all(
            "els => els.map(e => e.getAttribute('href'))"
        )
        return [h for h in hrefs if re.fullmatch(r"/review/\d+/\d+/", h or "")]

    def lead(self, page):
        self.shot(page, "lead-dashboard", f"/annotate/{JUDGING}/dashboard/")
        self.shot(page, "lead-learning", f"/annotate/{LEARNING}/learning/")
        self.shot(page, "lead-agreement", f"/annotate/{JUDGING}/agreement/")
        self.shot(page, "lead-collection", f"/collections/{SLUG}/")
        self.shot(page, "lead-audit", "/review/audit/")
