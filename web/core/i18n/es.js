// The widget's and the mascot's words in Spanish: loaded only by a page that shows them (core/i18n.js).
export default {
  title: "Habla con nosotros", welcome: "Preg\u00FAntanos lo que quieras. Solemos responder en pocos minutos.",
  away: "Ahora no estamos. Deja un mensaje y te responderemos en cuanto volvamos.",
  message: "Mensaje", write: "Escribe un mensaje\u2026", send: "Enviar", help: "Ayuda", chat: "Chat",
  searchHelp: "Buscar en la ayuda", searchPlaceholder: "Busca en nuestros art\u00EDculos", search: "Buscar",
  articles: "Art\u00EDculos de ayuda", noMatch: "Ning\u00FAn art\u00EDculo coincide con \u00AB{query}\u00BB.",
  back: "\u2190 Volver a los resultados", open: "Abrir el chat", close: "Cerrar el chat", unread: "{n} sin leer",
  conversation: "Conversaci\u00F3n", teamTyping: "El equipo est\u00E1 escribiendo\u2026",
  agentTyping: "El asistente est\u00E1 escribiendo\u2026", howDidWeDo: "\u00BFQu\u00E9 tal lo hicimos?", unhappy: "Mal",
  neutral: "Regular", happy: "Muy bien", thanks: "\u00A1Gracias por tu opini\u00F3n!", react: "Reaccionar",
  reactWith: "Reaccionar con {emoji}", seen: "Visto", notSent: "No enviado", retry: "Reintentar",
  offline: "Est\u00E1s sin conexi\u00F3n. Los mensajes se enviar\u00E1n cuando vuelva la conexi\u00F3n.", team: "Equipo",
  assistant: "Asistente", chatWith: "Habla con {name}", done: "hecho",
  opensAt: "Volvemos el {when}.", leaveEmail: "Tu correo electr\u00F3nico, para responderte", saveEmail: "Guardar",
  emailSaved: "Gracias: te responderemos a {email}.",
  removed: "Mensaje eliminado",
};
