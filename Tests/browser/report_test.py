#!/usr/bin/env python3
"""Browser test of the `lunette simulate --html` report (issue 16, point 5),
in a real browser: the system's chromium, headless, driven by Playwright.

It simulates Tests/Fixtures/report (a ticker whose entry changes every 5
minutes, with store writes, requests, foreground, a tap, a widget added and
removed, a failing stretch with a traceback, and logs), loads the page and
checks that the scenario's events are labelled marks on the time axis, the
zone is on the axis, every entry is whole in a table (with and without
JavaScript), failures show their traceback without the host's frames, the
logs are there, the budget line of a widget added later runs only while it
exists, the zoom works, and the page logs no console error. It saves a
screenshot (docs/report.png by default).

Usage: report_test.py --lunette PATH [--chromium PATH] [--fixture DIR] [--report-screenshot OUT.png]
Exit status 0 when every check held; 1 with the failed check otherwise.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from playwright.sync_api import sync_playwright


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lunette", required=True)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--fixture", default="Tests/Fixtures/report")
    parser.add_argument("--report-screenshot", default="docs/report.png")
    args, _ = parser.parse_known_args()

    work = tempfile.mkdtemp(prefix="lunette-report-test-")
    page_path = os.path.join(work, "report.html")
    run = subprocess.run([args.lunette, "simulate", args.fixture, "--scenario", os.path.join(args.fixture, "scenario.json"),
                          "--html", page_path, "--allow-failures"], capture_output=True, text=True,
                         env=dict(os.environ, TZ="UTC"))
    check(run.returncode == 0, f"simulate failed ({run.returncode}):\n{run.stderr}")
    html = open(page_path, encoding="utf-8").read()
    check(not re.search(r"""(src|href)=["']?(https?:)?//""", html), "the page refers to the network")

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
            errors = []
            page = browser.new_page(viewport={"width": 1160, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: errors.append("network request: " + r.url) if not r.url.startswith(("file:", "data:", "about:")) else None)
            page.goto("file://" + page_path)

            w1, w2 = page.locator("#widget-1"), page.locator("#widget-2")
            check(w1.locator("svg.chart").is_visible() and w2.locator("svg.chart").is_visible(), "a chart per widget")

            # The scenario's events: labelled marks on the axis, the cause of each reload visible.
            labels = w1.locator("svg text.ev")
            texts = [labels.nth(i).text_content() for i in range(labels.count())]
            for wanted in ["app in foreground", "tap Ticker: Refresh", "app asks reload of Ticker", "added Ticker · systemMedium",
                           "removed Ticker · systemMedium", "significant time change"]:
                check(any(wanted in t for t in texts), f"no event label {wanted!r} on widget 1's axis: {texts}")
            check(labels.first.is_visible(), "event labels are visible")
            check(w1.locator("svg path.evmark").count() == 11, f"11 event marks, got {w1.locator('svg path.evmark').count()}")
            causes = w1.locator("details.reloads td:nth-child(3)").all_text_contents()
            check("tap Ticker: Refresh" in causes and "app in foreground" in causes, f"reload causes: {causes}")
            check("(tap Ticker: Refresh)" in w1.locator("svg rect.reload title").all_text_contents()[5], "a reload mark's hover names its cause")

            # The zone on the axis.
            zone = w1.locator("svg text.zone")
            check(zone.is_visible() and "Europe/Paris, UTC+01:00" in zone.text_content(), f"zone on the axis: {zone.text_content()}")
            check(w1.locator("g.tick:not([display]) text").first.text_content() == "09:00", "the axis starts at 09:00 local")

            # Each entry whole, on hover and in the table under the strip.
            whole = '{"note":"quote 3 of 12 for ACME, one every five minutes from the app\'s feed","price":105.4,"symbol":"ACME"}'
            shown = w2.locator("details.shown")
            check(whole in shown.text_content(), "the whole entry is in the table")
            hovers = w2.locator("svg rect.seg title").all_text_contents()
            check(any(whole in h for h in hovers), "the whole entry is the strip's hover")
            shown.locator("summary").click()
            check(shown.locator("td code", has_text="quote 3 of 12 for ACME").first.is_visible(), "the entries' table opens and shows")

            # Failures grouped, with the traceback of the script only; warnings and logs.
            failure = w1.locator(".failure").first
            check(failure.is_visible() and "×9, first at 13:00+01:00, last at 13:55+01:00" in failure.text_content(), failure.text_content())
            traceback = failure.locator("pre.traceback")
            check(traceback.is_visible(), "the traceback is shown")
            tb = traceback.text_content()
            check("util/quote.lua:6: in field 'read'" in tb and "main.lua:11:" in tb and "[host" not in tb and "[C]: in ?" not in tb, tb)
            warnings = w1.locator("table.warnings")
            check(warnings.is_visible() and "entries were not in date order; the host sorted them (rule T5)" in warnings.text_content()
                  and "11:30+01:00" in warnings.text_content(), "the warnings are there, from the tap on")
            logs = w1.locator("details.logs")
            logs.evaluate("d => d.open = true")
            check(logs.locator("td code", has_text="read ACME, 12 entries").first.is_visible(), "the logs are there")

            # The budget line of widget 2 runs from its adding to its removal, with both marked.
            life = [t.strip() for t in w2.locator("svg text.life").all_text_contents()]
            check(life == ["added 12:00+01:00", "removed 15:30+01:00"], f"added/removed marks: {life}")
            xs = [float(pt.split(",")[0]) for pt in w2.locator("svg polyline.budget").get_attribute("points").split()]
            added_x = float(w2.locator("svg line.life").first.get_attribute("x1"))
            removed_x = float(w2.locator("svg line.life").nth(1).get_attribute("x1"))
            check(abs(xs[0] - added_x) < 0.2 and abs(xs[-1] - removed_x) < 0.2, f"budget line {xs[0]}–{xs[-1]}, widget {added_x}–{removed_x}")

            # Zoom: 8× widens the chart and shows the 5-minute entries' labels.
            svg = w1.locator("svg.chart")
            width1 = float(svg.get_attribute("width"))
            w1.locator('.zoom button[data-zoom="8"]').click()
            check(float(svg.get_attribute("width")) > 7 * width1 - 400, "8× widens the chart")
            seg_labels = [t for t in w1.locator("svg text.seglabel:not([display])").all_text_contents() if t.startswith("price=")]
            check(len(seg_labels) > 50, f"at 8× the 5-minute entries are labelled ({len(seg_labels)})")
            ticks = w1.locator("g.tick:not([display]) text").all_text_contents()
            check("09:15" in ticks or "09:05" in ticks, f"finer ticks when zoomed: {ticks[:6]}")
            w1.locator('.zoom button[data-zoom="1"]').click()
            check(float(svg.get_attribute("width")) == width1, "1× restores the chart")

            check(not errors, f"console errors: {errors}")

            # The picture for the docs: both widgets, their tables folded to their titles.
            page.set_viewport_size({"width": 1160, "height": 1280})
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = false); window.scrollTo(0, 0)")
            if args.report_screenshot:
                os.makedirs(os.path.dirname(os.path.abspath(args.report_screenshot)), exist_ok=True)
                page.screenshot(path=args.report_screenshot, full_page=False)
                print(f"wrote {args.report_screenshot}")

            # Without JavaScript the tables read the same.
            context = browser.new_context(java_script_enabled=False)
            plain = context.new_page()
            plain.goto("file://" + page_path)
            check(plain.locator(".zoom").count() == 0, "no zoom buttons without JavaScript")
            check(plain.locator("#widget-1 details.reloads table").is_visible(), "the reloads table without JavaScript")
            plain.locator("#widget-2 details.shown summary").click()
            check(plain.locator("#widget-2 details.shown td code", has_text="quote 3 of 12 for ACME").first.is_visible(),
                  "the entries' table without JavaScript")
            check(plain.locator("#widget-1 pre.traceback").first.is_visible(), "the traceback without JavaScript")
            check(plain.locator("#widget-1 svg text.ev").first.is_visible(), "the event labels without JavaScript")
            context.close()
            browser.close()
    except AssertionError as failure:
        print(f"report page: FAIL: {failure}\n(page kept at {page_path})", file=sys.stderr)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("report page: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
