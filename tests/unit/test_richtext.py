"""The Markdown renderer with the attacker's inputs: whatever the text, the HTML that comes out runs nothing,
loads nothing from outside, and links only to http(s) or mailto in a new tab."""

import random
import uuid
from datetime import datetime, timezone
from html.parser import HTMLParser

import msgspec
import pytest

from events import types as ev
from projections import richtext
from projections.richtext import render_markdown
from projections.views.collections import new_message
from projections.views.documents import Document
from projections.views.visitors import chat_message_of

SUBSET = {"p", "em", "strong", "s", "del", "ul", "ol", "li", "a", "code", "pre", "blockquote", "h1", "h2", "h3", "h4",
          "h5", "h6", "hr", "br", "img"}
ATTACKS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)" onclick="alert(2)">click</a>',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](<javascript:alert(1)>)",
    "[click](java\tscript:alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](vbscript:msgbox(1))",
    "![x](https://evil.example/pixel.png)",
    "![x](data:image/svg+xml,<svg onload=alert(1)>)",
    '![x" onerror="alert(1)](/api/attachments/a)',
    "**bold <script>alert(1)</script>**",
    "> quote <iframe src=https://evil.example></iframe>",
    "- <b onmouseover=alert(1)>item</b>",
    "```\n<script>alert(1)</script>\n```",
    "<style>*{display:none}</style>",
    "[x](https://ok.example \"title\" onclick=alert(1))",
    "<svg><script>alert(1)</script></svg>",
    "<!-- <script>alert(1)</script> -->",
]


class Elements(HTMLParser):
    """The elements a browser would build from the HTML, with their attributes."""

    def __init__(self, html: str):
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


@pytest.mark.parametrize("text", ATTACKS)
def test_an_attack_renders_inert(text):
    html = render_markdown(text)
    for tag, attributes in Elements(html).found:
        assert tag in SUBSET, html
        assert set(attributes) <= {"href", "target", "rel", "src", "alt", "start"}, html
        for url in (attributes.get("href"), attributes.get("src")):
            assert url is None or url.startswith(("https:", "http:", "mailto:", "/api/attachments/")), html
    assert "evil.example/pixel" not in html


def test_the_documented_subset_renders():
    html = render_markdown("# Tracking a parcel\n\nIt takes **2 business days**, *usually*; ~~never~~ more.\n\n"
                           "- one\n- two\n\n1. first\n\n> quoted\n\n`code` and\n\n```\nblock\n```\n\n---")
    assert "<h1>Tracking a parcel</h1>" in html
    assert "<strong>2 business days</strong>" in html and "<em>usually</em>" in html and "<s>never</s>" in html
    assert "<ul>\n<li>one</li>" in html and "<ol>\n<li>first</li>" in html
    assert "<blockquote>\n<p>quoted</p>\n</blockquote>" in html
    assert "<code>code</code>" in html and "<pre><code>block\n</code></pre>" in html and "<hr>" in html


def test_a_link_opens_in_a_new_tab_without_the_opener():
    assert render_markdown("[docs](https://example.com/a?b=1&c=2)") == (
        '<p><a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">docs</a></p>')
    assert 'href="mailto:help@example.com"' in render_markdown("[mail](mailto:help@example.com)")


def test_raw_html_shows_as_its_characters():
    assert render_markdown("<b>hi</b>") == "<p>&lt;b&gt;hi&lt;/b&gt;</p>"


def test_an_image_only_from_an_attachment_and_otherwise_its_alt_text():
    assert render_markdown("![receipt](/api/attachments/abc)") == (
        '<p><img src="/api/attachments/abc" alt="receipt"></p>')
    assert render_markdown("![tracking pixel](https://evil.example/pixel.png)") == "<p>tracking pixel</p>"


def test_empty_text_is_empty_html():
    assert render_markdown("") == ""


def test_every_reader_shape_carries_the_rendering_beside_the_text():
    at = datetime(2026, 11, 26, tzinfo=timezone.utc)
    created = ev.MessageCreated(message_id=uuid.uuid4(), conversation_id=uuid.uuid4(), website_id=uuid.uuid4(),
                                content="**hi** <script>x</script>", sender="operator", at=at,
                                org_id=uuid.uuid4())
    for shown in (new_message(created), chat_message_of(created)):
        body = msgspec.json.decode(msgspec.json.encode(shown))
        assert body["content"] == "**hi** <script>x</script>"
        assert body["contentHtml"] == "<p><strong>hi</strong> &lt;script&gt;x&lt;/script&gt;</p>"
    document = Document(uuid.uuid4(), uuid.uuid4(), "Parcels", "en", None, True, "# Tracking", at, at)
    assert msgspec.json.decode(msgspec.json.encode(document))["contentHtml"] == "<h1>Tracking</h1>"


def full_rendering(text: str) -> str:
    """The parser and the sanitizer, without the plain-line shortcut."""
    return richtext.nh3.clean(
        richtext._parser.render(text), tags=set(richtext.TAGS),
        attributes={k: set(v) for k, v in richtext.ATTRIBUTES.items()}, url_schemes=set(richtext.URL_SCHEMES),
        link_rel="noopener noreferrer", set_tag_attribute_values={"a": {"target": "_blank"}},
        attribute_filter=richtext._only_attachment_images, strip_comments=True).strip()


def test_a_plain_line_skips_the_parser_and_renders_exactly_as_the_parser_would():
    alphabet = list("ab 1.!?#-+=:;'\"()/%@$€é*_~`[]\\|&<>{}^,\t\n") + ["\u00a0", "\u2003", "\x00", "😀", "&amp;"]
    rng = random.Random(7)
    samples = ["How do I export my invoices? It's been 2 days, thanks!", "1. first", "- item", "# title",
               "> quote", "a & b", "&copy;", " lead", "trail ", "4 spaces", "x\ny", "=== ", "+ plus"]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(20000)]
    plain = [text for text in samples if richtext._plain(text)]
    assert len(plain) > 500 and richtext._plain(samples[0])  # the shortcut is taken, and by a usual message
    assert [text for text in plain if full_rendering(text) != f"<p>{text}</p>"] == []
