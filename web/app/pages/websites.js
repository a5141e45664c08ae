// Websites: create one, its brand color and allowed origins, its identity secret (shown once, rotated on
// demand), and the snippets that install the widget and the mascot with the website id filled in.

import {Page, api} from "../main.js";
import {copyButton, errorBox, field, h, replace, secretOnce, time} from "../dom.js";

function snippets(website) {
  const base = location.origin;
  const config = `<script>window.$parley = []; window.PARLEY_WEBSITE_ID = "${website._id}";</script>`;
  // without a `pet`, the mascot shows the service's default pet; docs/widget.md says how to bring your own
  const mascot = `<script>window.$parley = []; window.PARLEY_WEBSITE_ID = "${website._id}";\n` +
    `window.PARLEY_MASCOT = {websiteId: "${website._id}", brandColor: "${website.brandColor ?? "#3056d3"}"};</script>\n` +
    `<script async src="${base}/mascot.js"></script>`;
  return {widget: `${config}\n<script async src="${base}/widget.js"></script>`, mascot};
}

class ParleyWebsites extends Page {
  show() {
    const name = h("input", {id: "website-name", required: true, pattern: "[a-z0-9][a-z0-9\\-]{1,62}",
                             placeholder: "acme-help"});
    const color = h("input", {id: "website-color", type: "color", value: "#3056d3"});
    this.notice = h("div", {"aria-live": "polite"});
    const form = h("form", {class: "card", onsubmit: async (event) => {
      event.preventDefault();
      try {
        const website = await api("POST", "/api/websites", {websiteName: name.value.trim(), brandColor: color.value});
        form.reset();
        await this.app.reloadWebsites();
        this.render(secretOnce(`The identity secret of ${website.websiteName}:`, website.identitySecret));
      } catch (error) {
        replace(this.notice, errorBox(error));
      }
    }},
      h("h2", null, "Create a website"),
      h("div", {class: "grid2"}, field("Name (its vanity id)", name, "2-63 characters: a-z, 0-9 and -"),
        field("Brand color", color)),
      h("button", {type: "submit"}, "Create website"));
    this.list = h("div", {class: "stack"});
    replace(this, h("h1", null, "Websites"), form, this.notice, this.list);
    this.render();
  }

  render(notice) {
    replace(this.notice, notice);
    replace(this.list, this.app.websites.map((website) => this.card(website)));
  }

  card(website) {
    const status = h("div", {"aria-live": "polite"});
    const color = h("input", {type: "color", value: website.brandColor ?? "#3056d3", id: `color-${website._id}`});
    const origins = h("textarea", {rows: "3", id: `origins-${website._id}`, placeholder: "https://www.example.com"});
    origins.value = website.allowedOrigins.join("\n");
    const save = async (body) => {
      try {
        const saved = await api("PUT", `/api/websites/${website.websiteName}`, body);
        Object.assign(website, saved);
        replace(status, h("p", {class: "status-ok"}, "Saved."));
        origins.value = saved.allowedOrigins.join("\n");
      } catch (error) {
        replace(status, errorBox(error));
      }
    };
    const {widget, mascot} = snippets(website);
    const swatch = h("span", {class: "swatch"});
    swatch.style.background = website.brandColor ?? "transparent"; // CSSOM, which the CSP allows
    return h("section", {class: "card", "data-website": website.websiteName},
      h("h2", null, swatch, " ", website.websiteName),
      h("p", null, "Website id ", h("code", null, website._id), " ", copyButton(website._id, "Copy id")),
      h("div", {class: "grid2"},
        h("form", {onsubmit: (e) => { e.preventDefault(); save({brandColor: color.value}); }},
          field("Brand color", color), h("button", {type: "submit", class: "secondary"}, "Save color")),
        h("form", {onsubmit: (e) => {
          e.preventDefault();
          save({allowedOrigins: origins.value.split(/\s+/).filter(Boolean)});
        }}, field("Allowed origins", origins, "One per line. Empty: the widget works on any site."),
          h("button", {type: "submit", class: "secondary"}, "Save origins"))),
      status,
      h("h3", null, "Install the chat widget"), h("pre", null, h("code", null, widget)), copyButton(widget, "Copy snippet"),
      h("h3", null, "Or the mascot"), h("pre", null, h("code", null, mascot)), copyButton(mascot, "Copy snippet"),
      h("h3", null, "Identity secret"),
      h("p", null, "Your server signs a signed-in visitor's user id with it (HMAC-SHA256), so their conversations follow them. " +
        "It is shown once; rotating it stops the former one at once."),
      h("button", {type: "button", class: "danger", onclick: async () => {
        if (!confirm(`Rotate the identity secret of ${website.websiteName}? Signatures made with the current one stop working.`)) return;
        try {
          const rotated = await api("POST", `/api/websites/${website.websiteName}/identity-secret`);
          replace(status, secretOnce("The new identity secret:", rotated.identitySecret));
        } catch (error) {
          replace(status, errorBox(error));
        }
      }}, "Rotate identity secret"),
      this.agentSection(website));
  }

  /** The website's AI agent (AG-UI): its endpoint, greeting and fallback, its status, its secret. */
  agentSection(website) {
    const path = `/api/websites/${website.websiteName}/agent`;
    const section = h("div", {class: "agent"}, h("h3", null, "AI agent"));
    const status = h("div", {"aria-live": "polite"});
    const render = (agent) => {
      const url = h("input", {type: "url", required: true, value: agent?.url ?? "", id: `agent-url-${website._id}`,
                              placeholder: "https://agent.example.com/ag-ui"});
      const greeting = h("input", {value: agent?.greeting ?? "", id: `agent-greeting-${website._id}`});
      const fallback = h("input", {value: agent?.fallbackMessage ?? "", id: `agent-fallback-${website._id}`});
      const enabled = h("input", {type: "checkbox", checked: agent ? agent.enabled : true});
      const state = agent?.status;
      replace(section, h("h3", null, "AI agent"),
        state && h("p", {class: "notice"}, state.lastRunAt ? ["Last run ", time(state.lastRunAt), `: ${state.lastOutcome}`] : "No run yet",
          state.lastError && [" · last failure: ", state.lastErrorClass, " — ", state.lastError]),
        h("form", {onsubmit: async (e) => {
          e.preventDefault();
          try {
            const saved = await api("PUT", path, {url: url.value, enabled: enabled.checked,
              greeting: greeting.value || null, fallbackMessage: fallback.value || null});
            render(saved);
            replace(status, saved.secret ? secretOnce("The bearer secret the agent receives:", saved.secret)
              : h("p", {class: "status-ok"}, "Saved."));
          } catch (error) {
            replace(status, errorBox(error));
          }
        }}, field("Agent URL (AG-UI)", url), h("div", {class: "grid2"}, field("Greeting", greeting),
          field("Fallback message when it fails", fallback)),
          h("label", null, enabled, " Answer visitors"), " ",
          h("button", {type: "submit", class: "secondary"}, agent ? "Save agent" : "Add agent"),
          agent && h("button", {type: "button", class: "secondary", onclick: async () => {
            const rotated = await api("POST", `${path}/secret`);
            replace(status, secretOnce("The new bearer secret:", rotated.secret));
          }}, "Rotate its secret"),
          agent && h("button", {type: "button", class: "danger", onclick: async () => {
            if (!confirm("Remove the AI agent of this website?")) return;
            await api("DELETE", path);
            render(null);
          }}, "Remove agent")),
        status);
    };
    api("GET", path).then(render, (error) => (error.status === 404 ? render(null) : replace(section, errorBox(error))));
    return section;
  }
}

customElements.define("parley-websites", ParleyWebsites);
