"""The one rendering of user text as HTML: a documented Markdown subset, sanitized.

Messages, help documents and campaign contents are stored as the text their author typed (`content`);
every reader that shows them as HTML inserts `render_markdown(content)` (`contentHtml`), never `content`.
The subset: paragraphs and line breaks, emphasis (`*em*`, `**strong**`, `~~strike~~`), lists, links, inline
code and code blocks, quotes, headings and rules. Raw HTML in the text is shown as text (markdown-it's `html`
option is off) and the result still goes through nh3, so an allow-list, not the parser, decides what
reaches a browser. Links open in a new tab with `rel="noopener noreferrer"`; only http, https and mailto
URLs survive (`javascript:`, `data:` and anything else are dropped). Images are only our own attachments
(a path under ATTACHMENT_PATH): any other image becomes its alt text, so a message cannot make the
reader's browser fetch an outside URL.

A pure function of the text, cached: the read side renders at read time (docs/decisions.md says why)."""

from __future__ import annotations

import re
from functools import lru_cache
from html import escape

import nh3
from markdown_it import MarkdownIt

ATTACHMENT_PATH = "/api/attachments/"

TAGS = frozenset({"p", "br", "em", "strong", "s", "del", "ul", "ol", "li", "a", "code", "pre", "blockquote",
                  "h1", "h2", "h3", "h4", "h5", "h6", "hr", "img"})
ATTRIBUTES = {"a": {"href"}, "img": {"src", "alt"}, "ol": {"start"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})

_parser = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("strikethrough")


def _image(renderer, tokens, idx, options, env) -> str:  # noqa: ANN001 (markdown-it's render rule signature)
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = "".join(child.content for child in token.children or [])
    if not src.startswith(ATTACHMENT_PATH):
        return escape(alt)
    return f'<img src="{escape(src)}" alt="{escape(alt)}">'


_parser.add_render_rule("image", _image)


def _only_attachment_images(tag: str, attribute: str, value: str) -> str | None:
    if tag == "img" and attribute == "src" and not value.startswith(ATTACHMENT_PATH):
        return None
    return value


# One line with nothing Markdown or HTML would read (no syntax character, no entity, nothing that could open a
# block): its rendering is the text as one paragraph, as is. Most chat messages are such lines, and every
# message shape renders its text, POST /api/messages' answer included, so they skip the parser
# (tests/unit/test_richtext.py checks the two agree).
_PLAIN_LINE = re.compile(r"[^\s*_~`\[\]#\\|&<>=+\-0-9][^*_~`\[\]\\|&<>]*")


def _plain(text: str) -> bool:
    return text.isprintable() and text == text.strip() and _PLAIN_LINE.fullmatch(text) is not None


@lru_cache(maxsize=4096)
def render_markdown(text: str) -> str:
    """`text` as sanitized HTML ("" for empty text)."""
    if not text:
        return ""
    if _plain(text):
        return f"<p>{text}</p>"
    return nh3.clean(_parser.render(text), tags=set(TAGS), attributes={k: set(v) for k, v in ATTRIBUTES.items()},
                     url_schemes=set(URL_SCHEMES), link_rel="noopener noreferrer",
                     set_tag_attribute_values={"a": {"target": "_blank"}},
                     attribute_filter=_only_attachment_images, strip_comments=True).strip()
