"""What a browser page of the review app got wrong: console errors, uncaught exceptions, failed requests."""

import re
from dataclasses import dataclass, field

from playwright.sync_api import Page


@dataclass
class PageProblems:
    """Console errors, uncaught exceptions and failed page requests seen by a page."""

    errors: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> Page:
        page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on(
            "response",
            lambda r: self.errors.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None,
        )
        return page


def override_csrf(html: str) -> str:
    """The CSRF token of an episode page's override forms (the trim form above them has its own)."""
    match = re.search(r'class="override"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]+)"', html)
    assert match, "no override form with a CSRF token in the page"
    return match.group(1)
