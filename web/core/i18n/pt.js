// The widget's and the mascot's words in Portuguese: loaded only by a page that shows them (core/i18n.js).
export default {
  title: "Fale connosco", welcome: "Pergunte-nos o que quiser. Costumamos responder em poucos minutos.",
  away: "Neste momento n\u00E3o estamos. Deixe uma mensagem e respondemos assim que voltarmos.",
  message: "Mensagem", write: "Escreva uma mensagem\u2026", send: "Enviar", help: "Ajuda", chat: "Conversa",
  searchHelp: "Pesquisar na ajuda", searchPlaceholder: "Pesquise os nossos artigos", search: "Pesquisar",
  articles: "Artigos de ajuda", noMatch: "Nenhum artigo corresponde a \u201C{query}\u201D.",
  back: "\u2190 Voltar aos resultados", open: "Abrir a conversa", close: "Fechar a conversa", unread: "{n} por ler",
  conversation: "Conversa", teamTyping: "A equipa est\u00E1 a escrever\u2026", agentTyping: "O assistente est\u00E1 a escrever\u2026",
  howDidWeDo: "Como nos sa\u00EDmos?", unhappy: "Mal", neutral: "Razo\u00E1vel", happy: "Muito bem",
  thanks: "Obrigado pela sua opini\u00E3o!", react: "Reagir", reactWith: "Reagir com {emoji}", seen: "Visto",
  notSent: "N\u00E3o enviada", retry: "Tentar de novo", offline: "Est\u00E1 offline. As mensagens seguem quando a liga\u00E7\u00E3o voltar.",
  team: "Equipa", assistant: "Assistente", chatWith: "Fale com {name}", done: "feito",
  opensAt: "Voltamos em {when}.", leaveEmail: "O seu e-mail, para lhe respondermos", saveEmail: "Guardar",
  emailSaved: "Obrigado: responderemos para {email}.",
  removed: "Mensagem removida",
};
