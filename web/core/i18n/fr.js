// The widget's and the mascot's words in French: loaded only by a page that shows them (core/i18n.js).
export default {
  title: "Discutons", welcome: "Posez-nous vos questions. Nous r\u00E9pondons en g\u00E9n\u00E9ral en quelques minutes.",
  away: "Nous sommes absents pour le moment. Laissez un message, nous r\u00E9pondrons d\u00E8s notre retour.",
  message: "Message", write: "\u00C9crivez un message\u2026", send: "Envoyer", help: "Aide", chat: "Discussion",
  searchHelp: "Rechercher dans l\u2019aide", searchPlaceholder: "Rechercher dans nos articles", search: "Rechercher",
  articles: "Articles d\u2019aide", noMatch: "Aucun article ne correspond \u00E0 \u00AB\u00A0{query}\u00A0\u00BB.",
  back: "\u2190 Retour aux r\u00E9sultats", open: "Ouvrir la discussion", close: "Fermer la discussion",
  unread: "{n} non lus", conversation: "Conversation", teamTyping: "L\u2019\u00E9quipe \u00E9crit\u2026",
  agentTyping: "L\u2019assistant \u00E9crit\u2026", howDidWeDo: "Comment nous sommes-nous d\u00E9brouill\u00E9s\u00A0?",
  unhappy: "Mal", neutral: "Moyen", happy: "Tr\u00E8s bien", thanks: "Merci pour votre avis\u00A0!", react: "R\u00E9agir",
  reactWith: "R\u00E9agir avec {emoji}", seen: "Vu", notSent: "Non envoy\u00E9", retry: "R\u00E9essayer",
  offline: "Vous \u00EAtes hors ligne. Les messages partiront d\u00E8s le retour de la connexion.", team: "\u00C9quipe",
  assistant: "Assistant", chatWith: "Discuter avec {name}", done: "fait",
  opensAt: "Nous revenons le {when}.", leaveEmail: "Votre adresse e-mail, pour recevoir notre r\u00E9ponse", saveEmail: "Enregistrer",
  emailSaved: "Merci\u00A0: nous vous r\u00E9pondrons \u00E0 {email}.",
  removed: "Message supprim\u00E9",
};
