// Websites: create one, its widget's settings with a live preview (website-widget.js), its allowed origins,
// its identity secret (shown once, rotated on demand), its business hours (website-hours.js) and automatic
// assignment (website-assignment.js), the snippets that install the widget and the mascot with the website
// id filled in, and the mascot's own pet: an atlas previewed as the mascot plays it and judged by
// POST /api/pets/validate.

import {api} from "../api.js";
import {Page} from "../page.js";
import {copyButton, errorBox, field, h, replace, secretOnce, time} from "../dom.js";
import {assignmentSection} from "./website-assignment.js";
import {hoursSection} from "./website-hours.js";
import {DEFAULT_BRAND_COLOR} from "/core/session.js";
import {widgetSection} from "./website-widget.js";

// the pet atlas format (web/pets/atlas.json), which commands/pets.py validates and mascot.js plays
const PET = await (await fetch("/pets/atlas.json")).json();

/** `value` as JavaScript string data that is safe inside an HTML script element too (no `</script>`). */
const jsString = (value) => JSON.stringify(String(value)).replace(/</g, "\\u003c");

/** The install snippets; `pet` ({id, name, spritesheet}) goes in the mascot's only when there is one. Neither
 * carries the colours or texts: the widget reads the website's settings when it starts. */
function snippets(website, pet) {
  const base = location.origin;
  const id = jsString(website._id);
  const config = `<script>window.$parley = []; window.PARLEY_WEBSITE_ID = ${id};</script>`;
  const mascot = [`websiteId: ${id}`];
  // without a `pet`, the mascot shows the service's default pet
  if (pet) mascot.push(`pet: {id: ${jsString(pet.id)}, name: ${jsString(pet.name)}, spritesheet: ${jsString(pet.spritesheet)}}`);
  return {widget: `${config}\n<script async src="${base}/widget.js"></script>`,
          mascot: `<script>window.$parley = []; window.PARLEY_WEBSITE_ID = ${id};\n` +
            `window.PARLEY_MASCOT = {${mascot.join(", ")}};</script>\n<script async src="${base}/mascot.js"></script>`};
}

/** The pet the mascot snippet names: none without an http(s) URL for its atlas. */
function typedPet(name, url) {
  let parsed;
  try {
    parsed = new URL(url.trim());
  } catch {
    return null;
  }
  if (!["http:", "https:"].includes(parsed.protocol)) return null;
  const shown = name.trim() || "Pet";
  const id = shown.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "custom";
  return {id, name: shown, spritesheet: parsed.href};
}

/**
 * A live preview of an atlas as mascot.js plays it: one row's frames at the mascot's timing (its last
 * frame held longer), looping; `data-frame` says which frame shows. It stops once off the page.
 */
function petPreview() {
  const atlasWidth = PET.cellWidth * PET.columns, atlasHeight = PET.cellHeight * PET.rows;
  const sprite = h("div", {class: "pet-preview", role: "img", "aria-label": "No atlas chosen yet"});
  Object.assign(sprite.style, {width: `${PET.cellWidth}px`, height: `${PET.cellHeight}px`,
                               backgroundSize: `${atlasWidth}px ${atlasHeight}px`});
  const row = h("select", {}, Object.keys(PET.states).map((state) => h("option", {value: state}, state)));
  const still = matchMedia("(prefers-reduced-motion: reduce)").matches;
  const paused = () => pause.getAttribute("aria-pressed") === "true";
  const pause = h("button", {type: "button", class: "secondary", "aria-pressed": String(still), onclick: () => {
    pause.setAttribute("aria-pressed", String(!paused()));
    restart();
  }}, "Pause");
  let timer = 0, frame = 0, url = null;
  const paint = () => {
    const line = PET.states[row.value].row;
    sprite.style.backgroundPosition = `${-frame * PET.cellWidth}px ${-line * PET.cellHeight}px`;
    sprite.dataset.row = String(line);
    sprite.dataset.frame = String(frame);
  };
  const tick = () => {
    if (!sprite.isConnected) return forget();
    const {frames, frameMs} = PET.states[row.value];
    paint();
    if (paused()) return;
    timer = setTimeout(() => { frame = (frame + 1) % frames; tick(); }, frame === frames - 1 ? PET.lastFrameMs : frameMs);
  };
  function restart() {
    clearTimeout(timer);
    frame = 0;
    if (url) tick();
  }
  function forget() {
    clearTimeout(timer);
    if (url) URL.revokeObjectURL(url);
    url = null;
  }
  row.addEventListener("change", restart);
  return {
    sprite, row, pause,
    /** Shows `file` (a Blob) from this browser's memory, named `label` for screen readers. */
    show(file, label) {
      forget();
      url = URL.createObjectURL(file);
      sprite.style.backgroundImage = `url("${url}")`;
      sprite.setAttribute("aria-label", label);
      requestAnimationFrame(() => tick()); // once the element is on the page
    },
  };
}

/** The validator's verdict on an atlas, as text. */
function verdictView({valid, failures}) {
  return valid ? h("p", {class: "status-ok verdict"}, "Valid: the atlas follows every rule of the pet format.")
    : h("div", {class: "verdict"}, h("p", {class: "status-bad"}, "Not valid:"),
      h("ul", {class: "failures"}, failures.map((failure) => h("li", null, failure))));
}

class ParleyWebsites extends Page {
  show() {
    const name = h("input", {id: "website-name", required: true, pattern: "[a-z0-9][a-z0-9\\-]{1,62}",
                             placeholder: "acme-help"});
    const color = h("input", {id: "website-color", type: "color", value: DEFAULT_BRAND_COLOR});
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
    const mascotCode = h("code", {class: "mascot-snippet"}, mascot);
    const swatch = h("span", {class: "swatch"});
    const paintSwatch = () => { swatch.style.background = website.brandColor ?? DEFAULT_BRAND_COLOR; }; // CSSOM, which the CSP allows
    paintSwatch();
    return h("section", {class: "card", "data-website": website.websiteName},
      h("h2", null, swatch, " ", website.websiteName),
      h("p", null, "Website id ", h("code", null, website._id), " ", copyButton(website._id, "Copy id")),
      widgetSection(website, (saved) => { website.brandColor = saved.brandColor; paintSwatch(); }),
      h("form", {onsubmit: (e) => {
        e.preventDefault();
        save({allowedOrigins: origins.value.split(/\s+/).filter(Boolean)});
      }}, field("Allowed origins", origins, "One per line. Empty: the widget works on any site."),
        h("button", {type: "submit", class: "secondary"}, "Save origins")),
      status,
      assignmentSection(website),
      h("h3", null, "Install the chat widget"), h("pre", null, h("code", null, widget)), copyButton(widget, "Copy snippet"),
      h("h3", null, "Or the mascot"), h("pre", null, mascotCode), copyButton(() => mascotCode.textContent, "Copy snippet"),
      this.petSection(website, mascotCode),
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
      hoursSection(website),
      this.agentSection(website));
  }

  /** The mascot's own pet: pick its atlas to preview and validate it; its name and URL go in the snippet. */
  petSection(website, mascotCode) {
    const id = website._id;
    const file = h("input", {type: "file", accept: "image/png,image/webp", id: `pet-file-${id}`});
    const name = h("input", {id: `pet-name-${id}`, placeholder: "Pip", maxlength: "60"});
    const url = h("input", {type: "url", id: `pet-url-${id}`, placeholder: "https://cdn.example.com/pet/spritesheet.png"});
    const caption = h("figcaption");
    const verdict = h("div", {"aria-live": "polite", class: "pet-verdict"});
    const preview = petPreview();
    const update = () => {
      const pet = typedPet(name.value, url.value);
      mascotCode.textContent = snippets(website, pet).mascot;
      caption.textContent = name.value.trim() || "Your pet";
    };
    name.addEventListener("input", update);
    url.addEventListener("input", update);
    let picked = null; // the latest file: a slower answer about an earlier one is dropped
    file.addEventListener("change", async () => {
      const atlas = picked = file.files[0];
      if (!atlas) return;
      preview.show(atlas, `Preview of ${atlas.name}`);
      replace(verdict, h("p", {class: "notice"}, "Checking the atlas…"));
      let shown;
      try {
        shown = verdictView(await api("POST", "/api/pets/validate", atlas));
      } catch (error) {
        shown = errorBox(error);
      }
      if (atlas === picked) replace(verdict, shown);
    });
    update();
    return h("div", {class: "pet"},
      h("h3", null, "Mascot pet"),
      h("p", {class: "notice"}, `Your own pet: a transparent PNG or lossless WebP atlas of ${PET.columns} x ${PET.rows} cells ` +
        `of ${PET.cellWidth}x${PET.cellHeight}, hosted where visitors' browsers can load it. Without one the mascot shows Pip.`),
      h("div", {class: "grid2"},
        h("div", null, field("Atlas file", file, "Sent to Parley only to be checked, never stored: you host it."),
          field("Pet name", name), field("Atlas URL", url, "Where you will publish the atlas (http or https).")),
        h("div", null, h("figure", {class: "pet-stage"}, preview.sprite, caption),
          field("Row", preview.row), preview.pause, verdict)));
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
