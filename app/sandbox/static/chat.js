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
  const CARD_TYPES = {info: "Info", product: "Product", status: "Status", receipt: "Receipt"};

  let version = null, firstView = true, replyTo = null, toBottom = false;
  let byId = new Map();                   // message_id -> message, as last shown
  const drawn = new Map();                // item key -> {signature, element}
  const seenAnswers = new Set();

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  const mediaUrl = (fileId) => root.dataset.mediaUrl.replace(/_$/, encodeURIComponent(fileId));
  const timeOf = (unix) => new Date(unix * 1000).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit"});
  const dayOf = (unix) => new Date(unix * 1000).toDateString();

  function size(bytes) {
    const units = ["B", "KB", "MB", "GB"];
    let value = bytes, unit = 0;
    while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
    return `${unit ? value.toFixed(1) : value} ${units[unit]}`;
  }

  function duration(seconds) {
    if (seconds === undefined) return "";
    const s = Math.round(seconds);
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
  }

  // What a message is, in one line (reply quotes, the reply bar).
  function snippet(m) {
    if (!m) return "Deleted message";
    if (m.text) return m.text;
    if (m.card) return m.card.title;
    const kind = {photo: "Photo", video: "Video", animation: "GIF", audio: "Audio",
      voice: "Voice message", document: m.media ? m.media.file_name : "File"}[m.type] || m.type;
    return m.caption ? `${kind}: ${m.caption}` : kind;
  }

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

  function daySeparator(unix) {
    const date = new Date(unix * 1000);
    const today = new Date();
    const yesterday = new Date(today.getTime() - 86400000);
    const label = date.toDateString() === today.toDateString() ? "Today"
      : date.toDateString() === yesterday.toDateString() ? "Yesterday"
        : date.toLocaleDateString([], {dateStyle: "long"});
    const row = el("div", "day");
    row.append(el("span", null, label));
    return row;
  }

  function bubble(group) {
    const m = group[0];
    const row = el("div", `row ${m.from_bot ? "in" : "out"}`);
    row.id = `msg-${m.message_id}`;
    row.dataset.messageId = m.message_id;
    const column = el("div", "column");
    const box = el("div", `bubble type-${m.type}${m.media && !m.caption ? " bare" : ""}`);
    if (m.reply_to_message_id) box.append(quote(m.reply_to_message_id));
    if (group.length > 1) box.append(album(group));
    else if (m.media) box.append(mediaView(m));
    if (m.card) box.append(cardView(m.card));
    const text = m.text !== undefined ? m.text : group.map((g) => g.caption).filter(Boolean).join("\n\n");
    if (text) box.append(el("div", "text", text));
    box.append(metaLine(group));
    const reply = el("button", "reply-btn", "\u21a9");
    reply.type = "button";
    reply.title = "Reply";
    reply.setAttribute("aria-label", "Reply");
    reply.addEventListener("click", () => startReply(m));
    column.append(box);
    if (m.reply_markup) {
      column.classList.add("has-keyboard");
      column.append(keyboard(m));
    }
    row.append(column, reply);
    return row;
  }

  function quote(messageId) {
    const target = byId.get(messageId);
    const box = el("button", "quote");
    box.type = "button";
    box.append(el("b", null, target ? (target.from_bot ? botName : "You") : ""),
      el("span", null, snippet(target)));
    box.addEventListener("click", () => {
      const original = $(`msg-${messageId}`);
      if (!original) return;
      original.scrollIntoView({block: "center", behavior: "smooth"});
      original.classList.add("flash");
      setTimeout(() => original.classList.remove("flash"), 1200);
    });
    return box;
  }

  function metaLine(group) {
    const meta = el("span", "meta");
    if (group.some((g) => g.edit_date)) meta.append(el("span", "edited", "edited"));
    const time = el("time", null, timeOf(group[0].date));
    time.dateTime = new Date(group[0].date * 1000).toISOString();
    time.title = new Date(group[0].date * 1000).toLocaleString();
    meta.append(time);
    return meta;
  }

  function sized(node, media) {
    if (media.width && media.height) { node.width = media.width; node.height = media.height; }
    node.addEventListener(node.tagName === "IMG" ? "load" : "loadedmetadata", keepAtBottom);
    return node;
  }

  function keepAtBottom() {
    if (scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 400) {
      scroller.scrollTop = scroller.scrollHeight;
    }
  }

  function video(m, className, loop) {
    const player = el("video", className);
    player.preload = "metadata";
    player.playsInline = true;
    if (loop) {
      // An animation plays like a GIF: by itself, silent, again and again.
      player.muted = player.defaultMuted = player.loop = player.autoplay = true;
    } else {
      player.controls = true;
    }
    player.src = mediaUrl(m.media.file_id);
    return sized(player, m.media);
  }

  function mediaView(m) {
    const media = m.media;
    if (m.type === "photo") {
      const img = el("img", "photo");
      img.alt = m.caption || "Photo";
      img.src = mediaUrl(media.file_id);
      return sized(img, media);
    }
    if (m.type === "video" || m.type === "animation") return video(m, m.type, m.type === "animation");
    if (m.type === "audio" || m.type === "voice") {
      const box = el("div", `audio ${m.type}`);
      const label = el("div", "audio-label");
      label.append(el("span", "audio-icon"),
        el("span", "audio-name", m.type === "voice" ? "Voice message" : media.file_name),
        el("span", "muted", duration(media.duration)));
      const player = el("audio");
      player.controls = true;
      player.preload = "metadata";
      player.src = mediaUrl(media.file_id);
      box.append(label, player);
      return box;
    }
    const link = el("a", "document");
    link.href = mediaUrl(media.file_id);
    link.download = media.file_name || "";
    const info = el("span", "document-info");
    info.append(el("b", null, media.file_name), el("span", "muted", `${size(media.file_size)} · ${media.mime_type}`));
    link.append(el("span", "document-icon"), info);
    return link;
  }

  function album(group) {
    const grid = el("div", `album n${Math.min(group.length, 4)}`);
    for (const item of group) {
      grid.append(item.type === "photo" ? mediaView({...item, caption: undefined}) : video(item, "video", false));
    }
    return grid;
  }

  function cardView(card) {
    const type = Object.hasOwn(CARD_TYPES, card.type) ? card.type : "info";
    const box = el("div", `card card-${type}`);
    box.append(el("span", "card-type", CARD_TYPES[type]), el("div", "card-title", card.title));
    if (card.subtitle) box.append(el("div", "card-subtitle", card.subtitle));
    if (card.text) box.append(el("div", "card-text", card.text));
    if (card.fields && card.fields.length) {
      const fields = el("dl", "card-fields");
      for (const field of card.fields) {
        const pair = el("div");
        pair.append(el("dt", null, field.label), el("dd", null, field.value));
        fields.append(pair);
      }
      box.append(fields);
    }
    return box;
  }

  // -- keyboards and callback answers -----------------------------------------

  function isHttps(url) {
    try { return new URL(url).protocol === "https:"; } catch (e) { return false; }
  }

  function keyButton(m, spec) {
    if (spec.url !== undefined) {
      if (!isHttps(spec.url)) {
        const dead = el("span", "kb-btn disabled", spec.text);
        dead.title = "Not an https link: not opened";
        return dead;
      }
      const link = el("a", "kb-btn link", spec.text);
      link.href = spec.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      link.title = spec.url;
      return link;
    }
    const button = el("button", "kb-btn", spec.text);
    button.type = "button";
    if (spec.copy_text !== undefined) {
      button.classList.add("copy");
      button.addEventListener("click", () => Sandbox.copy(spec.copy_text));
    } else if (spec.callback_data !== undefined) {
      button.addEventListener("click", () => press(m, spec.callback_data, button));
    } else {
      button.disabled = true;
    }
    return button;
  }

  function keyboard(m) {
    const board = el("div", "keyboard");
    for (const specs of m.reply_markup.inline_keyboard) {
      const row = el("div", "kb-row");
      for (const spec of specs) row.append(keyButton(m, spec));
      board.append(row);
    }
    return board;
  }

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
  poll();
})();
