"""The dashboard in a real browser: Debian's headless Chromium, driven by Selenium through
Debian's chromedriver, opens /dashboard while agents call tools, checks that the figures move and
that the chosen trajectory's timeline draws its calls, and saves a screenshot
(TOOLBRIDGE_SCREENSHOT names where; docs/observability.md shows one)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from tb_support import MissingDependency, RawSession, fixture_server

pytestmark = pytest.mark.timeout(180)

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
TRAJECTORY = "eval-run-3:task-17"


def browser():
    for path in (CHROMIUM, CHROMEDRIVER):
        if not shutil.which(path):
            raise MissingDependency(f"{path} not found: run scripts/setup (Debian's chromium and "
                                    "chromium-driver)")
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1100"):
        options.add_argument(arg)
    return webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER),
                            options=options)


def run_agents(url: str, stop: threading.Event) -> None:
    """Two agents: the chosen trajectory alternates fast and slow calls; another keeps busy."""

    def agent(name: str, slow_ms: int) -> None:
        s = RawSession(url).initialize()
        try:
            i = 0
            while not stop.is_set():
                tool, args = (("fixture__sleep", {"ms": slow_ms}) if i % 3 == 0
                              else ("fixture__echo", {"text": f"step {i}"}))
                if i % 7 == 6:
                    tool, args = "fixture__fail", {"message": "a tool error"}
                s.request("tools/call", {"name": tool, "arguments": args,
                                         "_meta": {"toolbridge/session": name}}, i)
                i += 1
                time.sleep(0.05)
        finally:
            s.close()

    threads = [threading.Thread(target=agent, args=(TRAJECTORY, 150)),
               threading.Thread(target=agent, args=("eval-run-3:task-18", 400))]
    for t in threads:
        t.start()
    stop.wait()
    for t in threads:
        t.join()


def tile_value(driver, key: str) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(
        By.XPATH, f"//div[@class='tile'][div[@class='k' and text()='{key}']]/div[@class='v']").text


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as exc:  # the page may be mid-update
            last = exc
        time.sleep(0.2)
    raise AssertionError(f"{what} within {timeout} s (last: {last!r})")


def test_the_dashboard_moves_and_draws_a_trajectory(gateway_factory, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    gw = gateway_factory({"fixture": fixture_server()})
    gw.wait_ready()
    stop = threading.Event()
    load = threading.Thread(target=run_agents, args=(gw.mcp_url, stop))
    load.start()
    driver = browser()
    try:
        driver.get(gw.base_url + "/dashboard")
        first = int(wait_for(lambda: int(tile_value(driver, "calls (all)")) > 0 and
                             tile_value(driver, "calls (all)"), 60, "calls counted on the page"))
        moved = wait_for(lambda: int(tile_value(driver, "calls (all)")) > first + 5, 30,
                         "the call count moving")
        assert moved
        wait_for(lambda: float(tile_value(driver, "calls/s (10 s)")) > 0, 30, "a call rate shown")
        rows_js = "return Array.from(document.querySelectorAll('#servers tbody tr')).map(r => r.innerText)"
        wait_for(lambda: (lambda rows: rows and "fixture" in rows[0] and "ready" in rows[0])(
            driver.execute_script(rows_js)), 30, "the fixture server shown ready")

        wait_for(lambda: any(o.get_attribute("value") == TRAJECTORY
                             for o in driver.find_elements(By.CSS_SELECTOR, "#pick option")),
                 30, "the trajectory offered in the picker")
        Select(driver.find_element(By.ID, "pick")).select_by_value(TRAJECTORY)
        # The page redraws the timeline every second: read it in one script call, not element by
        # element (an element found before a redraw is stale after it).
        labels_js = ("return Array.from(document.querySelectorAll('#timeline g.call text'))"
                     ".map(t => t.textContent)")
        labels = wait_for(lambda: (lambda ls: len(ls) >= 8 and ls)(driver.execute_script(labels_js)),
                          60, "the chosen trajectory's calls drawn on the timeline")
        assert {"fixture__sleep", "fixture__echo"} <= set(labels), labels
        # Errors are drawn in the error colour.
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR,
                                              "#timeline rect[fill='var(--bad)']"), 30,
                 "a failed call drawn as an error")
        assert driver.execute_script("return document.getElementById('error').textContent") == ""
        if "TOOLBRIDGE_SCREENSHOT" in os.environ:
            time.sleep(20)  # a picture for the docs: let the charts gather some history
        shot = Path(os.environ.get("TOOLBRIDGE_SCREENSHOT", tmp_path / "dashboard.png"))
        shot.parent.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
    finally:
        driver.quit()
        stop.set()
        load.join()
