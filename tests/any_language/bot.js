// A bot in Node (18 or later: fetch is built in), no npm package needed.
// botsvc gives it two variables: BOTSVC_BASE_URL and BOTSVC_BOT_TOKEN.
const api = `${process.env.BOTSVC_BASE_URL}/v2`;
const headers = {
  Authorization: `Bearer ${process.env.BOTSVC_BOT_TOKEN}`,
  "Content-Type": "application/json",
};
const keyboard = { inline_keyboard: [[{ text: "Yes", callback_data: "yes" },
                                      { text: "No", callback_data: "no" }]] };

async function call(method, params = {}) {
  const answer = await fetch(`${api}/${method}`, {
    method: "POST", headers, body: JSON.stringify(params),
  });
  const body = await answer.json();
  if (!body.ok) throw new Error(`${method}: ${body.error_code} ${body.description}`);
  return body.result;
}

async function handle(update) {
  if (update.callback_query) {
    const query = update.callback_query;
    await call("editMessageText", { chat_id: query.chat_id, message_id: query.message_id,
                                    text: `You picked ${query.data}` });
    await call("answerCallbackQuery", { callback_query_id: query.id, text: "Saved" });
    return;
  }
  const message = update.message;
  if (!message || !message.text) return;
  if (message.text.startsWith("/start")) {
    await call("sendMessage", { chat_id: message.chat.id, text: "Welcome",
                                reply_markup: keyboard });
  } else {
    await call("sendMessage", { chat_id: message.chat.id, text: `You said: ${message.text}` });
  }
}

let running = true;
process.on("SIGTERM", () => { running = false; });   // botsvc stops it with SIGTERM

async function main() {
  console.log(`polling ${api}`);
  let offset = 0;
  while (running) {
    for (const update of await call("getUpdates", { offset })) {
      offset = update.update_id + 1;
      await handle(update);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

main().catch((error) => { console.error(error); process.exit(1); });
