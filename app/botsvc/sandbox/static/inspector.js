// The inspector: the JSON behind a message or a line of the chat. For what
// the user did, the update the bot received (as getUpdates returns it and a
// webhook delivers it); for a bot's message, the call that sent it and its
// result, from the bot's call log. Ids copy with one click; "Copy as curl"
// gives a runnable command for a send to this chat, with $BOT_TOKEN where
// the bot's token goes (the page never holds a token): set BOT_TOKEN in the
// shell and paste.
"use strict";

const Inspector = (() => {
  const TOKEN_PLACEHOLDER = "$BOT_TOKEN";
  let ctx = null, current = null, generation = 0;
  const $ = (id) => document.getElementById(id);
  const use = (context) => { ctx = context; };

  const el = Sandbox.el;

  // -- pieces ------------------------------------------------------------------

  function idChip(name, value) {
    const chip = el("button", "id-chip");
    chip.type = "button";
    chip.title = `Copy ${name}`;
    chip.dataset.copy = String(value);
    chip.append(el("span", "id-name", name), el("span", "id-value", String(value)));
    chip.addEventListener("click", () => Sandbox.copy(String(value)));
    return chip;
  }

  function actions(...buttons) {
    const row = el("div", "inspect-actions");
    row.append(...buttons);
    return row;
  }

  function section(title, ...content) {
    const box = el("section", "inspect-section");
    box.append(el("h4", null, title), ...content.filter(Boolean));
    return box;
  }

  // A section shown by its title until opened (what repeats the call's result).
  function folded(title, ...content) {
    const box = el("details", "inspect-section");
    box.append(el("summary", null, title), ...content);
    return box;
  }

  function json(value, kind) {
    const view = JsonView.render(value);
    if (kind) view.dataset.json = kind;
    return view;
  }

  // A shell word: single-quoted, a single quote inside written as '\''.
  const quote = (text) => `'${String(text).replace(/'/g, "'\\''")}'`;

  function isFilePart(value) {
    return value && typeof value === "object" && !Array.isArray(value)
      && Object.keys(value).sort().join() === "file_name,size";
  }

  const formText = (value) => (typeof value === "string" ? value : JSON.stringify(value));

  // A runnable command for ``method`` with ``params``, sent as the call was:
  // a multipart form where a parameter was a file (the path is for the
  // reader to fill; text fields with --form-string, which takes a leading
  // "@" or "<" literally where -F would read a file); a form-encoded body
  // where every value is text (as a form's values are: reply_markup stays
  // the JSON text it was, where a JSON body would need an object); else JSON.
  function curl(method, params) {
    const base = $("inspector").dataset.baseUrl.replace(/\/$/, "");
    // Double quotes around the header, so that the shell puts the token in.
    const lines = [`curl -sS -X POST ${quote(`${base}/v2/${method}`)}`,
      `  -H "Authorization: Bearer ${TOKEN_PLACEHOLDER}"`];
    const entries = Object.entries(params);
    if (entries.some(([, v]) => isFilePart(v))) {
      for (const [key, value] of entries) {
        lines.push(isFilePart(value) ? `  -F ${quote(`${key}=@${value.file_name}`)}`
          : `  --form-string ${quote(`${key}=${formText(value)}`)}`);
      }
    } else if (entries.length && entries.every(([, v]) => typeof v === "string")) {
      // name=content: curl URL-encodes the content as it is ("@" included).
      for (const [key, value] of entries) lines.push(`  --data-urlencode ${quote(`${key}=${value}`)}`);
    } else {
      lines.push(`  -H ${quote("Content-Type: application/json")}`,
        `  --data-raw ${quote(JSON.stringify(params))}`);
    }
    return lines.join(" \\\n");
  }

  // A call kept whole can be run again; one too large to keep (its params
  // left out, or cut to a preview) says so instead of a command that is not it.
  function callCurl(call, label = "Copy as curl") {
    if (call.params && !call.truncated && !call.params_preview && !(call.cut_fields || []).length) {
      return curlButton(call.method, call.params, label);
    }
    return el("p", "muted small curl-none", `No curl: this ${call.method} call was too large to`
      + " keep whole in the call log (its parameters are cut or left out).");
  }

  function curlButton(method, params, label = "Copy as curl") {
    const button = el("button", "btn small-btn curl", label);
    button.type = "button";
    const command = curl(method, params);
    button.dataset.command = command;
    button.title = command;
    button.addEventListener("click", () => Sandbox.copy(command));
    return button;
  }

  function callView(call) {
    const head = el("p", `call-head${call.ok ? "" : " failed"}`);
    head.append(el("b", null, call.method), ` \u00b7 HTTP ${call.http_status}`,
      call.ok ? "" : ` \u00b7 ${call.error_code}`, ` \u00b7 ${Math.round(call.duration_ms)} ms`,
      call.replayed ? " \u00b7 replayed (Idempotency-Key)" : "");
    if (call.resent_from !== undefined) head.append(" \u00b7 ", el("span", "pill replay-pill resent-pill", `re-send of call ${call.resent_from}`));
    if (call.injected) head.append(" \u00b7 ", Sandbox.injectedPill(call.injected));
    const body = {};
    for (const key of ["params", "params_preview", "cut_fields", "result", "result_whole", "truncated",
      "description", "error_parameters", "injected", "resent_from", "idempotency_key", "request_id",
      "call_id", "date"]) {
      if (call[key] !== undefined) body[key] = call[key];
    }
    return [head, json(body, "call")];
  }

  // -- what a selection shows ----------------------------------------------------

  function showMessage(answer, messageId) {
    const m = answer.message;
    const events = answer.events;
    const sent = events.find((e) => e.kind !== "click");
    const fromBot = m ? m.from_bot : !sent;
    const parts = [];
    const title = m ? (fromBot ? `The bot's message #${messageId}` : `Your message #${messageId}`)
      : `Message #${messageId} (deleted)`;
    const chips = el("div", "id-chips");
    chips.append(idChip("chat_id", answer.chat_id), idChip("message_id", messageId));
    if (m && m.media) chips.append(idChip("file_id", m.media.file_id));
    if (sent && sent.update) chips.append(idChip("update_id", sent.update.update_id));
    parts.push(chips);
    const calls = answer.calls || [];
    if (!fromBot) {
      parts.push(sent && sent.update
        ? section("The update your bot received", json(sent.update, "update"),
          el("p", "muted small", "As getUpdates returns it, and as a webhook delivers it."))
        : section("The update your bot received", el("p", "muted small", "None was recorded.")));
      parts.push(actions(curlButton("sendMessage",
        {chat_id: answer.chat_id, text: "Got it!", reply_to_message_id: messageId},
        "Copy a reply as curl")));
    } else {
      const sender = calls.find((c) => c.kind === "sent");
      if (sender) parts.push(section("The call that sent it", ...callView(sender.call)));
      else if (answer.calls) {
        // No made-up command in its place: there is no call to copy.
        parts.push(section("The call that sent it", el("p", "muted small not-in-log",
          "Not found in the bot's call log: it keeps the last 1,000 calls of 24 hours; or a"
          + " broadcast sent it.")));
      }
      for (const later of calls.filter((c) => c.kind !== "sent")) {
        parts.push(section(`Then: ${later.call.method}`, ...callView(later.call),
          actions(callCurl(later.call, `Copy this ${later.call.method} as curl`))));
      }
      if (m) parts.push(sender ? folded("As the user sees it now", json(m, "message"))
        : section("As the user sees it now", json(m, "message")));
      if (sender) parts.push(actions(callCurl(sender.call)));
    }
    for (const click of events.filter((e) => e.kind === "click")) {
      const label = ChatView.buttonLabel(m, click.update.callback_query.data);
      const given = answer.callback_answers.find((a) => a.callback_query_id === click.callback_query_id);
      parts.push(section(`Your click on \u201c${label}\u201d`, json(click.update, "update"),
        given ? json(given, "answer") : el("p", "muted small", "Not answered.")));
    }
    return {title, parts};
  }

  const EVENT_TITLES = {start: "You started the bot", restart: "You restarted the bot",
    unblock: "You unblocked the bot", stop: "You stopped the bot", block: "You blocked the bot",
    click: "Your click", message: "Your message"};

  function showEvent(answer) {
    const event = answer.event;
    const parts = [];
    const chips = el("div", "id-chips");
    chips.append(idChip("chat_id", answer.chat_id));
    if (event.message_id !== undefined) chips.append(idChip("message_id", event.message_id));
    if (event.update) chips.append(idChip("update_id", event.update.update_id));
    if (event.callback_query_id) chips.append(idChip("callback_query_id", event.callback_query_id));
    parts.push(chips);
    parts.push(event.update
      ? section("The update your bot received", json(event.update, "update"),
        el("p", "muted small", "As getUpdates returns it, and as a webhook delivers it."))
      : section("The update your bot received", el("p", "muted small",
        "None: the chat was not active, so the bot was not told.")));
    if (event.kind === "click") {
      const given = answer.callback_answers.find((a) => a.callback_query_id === event.callback_query_id);
      parts.push(section("The bot's answer", given ? json(given, "answer")
        : el("p", "muted small", "Not answered (yet).")));
      // A query is answered once: no command that would only get a 400.
      parts.push(given ? el("p", "muted small curl-none", "Already answered: a second"
        + " answerCallbackQuery for this id would be refused.")
        : actions(curlButton("answerCallbackQuery", {callback_query_id: event.callback_query_id},
          "Copy an answer as curl")));
    }
    return {title: ChatView.lineText ? ChatView.lineText(event) : EVENT_TITLES[event.kind], parts};
  }

  // -- showing -------------------------------------------------------------------

  async function show(selection) {
    current = selection;
    const mine = ++generation;
    const params = selection.kind === "event" ? {event_id: selection.id} : {message_id: selection.id};
    let view;
    try {
      const answer = await Sandbox.getJSON(ctx.inspectUrl(params));
      view = selection.kind === "event" ? showEvent(answer) : showMessage(answer, selection.id);
    } catch (e) {
      view = {title: "Could not inspect this", parts: [el("p", "error", Sandbox.describe(e))]};
    }
    if (mine !== generation) return;   // another selection came meanwhile
    const body = $("inspector-body");
    const head = el("header", "inspect-head");
    const close = el("button", "icon-btn small", "\u00d7");
    close.type = "button";
    close.setAttribute("aria-label", "Close the inspector");
    close.addEventListener("click", clear);
    head.append(el("b", "inspect-title", view.title), close);
    const fresh = body.dataset.selection !== `${selection.kind}:${selection.id}`;
    body.replaceChildren(head, ...view.parts);
    body.dataset.selection = `${selection.kind}:${selection.id}`;
    $("inspector-hint").hidden = true;
    if (fresh) reveal();
  }

  // A new selection is drawn where it is seen: the pane may be scrolled down
  // to the calls, the inspector far above the view. A redraw of the same
  // selection (the chat changed) leaves the reader's scroll alone.
  function reveal() {
    const box = $("inspector");
    const pane = box.closest(".dev-pane");
    if (!pane) return;
    const top = box.getBoundingClientRect().top, paneTop = pane.getBoundingClientRect().top;
    if (top < paneTop || top > paneTop + pane.clientHeight - 40) box.scrollIntoView({block: "start"});
  }

  function clear() {
    current = null;
    generation += 1;
    $("inspector-body").replaceChildren();
    delete $("inspector-body").dataset.selection;
    $("inspector-hint").hidden = false;
    if (ctx.onClose) ctx.onClose();
  }

  // What is shown may have changed (an answer, an edit): show it again.
  function refresh() {
    if (current) show(current);
  }

  return {use, show, refresh, clear, curl};
})();
