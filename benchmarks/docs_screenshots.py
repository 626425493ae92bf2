"""Re-take the dashboard screenshots in docs/img from a store, in headless Chromium:

    python -m benchmarks.real_corpus --output-dir /tmp/results     # the real-PR replay, AI off
    taskeval load /tmp/results --store sqlite:////tmp/corpus.db
    taskeval outcomes --store sqlite:////tmp/corpus.db --corpus ../shared/data/aidev-pop-v1 \
        --write-store sqlite:////tmp/corpus.db                      # the outcomes the data records
    python -m benchmarks.docs_screenshots --store sqlite:////tmp/corpus.db [--agent devin --other copilot]

All of it runs offline (the replay serves the corpus on loopback). Serves ``taskeval dashboard``
over the store on loopback and saves ``overview.png`` (the overview in the 1,400 px window the
docs promise it fits), ``agent-costs.png`` (the agent page from its merge rate down: cycle time,
costs to people) and ``compare.png`` (the comparison of two agents, the task-mix-adjusted row
under the raw one) into ``--out`` (default ``docs/img``).
Needs Debian's ``chromium`` and ``chromium-driver`` and the selenium package (the test extra).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHROMIUM = os.environ.get("TASKEVAL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TASKEVAL_CHROMEDRIVER", "/usr/bin/chromedriver")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, metavar="URL")
    parser.add_argument("--agent", default="devin", help="the agent page to show (default devin)")
    parser.add_argument("--other", default="copilot", help="compared with (default copilot)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "img")
    args = parser.parse_args(argv)
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        print(f"docs_screenshots: {', '.join(missing)} missing (apt-get install chromium chromium-driver)",
              file=sys.stderr)
        return 2
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from werkzeug.serving import make_server

    from dashboard.cli import create_local_app

    server = make_server("127.0.0.1", 0, create_local_app(args.store, bind_host="127.0.0.1", env={}), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_port}/dashboard"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1440,1000", "--hide-scrollbars"):
        options.add_argument(arg)
    browser = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        browser.set_window_size(1400, 1000)
        browser.get(f"{site}/")
        browser.save_screenshot(str(args.out / "overview.png"))
        browser.set_window_size(1440, 1000)
        browser.get(f"{site}/agent/{args.agent}")
        browser.execute_script("document.getElementById('merge-rate').scrollIntoView()")
        browser.save_screenshot(str(args.out / "agent-costs.png"))
        browser.get(f"{site}/compare?a={args.agent}&b={args.other}")
        browser.execute_script("document.getElementById('table-compare').scrollIntoView()")
        browser.save_screenshot(str(args.out / "compare.png"))
        title = browser.find_element(By.ID, "compare-title").text
    finally:
        browser.quit()
        server.shutdown()
    print(f"saved {args.out / 'overview.png'}, {args.out / 'agent-costs.png'} and {args.out / 'compare.png'} "
          f"({title})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
