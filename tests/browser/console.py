"""Drives the operator console in Debian's Chromium (headless), as an
operator would: sign in, find the retained executor with its reason, click
Recover on its page and watch the drain finish there without a reload;
find a sleeping workspace asleep, wake it and watch it become ready.
Screenshots go to the output directory. Exits non-zero on the first check
that fails.

usage: console.py BASE_URL TOKEN_FILE WORKSPACE_ID REASON OUTPUT_DIR ASLEEP_WORKSPACE_ID
"""

import pathlib
import subprocess
import sys

from playwright.sync_api import expect, sync_playwright

WITHIN_MS = 120_000


def replay(base: str, cookie: str, path: str, form: str | None = None, timeout: int = 10) -> tuple[int, str]:
    """The answer to a request made with curl, carrying `cookie` as the
    console's session cookie (and posting `form` when given)."""
    command = ["curl", "-s", "--max-time", str(timeout), "-o", "-", "-w", "\n%{http_code}"]
    if cookie:
        command += ["-H", f"Cookie: sluice_console={cookie}"]
    if form is not None:
        command += ["-H", "content-type: application/x-www-form-urlencoded", "--data", form]
    out = subprocess.run(command + [f"{base}{path}"], capture_output=True, text=True).stdout
    body, _, code = out.rpartition("\n")
    return int(code or 0), body


def main() -> None:
    base, token_file, workspace, reason, output, asleep = sys.argv[1:7]
    token = pathlib.Path(token_file).read_text().strip()
    shots = pathlib.Path(output)
    shots.mkdir(parents=True, exist_ok=True)
    expect.set_options(timeout=WITHIN_MS)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"], headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        # Not signed in: the console sends the browser to its sign-in page.
        page.goto(f"{base}/console")
        assert page.url.endswith("/console/login"), page.url
        page.fill("input[name=token]", "not-the-token")
        page.click("button[type=submit]")
        expect(page.locator("p.error")).to_contain_text("not an API token")
        assert "not-the-token" not in page.content(), "a refused token is not shown back"
        page.screenshot(path=str(shots / "1-sign-in-refused.png"), full_page=True)

        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/console")
        cookie = next(c for c in context.cookies() if c["name"] == "sluice_console")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
        assert token not in cookie["value"], "the session cookie does not hold the token"

        # The overview lists the retained executor, with why.
        row = page.locator(f"#retained tr[data-workspace='{workspace}']")
        expect(row).to_be_visible()
        expect(row.locator("td.reason")).to_have_text(reason)
        expect(row.locator("button", has_text="Recover")).to_be_visible()
        expect(row.locator("a", has_text="Discard")).to_be_visible()
        page.screenshot(path=str(shots / "2-retained.png"), full_page=True)

        # Discard names what is lost before anything happens; keep it.
        row.locator("a", has_text="Discard").click()
        expect(page.locator("p.warning")).to_contain_text("Lost for good")
        expect(page.locator("p.warning")).to_contain_text(workspace)
        page.screenshot(path=str(shots / "3-discard-confirmation.png"), full_page=True)
        page.click("text=Keep it")

        # Its own page: retained, with the reason; Recover.
        page.goto(f"{base}/console/workspaces/{workspace}")
        expect(page.locator("#status")).to_have_text("retained")
        page.locator("button", has_text="Recover").click()
        page.wait_for_url(f"{base}/console/workspaces/{workspace}")
        # From here the page must follow the drain by itself: a reload
        # would lose this mark.
        page.evaluate("window.sluiceMark = 'unchanged'")
        expect(page.locator("#status")).to_have_text("stopped")
        # The drain ended with nothing left to save, and the executor stopped.
        expect(page.locator("#drain")).to_contain_text("stopped · 0 left")
        assert page.evaluate("window.sluiceMark") == "unchanged", "the page was reloaded"
        updates = int(page.evaluate("document.body.dataset.updates || '0'"))
        assert updates >= 1, f"the page changed without a live update: {updates}"
        expect(page.locator("ol.timeline")).to_contain_text("sluice.drain.changed")
        page.screenshot(path=str(shots / "4-recovered.png"), full_page=True)

        # A sleeping workspace says so, and Wake brings it back, live.
        page.goto(f"{base}/console/workspaces?status=stopped")
        expect(page.locator(f"tr[data-workspace='{asleep}'] span.asleep")).to_have_text("asleep")
        page.goto(f"{base}/console/workspaces/{asleep}")
        expect(page.locator("#status")).to_have_text("stopped")
        expect(page.locator("#sleeping")).to_contain_text("requested")
        page.screenshot(path=str(shots / "4a-asleep.png"), full_page=True)
        page.locator("button", has_text="Wake").click()
        page.wait_for_url(f"{base}/console/workspaces/{asleep}")
        expect(page.locator("#status")).to_have_text("ready")
        expect(page.locator("#sleeping")).to_have_count(0)
        expect(page.locator("ol.timeline")).to_contain_text("sluice.workspace.woken")
        page.screenshot(path=str(shots / "4b-woken.png"), full_page=True)

        # The overview no longer lists it.
        page.goto(f"{base}/console")
        expect(page.locator(f"#retained tr[data-workspace='{workspace}']")).to_have_count(0)
        page.screenshot(path=str(shots / "5-overview-after.png"), full_page=True)

        # Signing out ends the session on the server: the cookie a browser
        # (or anyone who copied it) kept opens nothing afterwards.
        kept = next(c for c in context.cookies() if c["name"] == "sluice_console")["value"]
        csrf = page.locator("input[name=csrf]").first.get_attribute("value")
        assert replay(base, kept, "/console")[0] == 200, "the kept cookie works before the sign-out"
        page.click("text=Sign out")
        page.wait_for_url(f"{base}/console/login")
        page.goto(f"{base}/console")
        assert page.url.endswith("/console/login"), page.url
        status, body = replay(base, kept, "/console")
        assert status in (302, 303, 307) and "Retained" not in body, f"a page after the sign-out: {status}"
        status, body = replay(base, kept, "/console/stream", timeout=5)
        assert status != 200 and "data:" not in body, f"the stream after the sign-out: {status}"
        status, body = replay(
            base, kept, f"/console/workspaces/{workspace}/discard", form=f"csrf={csrf}&confirm=yes"
        )
        assert status == 403, f"a discard after the sign-out: {status} {body[:200]}"
        assert replay(base, "", "/console")[0] in (302, 303, 307), "no cookie at all reads the same"
        page.screenshot(path=str(shots / "6-signed-out.png"), full_page=True)
        assert not errors, f"script errors on the pages: {errors}"
        browser.close()
    print("console checks passed")


if __name__ == "__main__":
    main()
