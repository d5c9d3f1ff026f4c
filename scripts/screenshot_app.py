"""Take docs/app.png: the browser chat (app.py) answering a real question, in headless chromium.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/screenshot_app.py [--question TEXT] [--out docs/app.png]

Starts `python app.py` on a free 127.0.0.1 port with the default model, asks the question, opens the tool
call and its result, saves the screenshot and stops the app. Needs Debian's chromium and chromium-driver
(`make setup` installs them) and selenium (the test extra).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--question", default="Parol ne işe yarar?")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "app.png")
    args = parser.parse_args(argv)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    app = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port)], env=env)
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(arg)
    browser = None
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(300):
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                time.sleep(1)
        browser = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        browser.get(url)
        box = WebDriverWait(browser, 60).until(lambda b: b.find_element(By.CSS_SELECTOR, "#question textarea"))
        box.send_keys(args.question, Keys.ENTER)
        WebDriverWait(browser, 300).until(lambda b: "Tool call" in b.find_element(By.ID, "chat").text)
        WebDriverWait(browser, 300).until(lambda b: b.find_element(By.ID, "download").is_enabled())
        time.sleep(3)
        for title in ("Tool call:",):  # the call open, its result folded inside, the answer below
            browser.find_element(By.XPATH, f"//*[@id='chat']//*[contains(text(), '{title}')]").click()
            time.sleep(1)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(args.out))
        print(f"wrote {args.out}")
    finally:
        if browser is not None:
            browser.quit()
        app.terminate()
        app.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
