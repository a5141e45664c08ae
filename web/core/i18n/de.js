// The widget's and the mascot's words in German: loaded only by a page that shows them (core/i18n.js).
export default {
  title: "Schreiben Sie uns", welcome: "Fragen Sie uns alles. Wir antworten meist innerhalb weniger Minuten.",
  away: "Wir sind gerade nicht da. Hinterlassen Sie eine Nachricht, wir antworten, sobald wir zur\u00FCck sind.",
  message: "Nachricht", write: "Nachricht schreiben\u2026", send: "Senden", help: "Hilfe", chat: "Chat",
  searchHelp: "Hilfe durchsuchen", searchPlaceholder: "Unsere Hilfeartikel durchsuchen", search: "Suchen",
  articles: "Hilfeartikel", noMatch: "Kein Artikel passt zu \u201E{query}\u201C.", back: "\u2190 Zur\u00FCck zu den Ergebnissen",
  open: "Chat \u00F6ffnen", close: "Chat schlie\u00DFen", unread: "{n} ungelesen", conversation: "Unterhaltung",
  teamTyping: "Das Team schreibt\u2026", agentTyping: "Der Assistent schreibt\u2026", howDidWeDo: "Wie waren wir?",
  unhappy: "Schlecht", neutral: "Okay", happy: "Sehr gut", thanks: "Danke f\u00FCr Ihr Feedback!", react: "Reagieren",
  reactWith: "Mit {emoji} reagieren", seen: "Gesehen", notSent: "Nicht gesendet", retry: "Erneut senden",
  offline: "Sie sind offline. Nachrichten werden gesendet, sobald die Verbindung wieder steht.", team: "Team",
  assistant: "Assistent", chatWith: "Mit {name} chatten", done: "erledigt",
  opensAt: "Wir sind zur\u00FCck am {when}.", leaveEmail: "Ihre E-Mail-Adresse f\u00FCr unsere Antwort", saveEmail: "Speichern",
  emailSaved: "Danke: Wir antworten Ihnen an {email}.",
  removed: "Nachricht entfernt",
};
