// One chat, as its user sees it: bubbles, cards, keyboards and media, kept
// current by polling the chat's state (a cheap "changed?" check) and redrawn
// message by message, so a playing voice note is never interrupted by an
// unrelated update. Every text a bot or user sent is set with textContent.
"use strict";

(() => {
  const root = document.getElementById("chat");
  if (!root) return;
  const ids = {user_id: Number(root.dataset.userId), bot_id: Number(root.dataset.botId)};
  const botName = root.dataset.botName;
  const scroller = document.getElementById("messages-scroll");
  const list = document.getElementById("messages");
  const $ = (id) => document.getElementById(id);
  const POLL_MS = 700, HIDDEN_POLL_MS = 5000, ERROR_POLL_MS = 3000;

  let version = null, firstView = true, replyTo = null, toBottom = false;
  let byId = new Map();                   // message_id -> message, as last shown
  const drawn = new Map();                // item key -> {signature, element}
  const seenAnswers = new Set();
  const {el, snippet, dayOf, daySeparator, bubble, size} = ChatView;
  const mediaUrl = (m) => root.dataset.mediaUrl.replace(/\/0\/_$/,
    `/${m.message_id}/${encodeURIComponent(m.media.file_id)}`);

  // -- polling -----------------------------------------------------------------

  let timer = null, inFlight = false, again = false;

  async function poll() {
    if (inFlight) { again = true; return; }
    inFlight = true;
    clearTimeout(timer);
    let delay = document.hidden ? HIDDEN_POLL_MS : POLL_MS;
    try {
      const url = new URL(root.dataset.stateUrl, location.href);
      if (version !== null) url.searchParams.set("since", version);
      const response = await fetch(url, {credentials: "same-origin", cache: "no-store"});
      if (response.status === 401) { Sandbox.signedOut(); return; }
      const body = await response.json();
      if (!body.ok) throw new Error(body.description);
      if (body.result.changed) show(body.result);
      version = body.result.version;
    } catch (e) {
      delay = ERROR_POLL_MS;
    } finally {
      inFlight = false;
      timer = setTimeout(poll, again ? 0 : delay);
      again = false;
    }
  }

  function show(state) {
    root.dataset.state = state.membership;
    $("membership").textContent = state.membership;
    const messages = state.chat ? state.chat.messages : [];
    byId = new Map(messages.map((m) => [m.message_id, m]));
    const stick = firstView || toBottom || scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 120;
    draw(messages);
    const empty = $("chat-empty");
    empty.hidden = messages.length > 0;
    empty.textContent = state.chat ? "No messages yet. Say hello!"
      : `Press Start to begin your chat with ${botName}.`;
    if (stick) scroller.scrollTop = scroller.scrollHeight;
    announce(state.chat ? state.chat.callback_answers : []);
    sidebarEntry(state.membership, messages[messages.length - 1]);
    firstView = toBottom = false;
  }

  // The open chat's line in the sidebar follows what happens here.
  function sidebarEntry(membership, last) {
    const preview = document.querySelector(".chat-list a[aria-current] .entry-preview");
    if (!preview) return;
    preview.replaceChildren();
    if (membership !== "active") preview.append(el("em", null, membership), " ");
    if (last) preview.append(snippet(last));
  }

  // -- drawing -----------------------------------------------------------------

  function keepAtBottom() {
    if (scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 400) {
      scroller.scrollTop = scroller.scrollHeight;
    }
  }

  function draw(messages) {
    const wanted = [];
    let day = null;
    for (let i = 0; i < messages.length;) {
      const group = [messages[i]];
      const album = messages[i].media_group_id;
      while (album && i + group.length < messages.length
             && messages[i + group.length].media_group_id === album) group.push(messages[i + group.length]);
      i += group.length;
      if (dayOf(group[0].date) !== day) {
        day = dayOf(group[0].date);
        wanted.push({key: `day ${day}`, signature: day, build: () => daySeparator(group[0].date)});
      }
      const quoted = group[0].reply_to_message_id;
      wanted.push({key: `m${group[0].message_id}`,
        signature: JSON.stringify([group, quoted ? snippet(byId.get(quoted)) : null]),
        build: () => bubble(group)});
    }
    const keep = new Set(wanted.map((w) => w.key));
    for (const [key, item] of drawn) {
      if (!keep.has(key)) { item.element.remove(); drawn.delete(key); }
    }
    let previous = null;
    for (const w of wanted) {
      let item = drawn.get(w.key);
      if (!item || item.signature !== w.signature) {
        const element = w.build();
        if (item) item.element.replaceWith(element);
        item = {signature: w.signature, element};
        drawn.set(w.key, item);
      }
      const expected = previous ? previous.nextElementSibling : list.firstElementChild;
      if (item.element !== expected) list.insertBefore(item.element, expected);
      previous = item.element;
    }
  }

  // -- clicks and the bot's answers --------------------------------------------

  async function press(m, data, button) {
    button.classList.add("pending");
    try {
      await Sandbox.api("userClickButton", {...ids, message_id: m.message_id, callback_data: data});
      poll();
    } catch (e) {
      Sandbox.toast(Sandbox.describe(e), "error");
    } finally {
      setTimeout(() => button.classList.remove("pending"), 600);
    }
  }

  // The bot's answers to clicks: a toast, or an alert when it asked for one.
  // Answers given before the page opened are not shown again.
  function announce(answers) {
    for (const answer of answers) {
      if (seenAnswers.has(answer.callback_query_id)) continue;
      seenAnswers.add(answer.callback_query_id);
      if (firstView || !answer.text) continue;
      if (answer.show_alert) Sandbox.dialog({title: botName, text: answer.text});
      else Sandbox.toast(answer.text, "answer");
    }
  }

  // -- the composer and the membership buttons ---------------------------------

  const text = $("composer-text"), file = $("composer-file"), send = $("composer-send");
  const type = $("attachment-type"), status = $("composer-error");

  function say(message, kind = "error") {
    status.textContent = message || "";
    status.className = `composer-error ${kind}`;
    status.hidden = !message;
  }

  function grow() { text.rows = Math.min(6, Math.max(1, text.value.split("\n").length)); }

  function startReply(m) {
    replyTo = m.message_id;
    $("reply-snippet").textContent = snippet(m);
    $("reply-bar").hidden = false;
    text.focus();
  }

  function cancelReply() { replyTo = null; $("reply-bar").hidden = true; }

  function clearFile() { file.value = ""; type.value = ""; $("attachment-bar").hidden = true; }

  async function submit() {
    const chosen = file.files[0];
    if (send.disabled || (!chosen && text.value === "")) return;
    send.disabled = true;
    say(chosen ? "Uploading: the file is checked and converted\u2026" : "", "info");
    try {
      if (chosen) {
        const data = new FormData();
        data.append("user_id", ids.user_id);
        data.append("bot_id", ids.bot_id);
        data.append("file", chosen, chosen.name);
        if (text.value) data.append("caption", text.value);
        if (type.value) data.append("type", type.value);
        await Sandbox.api("userSendMedia", data);
        clearFile();
      } else {
        const params = {...ids, text: text.value};
        if (replyTo !== null) params.reply_to_message_id = replyTo;
        await Sandbox.api("userSendMessage", params);
      }
      cancelReply();
      text.value = "";
      grow();
      say("");
      toBottom = true;  // what you send, you see
      poll();
    } catch (e) {
      say(Sandbox.describe(e));
    } finally {
      send.disabled = false;
      text.focus();
    }
  }

  async function membership(method, extra = {}) {
    try {
      await Sandbox.api(method, {...ids, ...extra});
      $("start-param").value = "";
      say("");
      poll();
    } catch (e) {
      say(Sandbox.describe(e));
    }
  }

  $("composer").addEventListener("submit", (event) => { event.preventDefault(); submit(); });
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  text.addEventListener("input", grow);
  file.addEventListener("change", () => {
    const chosen = file.files[0];
    $("attachment-bar").hidden = !chosen;
    if (chosen) $("attachment-name").textContent = `${chosen.name} (${size(chosen.size)})`;
  });
  $("attachment-cancel").addEventListener("click", clearFile);
  $("reply-cancel").addEventListener("click", cancelReply);
  $("btn-start").addEventListener("click", () => {
    const parameter = $("start-param").value.trim();
    membership("userStart", parameter ? {start_parameter: parameter} : {});
  });
  $("btn-stop").addEventListener("click", () => membership("userStop"));
  $("btn-block").addEventListener("click", () => membership("userBlock"));
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
  ChatView.use({botName, mediaUrl, get byId() { return byId; }, onReply: startReply,
    onPress: press, onMediaSized: keepAtBottom});
  poll();
})();
