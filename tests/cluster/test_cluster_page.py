"""The chat page through haproxy: its replica is killed mid-call, and the page goes on with another (issue 17, point 3).

The replicas serve the browser tests' agent (tests/browser/browser_app.py) on PostgreSQL behind
haproxy; Chromium loads the page from haproxy and its socket goes through haproxy too. While the
run waits for the page's `GetUserInput` (a question to the person), the replica holding the
conversation is killed: the page reconnects through haproxy, another replica takes the
conversation over and asks the page again, and the person's answer finishes the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from cluster_checks import lease_owner, thread_ids
from cluster_harness import TOKEN, Cluster, find_haproxy, running_cluster

from pg_cluster import find_bin_dir

BROWSER_APP = Path(__file__).parents[1] / "browser" / "browser_app.py"


@pytest.fixture
def page_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """The cluster, its replicas serving the browser tests' agent."""
    pytest.importorskip("playwright", reason="the page test needs the playwright package: pip install -e '.[dev]'")
    pg_bin, haproxy = find_bin_dir(), find_haproxy()
    if pg_bin is None or haproxy is None:
        pytest.skip("needs PostgreSQL's binaries and haproxy (Debian: apt-get install postgresql haproxy)")
    with running_cluster(tmp_path, pg_bin, haproxy, app=BROWSER_APP) as running:
        yield running


async def test_the_page_goes_on_with_another_replica_when_its_own_is_killed_mid_call(page_cluster: Cluster) -> None:
    from playwright.async_api import async_playwright, expect

    from browser.browser_support import CHROMIUM_ARGS, chromium_path

    executable = chromium_path()
    if executable is None:
        pytest.skip("needs Chromium: apt-get install chromium (or set TOOLWIRE_CHROMIUM)")
    cluster = page_cluster
    page_url = cluster.url.replace("ws://", "http://", 1).removesuffix("/ws")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(f"{page_url}/#token={TOKEN}")
            connection = page.locator("#connection")
            await expect(connection).to_have_attribute("data-state", "open", timeout=15_000)
            send = page.get_by_role("button", name="Send", exact=True)
            await expect(send).to_be_enabled(timeout=15_000)  # the page's tools are registered
            box = page.get_by_label("Message", exact=True)
            await box.fill("ask me something")
            await box.press("Enter")
            question = page.get_by_label("What should I call you?")
            await expect(question).to_be_visible(timeout=15_000)  # the run waits for the person
            [conversation] = await anyio.to_thread.run_sync(lambda: thread_ids(cluster.pg.dsn))
            owner = lease_owner(cluster, conversation)
            await cluster.kill(owner)
            # The page reconnects through haproxy; once another replica took the conversation
            # over, the question is asked again there (a read tool runs again on resume).
            await expect(connection).to_have_attribute("data-state", "open", timeout=30_000)
            await expect(question).to_be_visible(timeout=30_000)
            await question.fill("Ada")
            await question.press("Enter")
            answer = page.locator("#timeline .entry.answer").last
            await expect(answer).to_have_text(re.compile(r"Done\. GetUserInput=SUCCESS:Ada"), timeout=30_000)
        finally:
            await browser.close()
    assert lease_owner(cluster, conversation) != owner
