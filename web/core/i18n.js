// The words of the widget and the mascot: English here, every other language in a catalogue of its own
// (i18n/xx.js), loaded only by a page that shows it. The language is the page's choice
// (`["setLocale", "fr"]`), else the page's `<html lang>`, else the website's default; a language without a
// catalogue falls back to English. `{x}` in a text is filled in by `t(key, {x})`.

const ENGLISH = {
  title: "Chat with us", welcome: "Ask us anything. We usually answer within minutes.",
  away: "We are away right now. Leave a message and we will answer as soon as we are back.",
  message: "Message", write: "Write a message\u2026", send: "Send", help: "Help", chat: "Chat",
  searchHelp: "Search help", searchPlaceholder: "Search our help articles", search: "Search", articles: "Help articles",
  noMatch: "No article matches \u201C{query}\u201D.", back: "\u2190 Back to results", open: "Open chat",
  close: "Close chat", unread: "{n} unread", conversation: "Conversation", teamTyping: "The team is typing\u2026",
  agentTyping: "The assistant is typing\u2026", howDidWeDo: "How did we do?", unhappy: "Bad", neutral: "Okay",
  happy: "Great", thanks: "Thank you for your feedback!", react: "React", reactWith: "React with {emoji}",
  seen: "Seen", notSent: "Not sent", retry: "Retry", offline: "You are offline. Messages will be sent once the connection is back.",
  team: "Team", assistant: "Assistant", chatWith: "Chat with {name}", done: "done",
  opensAt: "We are back {when}.", leaveEmail: "Your e-mail address, to hear back from us", saveEmail: "Save",
  emailSaved: "Thank you: we will answer you at {email}.", removed: "Message removed",
};

export const LANGUAGES = ["en", "fr", "de", "es", "pt", "ar"];
const loading = { en: Promise.resolve(ENGLISH) };
const RIGHT_TO_LEFT = new Set(["ar"]);

/** The catalogue's language for a tag (`pt-BR` is `pt`), or null when there is no catalogue for it. */
export function supported(tag) {
  const language = String(tag || "").toLowerCase().split(/[-_]/)[0];
  return LANGUAGES.includes(language) ? language : null;
}

/** The words of a supported language, loaded once (English when its catalogue does not load). */
export function wordsOf(language) {
  return loading[language] || (loading[language] = import("./i18n/" + language + ".js").then((m) => m.default, () => ENGLISH));
}

/** The texts of `language` (its `words`, from `wordsOf`): `t(key, values)`, its direction and its `Intl`
 * formatting of times. */
export function catalogue(language, words = ENGLISH) {
  const t = (key, values) => (words[key] ?? ENGLISH[key]).replace(/\{(\w+)\}/g, (_, name) => String(values?.[name] ?? ""));
  const relative = new Intl.RelativeTimeFormat(language, { numeric: "auto" });
  const exact = new Intl.DateTimeFormat(language, { dateStyle: "medium", timeStyle: "short" });
  return {
  language, t, dir: RIGHT_TO_LEFT.has(language) ? "rtl" : "ltr",
    /** "2 minutes ago" for an ISO time; under a minute, "now". */
  ago(iso) {
      const seconds = Math.round((Date.parse(iso) - Date.now()) / 1000);
      const [amount, unit] = Math.abs(seconds) < 60 ? [0, "second"] : Math.abs(seconds) < 3600 ? [Math.round(seconds / 60), "minute"]
        : Math.abs(seconds) < 86400 ? [Math.round(seconds / 3600), "hour"] : [Math.round(seconds / 86400), "day"];
      return relative.format(amount, unit);
    },
  exact: (iso) => exact.format(new Date(iso)),
  };
}
