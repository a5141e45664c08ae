"""Attachments in real browsers (Debian's Chromium through Playwright): an image pasted into the dashboard's
composer and a file dropped on it reach the visitor's widget, which shows the image's thumbnail and the file
as a link; a file the visitor attaches in the widget shows in the dashboard. Both states pass axe."""

from __future__ import annotations

import base64

from tests.support.attachments import png_bytes
from tests.support.axe import assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, host_pages, screenshot  # noqa: F401 - fixtures
from tests.support.widget_pages import host_page
from tests.e2e.test_dashboard import Dashboard, context  # noqa: F401 - fixture
from tests.integration.test_attachments import PDF

WIDGET = "[data-parley=widget]"


def paste_image(page, selector: str, png: bytes) -> None:
    """What pasting a screenshot does: a `paste` event whose clipboard holds an image file without a name."""
    page.evaluate("""([selector, data]) => {
        const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
        const clipboard = new DataTransfer();
        clipboard.items.add(new File([bytes], "", {type: "image/png"}));
        document.querySelector(selector).dispatchEvent(
            new ClipboardEvent("paste", {clipboardData: clipboard, bubbles: true, cancelable: true}));
    }""", [selector, base64.b64encode(png).decode()])


def drop_file(page, selector: str, name: str, data: bytes, media_type: str) -> None:
    """What dragging a file from the desktop onto the element does: dragover, then drop."""
    transfer = page.evaluate_handle("""([name, data, type]) => {
        const transfer = new DataTransfer();
        transfer.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], name, {type}));
        return transfer;
    }""", [name, base64.b64encode(data).decode(), media_type])
    page.dispatch_event(selector, "dragover", {"dataTransfer": transfer})
    page.dispatch_event(selector, "drop", {"dataTransfer": transfer})


def thumbnail_loaded(page, selector: str) -> None:
    page.locator(selector).first.wait_for()
    page.wait_for_function("(selector) => { const img = document.querySelector('[data-parley=widget]')"
                           "?.shadowRoot?.querySelector(selector) ?? document.querySelector(selector);"
                           " return img && img.complete && img.naturalWidth > 0; }", arg=selector)


def test_pasted_and_dropped_files_reach_the_visitor_and_the_visitors_file_reaches_the_team(
        browser, context, host_pages, server, http, tenant, tmp_path, axe_script):
    dashboard = Dashboard(context, server, tenant)
    page = dashboard.sign_in().page
    visitor_context = browser.new_context()
    try:
        widget = visitor_context.new_page()
        widget.goto(host_page(host_pages, f"files-{tenant.website_name}", server.base_url, tenant.website_id,
                              queued=[["sendMessage", "My screen shows an error"], ["openChat"]]))
        row = page.locator(".conversations li[data-id]").first
        row.wait_for()
        row.locator("a").click()
        page.locator(".message.customer .content", has_text="My screen shows an error").wait_for()

        paste_image(page, "#composer-text", png_bytes((400, 300), "crimson"))
        drop_file(page, "form.composer", "invoice.pdf", PDF, "application/pdf")
        pending = page.locator(".pending-attachments .pending-attachment")
        pending.nth(1).wait_for()
        names = sorted(text.split(" (")[0] for text in pending.all_inner_texts())
        assert names == ["invoice.pdf", "pasted image.png"]  # a pasted screenshot has no name: it is given one
        assert_accessible(page, axe_script, "the composer with files to send")
        page.fill("#composer-text", "Here is the fix and your invoice")
        page.click("#send")
        page.locator(".message.operator .attachments img").wait_for()
        assert pending.count() == 0

        thumbnail_loaded(widget, ".files img")
        link = widget.locator(f"{WIDGET} .files a.file")
        assert "invoice.pdf" in link.inner_text()
        assert link.get_attribute("href").startswith(server.base_url + "/api/attachments/")
        assert_accessible(widget, axe_script, "the widget showing attachments")
        screenshot(widget, "widget-attachments")

        upload = tmp_path / "photo.png"
        upload.write_bytes(png_bytes((320, 240), "navy"))
        widget.locator(f"{WIDGET} .chat .composer input[type=file]").set_input_files(str(upload))
        widget.locator(f"{WIDGET} .pending li", has_text="photo.png").wait_for()
        box = widget.locator(f"{WIDGET} .chat .composer textarea")
        box.fill("and my photo")
        box.press("Enter")
        page.locator(".message.customer .attachments img[alt='photo.png']").wait_for()
        page.wait_for_function("() => { const img = document.querySelector(\".message.customer .attachments "
                               "img[alt='photo.png']\"); return img.complete && img.naturalWidth > 0; }")
        screenshot(page, "dashboard-attachments")
        dashboard.assert_clean()
    finally:
        visitor_context.close()
