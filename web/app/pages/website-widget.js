// A website's widget settings (PUT /api/websites/{name}/widget) beside a live preview: the real widget and
// mascot (web/preview/, framed) redrawn with the form's values as they are typed, before anything is saved.

import {api} from "../api.js";
import {errorBox, field, h, replace} from "../dom.js";
import {LANGUAGES, catalogue, wordsOf} from "/core/i18n.js";

const THEMES = [["light", "Light"], ["dark", "Dark"], ["auto", "Follow the visitor's system"]];
const LANGUAGE_NAMES = {en: "English", fr: "Français", de: "Deutsch", es: "Español", pt: "Português", ar: "العربية"};
const TEXTS = [["title", "Title", "title"], ["launcherLabel", "Launcher label", null],
               ["welcomeMessage", "Welcome message", "welcome"], ["awayMessage", "Away message", "away"]];

const select = (id, options, value) => h("select", {id}, options.map(([key, label]) =>
  h("option", {value: key, selected: key === value}, label)));

/** The settings form and its preview for one website; `onSaved(settings)` after a save. */
export function widgetSection(website, onSaved) {
  const section = h("div", {class: "widget-settings"}, h("h3", null, "Widget"), h("p", {class: "notice"}, "Loading the widget's settings…"));
  api("GET", `/api/websites/${website.websiteName}/widget`).then((settings) => replace(section, ...form(website, settings, onSaved)),
    (error) => replace(section, h("h3", null, "Widget"), errorBox(error)));
  return section;
}

function form(website, settings, onSaved) {
  const id = website._id;
  const color = h("input", {type: "color", id: `widget-color-${id}`, value: settings.brandColor});
  const texts = Object.fromEntries(TEXTS.map(([key]) => {
    const control = h(key.endsWith("Message") ? "textarea" : "input", {id: `widget-${key}-${id}`, rows: "2"});
    control.value = settings[key] ?? "";
    return [key, control];
  }));
  const position = select(`widget-position-${id}`, [["right", "Right"], ["left", "Left"]], settings.position);
  const theme = select(`widget-theme-${id}`, THEMES, settings.theme);
  const language = select(`widget-language-${id}`, LANGUAGES.map((l) => [l, LANGUAGE_NAMES[l] ?? l]), settings.language);
  const helpSearch = h("input", {type: "checkbox", id: `widget-help-${id}`, checked: settings.helpSearch});
  const ratings = h("input", {type: "checkbox", id: `widget-ratings-${id}`, checked: settings.ratings});
  const away = h("input", {type: "checkbox", id: `widget-away-${id}`});
  const status = h("div", {"aria-live": "polite"});

  const values = () => ({
    brandColor: color.value,
    ...Object.fromEntries(Object.entries(texts).map(([key, control]) => [key, control.value.trim() || null])),
    position: position.value, theme: theme.value, language: language.value,
    helpSearch: helpSearch.checked, ratings: ratings.checked,
  });
  // the catalogue's words stand for an empty text, in the chosen language
  const placeholders = async () => {
    const chosen = language.value;
    const {t} = catalogue(chosen, await wordsOf(chosen));
    if (chosen === language.value) TEXTS.forEach(([key, , word]) => { texts[key].placeholder = word ? t(word) : "(the icon alone)"; });
  };

  const frames = ["widget", "mascot"].map((surface) => h("iframe", {
    class: `widget-preview ${surface}`, src: `/preview/?surface=${surface}`, "data-surface": surface,
    title: surface === "widget" ? "Preview of the chat widget" : "Preview of the mascot"}));
  const preview = () => {
    placeholders();
    const config = {...values(), open: true, nextOpenAt: null, online: !away.checked};
    frames.forEach((frame) => frame.contentWindow?.postMessage({type: "parley:preview", config}, location.origin));
  };
  // a frame says when its widget is ready; it then gets the form's values
  const listener = (event) => {
    if (!frames[0].isConnected) return window.removeEventListener("message", listener);
    if (event.origin === location.origin && event.data?.type === "parley:preview-ready") preview();
  };
  window.addEventListener("message", listener);

  const settingsForm = h("form", {class: "widget-form", oninput: preview, onchange: preview, onsubmit: async (event) => {
    event.preventDefault();
    try {
      const saved = await api("PUT", `/api/websites/${website.websiteName}/widget`, values());
      onSaved(saved);
      replace(status, h("p", {class: "status-ok"}, "Saved. Visitors see it at their next page load."));
    } catch (error) {
      replace(status, errorBox(error));
    }
  }},
    h("div", {class: "grid2"}, field("Brand color", color), field("Position", position)),
    h("p", {class: "notice"}, "A text left empty shows the widget's own words, in the visitor's language."),
    ...TEXTS.map(([key, label]) => field(label, texts[key])),
    field("Theme", theme),
    field("Default language", language, "The page's <html lang> or [\"setLocale\", …] choose another."),
    h("p", null, h("label", null, helpSearch, " Offer help search")),
    h("p", null, h("label", null, ratings, " Ask for a rating when a conversation is resolved")),
    h("p", null, h("label", null, away, " Preview as away (the team offline)")),
    h("button", {type: "submit"}, "Save widget"), status);
  placeholders();
  return [h("h3", null, "Widget"), h("div", {class: "widget-editor"}, settingsForm,
    h("div", {class: "widget-previews", "aria-label": "Live preview"}, ...frames))];
}
