"""A small DOM for the HTML report specs: every element with its tag, attributes and text (its own and its
children's), in document order, and the tables by id as rows of cells. Shared by the unit specs of the reports and
the browser spec (which parses Chromium's --dump-dom)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict
    text: str = ""
    children: list = field(default_factory=list)

    def all(self, tag=None, **attrs):
        """Descendants with ``tag`` (any when None) whose attributes have the given values (``class_`` for class)."""
        found = []
        for child in self.children:
            if matches(child, tag, attrs):
                found.append(child)
            found += child.all(tag, **attrs)
        return found

    def one(self, tag=None, **attrs):
        (found,) = self.all(tag, **attrs)
        return found


def matches(element, tag, attrs):
    if tag is not None and element.tag != tag:
        return False
    for key, value in attrs.items():
        if key == "class_":
            if value not in (element.attrs.get("class") or "").split():
                return False
        elif element.attrs.get(key.replace("_", "-")) != value:
            return False
    return True


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]
        self.scripts, self.styles = [], []

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: (v if v is not None else "") for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        for element in self.stack[1:]:
            element.text += data
        if self.stack[-1].tag == "script":
            self.scripts.append(data)
        elif self.stack[-1].tag == "style":
            self.styles.append(data)


def parse(html):
    """The document: its root element, plus ``scripts`` and ``styles`` (their texts)."""
    builder = _Builder()
    builder.feed(html)
    builder.close()
    root = builder.root
    root.scripts, root.styles = builder.scripts, builder.styles
    return root


def table(root, table_id):
    """The table ``table_id`` as ``(headers, rows)``: header texts, and per body row its ``<tr>`` and
    ``{data-key or position: cell element}``."""
    t = root.one("table", id=table_id)
    headers = [th.text.strip() for th in t.all("th")]
    rows = []
    for tr in t.one("tbody").all("tr"):
        cells = tr.all("td")
        rows.append((tr, {c.attrs.get("data-key", i): c for i, c in enumerate(cells)}))
    return headers, rows


def references(root):
    """Every src/href and <link> of the document that is not a fragment of the page itself (#...)."""
    out = []
    for element in root.all():
        for key in ("src", "href"):
            value = element.attrs.get(key)
            if value is not None and not value.startswith("#"):
                out.append(value)
    return out


def definitions(root, dl_id):
    """The definition list ``dl_id`` as ``{term: definition}`` (texts)."""
    dl = root.one("dl", id=dl_id)
    return {dt.text: dd.text for dt, dd in zip(dl.all("dt"), dl.all("dd"))}
