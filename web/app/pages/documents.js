// Help documents of the chosen website: list and filter, create, edit, publish or unpublish, delete, and
// "try the search": what a visitor asking that question would be shown.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {errorBox, field, h, replace, time} from "../dom.js";

class ParleyDocuments extends Page {
  show() {
    if (!this.websiteId) return replace(this, h("h1", null, "Help documents"), this.noWebsite());
    const filter = h("input", {id: "doc-filter", type: "search", placeholder: "Words in the title"});
    const question = h("input", {id: "try-search", type: "search", placeholder: "How do I reset my password?"});
    const locale = h("input", {id: "try-locale", value: "en", size: "6"});
    this.results = h("div", {"aria-live": "polite"});
    this.list = h("div");
    this.editor = h("div");
    replace(this, h("h1", null, "Help documents"),
      h("form", {class: "card", onsubmit: (e) => { e.preventDefault(); this.trySearch(question.value, locale.value); }},
        h("h2", null, "Try the search"),
        h("p", null, "What a visitor asking this in the widget would be shown (published documents only)."),
        h("div", {class: "toolbar"}, field("Question", question), field("Locale", locale),
          h("button", {type: "submit"}, "Search")),
        this.results),
      h("div", {class: "toolbar"},
        h("form", {role: "search", onsubmit: (e) => { e.preventDefault(); this.load(filter.value); }},
          field("Filter by title", filter)),
        h("button", {type: "button", id: "new-document", onclick: () => this.edit(null)}, "New document")),
      this.editor, this.list);
    this.load();
  }

  async trySearch(query, locale) {
    if (!query.trim()) return;
    try {
      const found = await get("/api/documents/search", {query, websiteId: this.websiteId, locale: locale || "en"});
      replace(this.results, found.length ? h("ol", {class: "search-results"}, found.map((hit) => h("li", null,
        h("strong", null, hit.title), " ", h("small", null, `score ${hit.score.toFixed(3)}`),
        h("p", {class: "snippet"}, hit.snippet))))
        : h("p", {class: "empty"}, "Nothing found: the visitor would be offered a conversation instead."));
    } catch (error) {
      replace(this.results, errorBox(error));
    }
  }

  async load(search = "") {
    const documents = await get("/api/documents", {websiteId: this.websiteId, search, limit: 200,
                                                   fields: "title,locale,category,published,updatedAt"})
      .catch((error) => error);
    if (documents instanceof Error) return replace(this.list, errorBox(documents));
    replace(this.list, documents.length ? h("table", null,
      h("thead", null, h("tr", null, ["Title", "Locale", "Category", "State"].map((t) => h("th", {scope: "col"}, t)),
        h("th", {scope: "col"}, h("span", {class: "visually-hidden"}, "Actions")))),
      h("tbody", null, documents.map((doc) => h("tr", {"data-id": doc._id},
        h("td", null, doc.title), h("td", null, doc.locale), h("td", null, doc.category ?? "—"),
        h("td", null, doc.published ? "Published" : "Draft"),
        h("td", {class: "row-actions"},
          h("button", {type: "button", class: "secondary", onclick: () => this.edit(doc._id)}, "Edit"),
          h("button", {type: "button", class: "secondary", onclick: () => this.save(doc._id, {published: !doc.published})},
            doc.published ? "Unpublish" : "Publish"),
          h("button", {type: "button", class: "danger", onclick: async () => {
            if (!confirm(`Delete "${doc.title}"?`)) return;
            await api("DELETE", `/api/documents/${doc._id}`);
            this.load();
          }}, "Delete"))))))
      : h("p", {class: "empty"}, "No documents."));
  }

  async save(id, body) {
    await (id ? api("PUT", `/api/documents/${id}`, body) : api("POST", "/api/documents", {websiteId: this.websiteId, ...body}));
    this.load();
  }

  async edit(id) {
    const doc = id ? await get(`/api/documents/${id}`) : {title: "", locale: "en", category: "", published: false, content: ""};
    const title = h("input", {id: "doc-title", required: true, maxlength: "300", value: doc.title});
    const docLocale = h("input", {id: "doc-locale", required: true, value: doc.locale, size: "6"});
    const category = h("input", {id: "doc-category", value: doc.category ?? ""});
    const published = h("input", {id: "doc-published", type: "checkbox", checked: doc.published});
    const content = h("textarea", {id: "doc-content", rows: "12", value: doc.content});
    const status = h("div", {"aria-live": "polite"});
    const form = h("form", {class: "card", onsubmit: async (event) => {
      event.preventDefault();
      try {
        await this.save(id, {title: title.value, locale: docLocale.value, category: category.value || null,
                             published: published.checked, content: content.value});
        replace(this.editor);
      } catch (error) {
        replace(status, errorBox(error));
      }
    }},
      h("h2", null, id ? "Edit document" : "New document"),
      field("Title", title), h("div", {class: "grid2"}, field("Locale", docLocale), field("Category", category)),
      h("label", null, published, " Published (visitors can find it)"),
      field("Content (Markdown)", content), status,
      h("div", {class: "row-actions"}, h("button", {type: "submit"}, "Save"),
        h("button", {type: "button", class: "secondary", onclick: () => replace(this.editor)}, "Cancel")));
    replace(this.editor, form);
    title.focus();
  }
}

customElements.define("parley-documents", ParleyDocuments);
