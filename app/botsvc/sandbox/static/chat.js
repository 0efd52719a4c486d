// One chat, as its user sees it. The page holds a page of the newest
// messages (older ones load on scroll, through userGetChat's paging) and a
// position; every poll asks only for what came after that position, so a
// long chat costs no more per second than a short one. Every text a bot or
// user sent is set with textContent.
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
  const ANSWER_WAIT_SECONDS = 15;   // then "the bot did not respond", as in Telegram
  const {el, snippet, dayOf, daySeparator, bubble, line, buttonLabel, size} = ChatView;

  let version = null, membership = root.dataset.state, now = 0;
  let hasMore = false, loadingOlder = false, firstView = true, replyTo = null, toBottom = false;
  const byId = new Map();          // message_id -> message, as the user sees it now
  const events = new Map();        // event_id -> journal line (Start, Stop, a click...)
  const answers = new Map();       // callback_query_id -> the bot's answer
  const pending = new Map();       // callback_query_id -> {message_id, data, since}
  const drawn = new Map();         // item key -> {signature, element}
  let selected = null;             // what the inspector shows: {kind, id}
  let readUpTo = 0;

  const mediaUrl = (m) => root.dataset.mediaUrl.replace(/\/0\/_$/,
    `/${m.message_id}/${encodeURIComponent(m.media.file_id)}`);
  const url = (name, params) => {
    const target = new URL(root.dataset[name], location.href);
    for (const [key, value] of Object.entries(params || {})) target.searchParams.set(key, value);
    return target;
  };

  // -- polling -----------------------------------------------------------------

  let timer = null, inFlight = false, again = false;

  async function poll() {
    if (inFlight) { again = true; return; }
    inFlight = true;
    clearTimeout(timer);
    let delay = document.hidden ? HIDDEN_POLL_MS : POLL_MS;
    try {
      const state = await Sandbox.getJSON(url("stateUrl", version === null ? {} : {since: version}));
      now = state.now;
      Sandbox.setServiceNow(now);
      if (state.changed) (state.full ? showAll : showChanges)(state);
      version = state.version;
      expireClicks();
    } catch (e) {
      if (gone(e)) {
        inFlight = false;
        return;   // nothing more to ask: the page says so
      }
      delay = ERROR_POLL_MS;
    } finally {
      if (inFlight) {
        inFlight = false;
        timer = setTimeout(poll, again ? 0 : delay);
        again = false;
      }
    }
  }

  // The user or the bot no longer exists (a reset, most likely).
  function gone(error) {
    const field = error.parameters && error.parameters.field;
    if (error.code !== "INVALID_PARAMETER" || !["user_id", "bot_id"].includes(field)) return false;
    root.dataset.state = "gone";
    $("membership").textContent = "gone";
    $("state-text").textContent = "This chat no longer exists: its user or its bot is gone"
      + " (the installation was reset?). Pick a chat on the left.";
    $("state-bar").hidden = false;
    $("composer").hidden = true;
    return true;
  }

  function setMembership(state) {
    membership = state;
    root.dataset.state = state;
    $("membership").textContent = state;
    const texts = {stopped: "You stopped the bot. It cannot message you until you restart it.",
      blocked: "You blocked the bot. It cannot message you.",
      "not started": `Press Start to begin your chat with ${botName}.`};
    $("state-text").textContent = texts[state] || "";
    $("btn-start").textContent = {stopped: "Restart", blocked: "Unblock"}[state] || "Start";
    $("state-bar").hidden = state === "active";
    $("composer").hidden = state !== "active";
  }

  // A whole view: the newest page (first load, another chat after a reset,
  // or a page so far behind that its changes would be more than the page).
  function showAll(state) {
    setMembership(state.membership);
    byId.clear(); events.clear();
    const chat = state.chat;
    hasMore = chat ? chat.has_more : false;
    for (const m of chat ? chat.messages : []) byId.set(m.message_id, m);
    for (const e of state.events) events.set(e.event_id, e);
    for (const a of chat ? chat.callback_answers : []) answers.set(a.callback_query_id, a);
    for (const a of state.click_answers || []) answers.set(a.callback_query_id, a);   // a deleted card's too
    redraw(true);
  }

  function showChanges(state) {
    setMembership(state.membership);
    for (const m of state.messages) byId.set(m.message_id, m);
    for (const id of state.deleted) byId.delete(id);
    for (const e of state.events) {
      events.set(e.event_id, e);
      const waiting = e.kind === "click" && pending.get(e.callback_query_id);
      if (waiting) waiting.since = e.date;   // the service's own time of the click
    }
    announce(state.callback_answers);
    redraw(false);
    if (selected) Inspector.refresh();
  }

  function redraw(all) {
    const stick = firstView || all || toBottom
      || scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 120;
    draw();
    const empty = $("chat-empty");
    empty.hidden = byId.size > 0 || membership === "not started";
    empty.textContent = "No messages yet. Say hello!";
    $("about-bot").hidden = membership !== "not started" || !$("about-text").textContent.trim();
    $("history-note").hidden = !hasMore;
    $("history-note").textContent = "Older messages load as you scroll up.";
    if (stick) scroller.scrollTop = scroller.scrollHeight;
    firstView = toBottom = false;
    markRead();
    maybeLoadOlder();
  }

  // -- drawing -----------------------------------------------------------------

  function ordered() {
    const messages = [...byId.values()].sort((a, b) => a.message_id - b.message_id);
    const lines = [...events.values()].filter((e) => e.kind !== "message")
      .sort((a, b) => a.event_id - b.event_id);
    const items = [];
    let j = 0;
    for (let i = 0; i < messages.length;) {
      while (j < lines.length && lines[j].after_message_id < messages[i].message_id) {
        items.push({line: lines[j++]});
      }
      const group = [messages[i]];
      const album = messages[i].media_group_id;
      while (album && i + group.length < messages.length
             && messages[i + group.length].media_group_id === album) group.push(messages[i + group.length]);
      i += group.length;
      items.push({group});
    }
    while (j < lines.length) items.push({line: lines[j++]});
    return items;
  }

  function draw() {
    const wanted = [];
    let day = null;
    for (const item of ordered()) {
      if (item.line) {
        const e = item.line;
        const status = e.kind === "click" ? clickStatus(e) : null;
        const label = e.kind === "click" ? buttonLabel(byId.get(e.message_id), e.update.callback_query.data) : "";
        wanted.push({key: `e${e.event_id}`, signature: JSON.stringify([status, label]),
          build: () => line(e)});
        continue;
      }
      const group = item.group;
      if (dayOf(group[0].date) !== day) {
        day = dayOf(group[0].date);
        wanted.push({key: `day ${day}`, signature: day, build: () => daySeparator(group[0].date)});
      }
      const quoted = group[0].reply_to_message_id;
      const busy = [...pending.values()].filter((p) => p.message_id === group[0].message_id)
        .map((p) => p.data);
      wanted.push({key: `m${group[0].message_id}`,
        signature: JSON.stringify([group, quoted ? snippet(byId.get(quoted)) : null, busy]),
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
    markSelected();
  }

  function keepAtBottom() {
    if (scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 400) {
      scroller.scrollTop = scroller.scrollHeight;
    }
  }

  // -- older messages ------------------------------------------------------------

  async function loadOlder() {
    if (loadingOlder || !hasMore || !byId.size) return;
    loadingOlder = true;
    const oldest = Math.min(...byId.keys());
    try {
      const page = await Sandbox.getJSON(url("historyUrl", {before_message_id: oldest}));
      const height = scroller.scrollHeight, top = scroller.scrollTop;
      for (const m of page.messages) if (!byId.has(m.message_id)) byId.set(m.message_id, m);
      for (const e of page.events) events.set(e.event_id, e);
      for (const a of [...page.callback_answers, ...page.click_answers]) answers.set(a.callback_query_id, a);
      hasMore = page.has_more;
      draw();
      $("history-note").hidden = !hasMore;
      scroller.scrollTop = top + (scroller.scrollHeight - height);   // stay where the reader is
    } catch (e) {
      Sandbox.toast(Sandbox.describe(e), "error");
      return;
    } finally {
      loadingOlder = false;
    }
    maybeLoadOlder();   // a short page may not fill the view yet
  }

  function maybeLoadOlder() {
    if (hasMore && scroller.scrollTop < 300) loadOlder();
  }

  // -- reading -------------------------------------------------------------------

  async function markRead() {
    if (document.hidden || scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight > 120) return;
    const newest = Math.max(0, ...[...byId.values()].filter((m) => m.from_bot).map((m) => m.message_id));
    if (newest <= readUpTo) return;
    readUpTo = newest;
    try {
      await Sandbox.post(root.dataset.readUrl, {message_id: newest});
    } catch (e) {
      readUpTo = 0;   // tried again at the next change
    }
  }

  // -- clicks and the bot's answers --------------------------------------------

  function isPending(m, data) {
    return [...pending.values()].some((p) => p.message_id === m.message_id && p.data === data);
  }

  async function press(m, data) {
    if (isPending(m, data)) return;
    const waiting = {message_id: m.message_id, data, since: now};
    const key = `clicking ${m.message_id} ${data}`;
    pending.set(key, waiting);
    draw();
    try {
      const result = await Sandbox.api("userClickButton", {...ids, message_id: m.message_id, callback_data: data});
      pending.delete(key);
      if (!answers.has(result.callback_query_id)) pending.set(result.callback_query_id, waiting);
      poll();
    } catch (e) {
      pending.delete(key);
      Sandbox.toast(Sandbox.describe(e), "error");
    }
    draw();
  }

  function clickStatus(event) {
    const answer = answers.get(event.callback_query_id);
    if (answer) {
      return {state: "answered", text: answer.text ? `The bot answered: ${answer.text}` : "The bot answered"};
    }
    if (now - event.date >= ANSWER_WAIT_SECONDS) return {state: "silent", text: "The bot did not respond"};
    return {state: "pending", text: "Waiting for the bot\u2026"};
  }

  // A click the bot has not answered in 15 s of the service's clock stops
  // spinning; the advance control of the testing tools moves that clock too.
  function expireClicks() {
    let changed = false;
    for (const [id, waiting] of pending) {
      if (id.startsWith("clicking ") || now - waiting.since < ANSWER_WAIT_SECONDS) continue;
      pending.delete(id);
      changed = true;
      const label = buttonLabel(byId.get(waiting.message_id), waiting.data);
      Sandbox.toast(`The bot did not respond to \u201c${label}\u201d`, "error silent");
    }
    const overdue = [...events.values()].some((e) => e.kind === "click"
      && !answers.has(e.callback_query_id) && now - e.date >= ANSWER_WAIT_SECONDS
      && drawn.get(`e${e.event_id}`) && drawn.get(`e${e.event_id}`).element.dataset.status === "pending");
    if (changed || overdue) draw();
  }

  // The bot's answers to clicks: a toast, or an alert when it asked for one.
  // Answers given before the page opened are not shown again.
  function announce(given) {
    for (const answer of given) {
      answers.set(answer.callback_query_id, answer);
      const waited = pending.delete(answer.callback_query_id);
      if (!waited && firstView) continue;
      if (!answer.text) continue;
      if (answer.show_alert) Sandbox.dialog({title: botName, text: answer.text});
      else Sandbox.toast(answer.text, "answer");
    }
  }

  // -- the inspector -------------------------------------------------------------

  function inspect(selection) {
    selected = selection;
    markSelected();
    openDevPane(true);
    Inspector.show(selection);
  }

  function markSelected() {
    for (const node of list.querySelectorAll(".selected")) node.classList.remove("selected");
    if (!selected) return;
    const node = list.querySelector(`[data-inspect="${selected.kind}:${selected.id}"]`);
    if (node) node.classList.add("selected");
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

  async function changeMembership(method, extra = {}) {
    try {
      await Sandbox.api(method, {...ids, ...extra});
      $("start-param").value = "";
      say("");
      toBottom = true;
      poll();
    } catch (e) {
      Sandbox.toast(Sandbox.describe(e), "error");
    }
  }

  // -- the developer pane ------------------------------------------------------------

  const messenger = document.getElementById("messenger");
  function openDevPane(open) {
    messenger.classList.toggle("dev-closed", !open);
    $("dev-toggle").setAttribute("aria-expanded", String(open));
  }
  $("dev-toggle").addEventListener("click", () => openDevPane(messenger.classList.contains("dev-closed")));
  $("dev-close").addEventListener("click", () => openDevPane(false));
  // Narrow screens start with the conversation alone.
  if (window.matchMedia("(max-width: 1100px)").matches) openDevPane(false);

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
    changeMembership("userStart", parameter && membership === "not started" ? {start_parameter: parameter} : {});
  });
  $("btn-stop").addEventListener("click", () => changeMembership("userStop"));
  $("btn-block").addEventListener("click", () => changeMembership("userBlock"));
  scroller.addEventListener("scroll", () => { maybeLoadOlder(); markRead(); }, {passive: true});
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
  ChatView.use({botName, mediaUrl, byId, onReply: startReply, onPress: press, isPending,
    onInspect: inspect, clickStatus, onMediaSized: keepAtBottom});
  Inspector.use({chatId: () => null, byId, inspectUrl: (params) => url("inspectUrl", params),
    botName, onClose: () => { selected = null; markSelected(); }});
  setMembership(membership);
  poll();
})();
