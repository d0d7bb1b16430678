#!/usr/bin/env python3
"""Browser tests of the `lunette dev` page (issue 15), in a real browser:
the system's chromium, headless, driven by Playwright.

1. The page shows each widget's timeline; a script edited on disk shows its
   new entry on the page without a refresh (and the update latency the
   browser sees, over several saves, is printed).
2. A save with a syntax error shows the error with its line while the old
   entries stay; fixing it clears the error.
3. The page's buttons step the clock and tap a control.

Usage: dev_page_test.py --lunette PATH [--examples DIR] [--chromium PATH] [--saves N] [--screenshot OUT.png]
Exit status 0 when every check held; 1 with the failed check otherwise.
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from playwright.sync_api import sync_playwright


def start_dev(lunette, bundle, store):
    """Starts `lunette dev` on a free port; returns (process, url, output lines)."""
    process = subprocess.Popen([lunette, "dev", bundle, "--port", "0", "--store-dir", store],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines = []
    found = threading.Event()
    url = {}

    def read():
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            match = re.search(r"page: (http://127\.0\.0\.1:\d+/)", line)
            if match:
                url["page"] = match.group(1)
                found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(30):
        process.kill()
        raise AssertionError("lunette dev printed no page address in 30 s:\n" + "\n".join(lines))
    return process, url["page"], lines


def shown_text(page):
    return page.locator('[data-test="shown-entry"]').first.inner_text()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lunette", required=True)
    parser.add_argument("--examples", default="examples")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--saves", type=int, default=20, help="saves timed for the latency figure")
    parser.add_argument("--screenshot", help="save a PNG of the page (after the tests) here")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="lunette-browser-")
    bundle = os.path.join(work, "tasks")
    shutil.copytree(os.path.join(args.examples, "tasks"), bundle)
    main_lua = os.path.join(bundle, "main.lua")
    original = open(main_lua, encoding="utf-8").read()
    anchor = 'remaining = n, title = fmt.title(config.filter)'
    assert original.count(anchor) >= 1, "examples/tasks/main.lua changed: the test edits " + anchor

    def save(text):
        # As many editors do: write a temporary file, then rename it over the old one.
        temporary = main_lua + ".tmp~"
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, main_lua)

    def edited(label):
        return original.replace(anchor, f'remaining = n, title = "{label}"', 1)

    process, url, output = start_dev(args.lunette, bundle, os.path.join(work, "store"))
    failures = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(url)
            page.wait_for_selector('[data-test="status"].live', timeout=10_000)
            page.wait_for_selector('[data-test="shown-entry"]', timeout=10_000)
            version = page.locator('[data-test="version"]').inner_text()
            assert "Today" in shown_text(page), shown_text(page)
            print(f"page up at {url}, version {version}")

            # 1. A save shows its new entry without a refresh; the latency, as the browser sees it.
            latencies = []
            for n in range(args.saves):
                label = f"Edited {n}"
                started = time.monotonic()
                save(edited(label))
                page.wait_for_function(
                    "label => { const e = document.querySelector('[data-test=\"shown-entry\"]'); return e && e.innerText.includes(label); }",
                    arg=label, timeout=5_000)
                latencies.append((time.monotonic() - started) * 1000)
            assert page.locator('[data-test="version"]').inner_text() != version
            latencies.sort()
            p50 = statistics.median(latencies)
            p95 = latencies[min(len(latencies) - 1, int(round(0.95 * (len(latencies) - 1))))]
            print(f"save → new entry on the page, as the browser sees it, over {len(latencies)} saves: "
                  f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {latencies[-1]:.1f} ms")

            # 2. A syntax error: shown with its line; the old entries stay; fixing it clears it.
            broken = edited("Last good") + "\nlocal broken = = 1\n"
            line = broken.split("\n").index("local broken = = 1") + 1
            save(edited("Last good"))
            page.wait_for_function("() => document.querySelector('[data-test=\"shown-entry\"]').innerText.includes('Last good')",
                                   timeout=5_000)
            save(broken)
            page.wait_for_selector('[data-test="error"]:not([hidden])', timeout=5_000)
            problem = page.locator('[data-test="problem"]').first
            assert problem.get_attribute("data-line") == str(line), (problem.get_attribute("data-line"), line)
            assert f"main.lua:{line}:" in problem.inner_text(), problem.inner_text()
            assert "Last good" in shown_text(page), "the old entries did not stay: " + shown_text(page)
            print(f"a syntax error shows with its line ({line}) while the last good version's entries stay")
            save(edited("Fixed"))
            page.wait_for_selector('[data-test="error"][hidden]', state="attached", timeout=5_000)
            page.wait_for_function("() => document.querySelector('[data-test=\"shown-entry\"]').innerText.includes('Fixed')",
                                   timeout=5_000)

            # 3. The clock steps ahead; a control's button taps it.
            page.click('[data-test="step-1h"]')
            page.wait_for_function("() => document.querySelector('[data-test=\"ahead\"]').innerText.includes('3600')", timeout=5_000)
            before = page.locator('[data-test="control"][data-kind="FocusMode"] [data-test="control-value"]').inner_text()
            page.click('[data-test="control"][data-kind="FocusMode"] button')
            page.wait_for_function(
                "before => document.querySelector('[data-test=\"control\"][data-kind=\"FocusMode\"] [data-test=\"control-value\"]').innerText !== before",
                arg=before, timeout=5_000)
            print("the clock steps ahead and a control's button taps it")
            # Another site may not post to the dev page's server.
            import urllib.error
            import urllib.request
            forged = urllib.request.Request(url + "clock?by=60", method="POST", headers={"Origin": "http://evil.example"})
            try:
                urllib.request.urlopen(forged)
                raise AssertionError("a POST from another origin was accepted")
            except urllib.error.HTTPError as refused:
                assert refused.code == 403, refused.code
            print("a POST from another site is refused (403)")
            if args.screenshot:
                page.set_viewport_size({"width": 1200, "height": 900})
                page.screenshot(path=args.screenshot, full_page=True)
                print(f"wrote {args.screenshot}")
            browser.close()
    except Exception as error:  # a failed check or a timeout: say which, with lunette dev's output
        failures.append(f"{type(error).__name__}: {error}")
    finally:
        process.send_signal(signal.SIGINT)
        try:
            status = process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            status = "killed (did not stop on Ctrl-C in 10 s)"
        if status != 0:
            failures.append(f"lunette dev ended with {status} after Ctrl-C")
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        print("lunette dev printed:\n" + "\n".join(output[-60:]), file=sys.stderr)
        return 1
    print("browser tests: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
