// How one chat's messages look: bubbles, replies, cards, media, keyboards,
// and the lines of what the user did (Start, Stop, Block, a click). Pure
// drawing: every text a bot or user sent is set with textContent, never
// parsed as markup. What a click does, and where media come from, is the
// caller's (chat.js), given in ``ctx``: {botName, byId, mediaUrl(message),
// onReply(message), onPress(message, callbackData), isPending(message,
// callbackData), onInspect(selection), clickStatus(event), onMediaSized()}.
"use strict";

const ChatView = (() => {
  const CARD_TYPES = {info: "Info", product: "Product", status: "Status", receipt: "Receipt"};

  let ctx = null;
  const use = (context) => { ctx = context; };

  const el = Sandbox.el;

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

  function daySeparator(unix) {
    const date = new Date(unix * 1000);
    const today = Sandbox.serviceNow();
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
    row.dataset.inspect = `message:${m.message_id}`;
    const column = el("div", "column");
    const box = el("div", `bubble type-${m.type}${m.media && !m.caption ? " bare" : ""}`
      + `${group.length === 1 && smallMedia(m.media) ? " small-media" : ""}`);
    if (m.reply_to_message_id) box.append(quote(m.reply_to_message_id));
    if (group.length > 1) box.append(album(group));
    else if (m.media) box.append(mediaView(m));
    if (m.card) box.append(cardView(m.card));
    const text = m.text !== undefined ? m.text : group.map((g) => g.caption).filter(Boolean).join("\n\n");
    if (text) {
      // Arabic or Hebrew first: laid out right to left, as a messenger does.
      const line = el("div", "text", text);
      line.dir = "auto";
      box.append(line);
    }
    box.append(metaLine(group));
    const reply = el("button", "reply-btn", "\u21a9");
    reply.type = "button";
    reply.title = "Reply";
    reply.setAttribute("aria-label", "Reply");
    reply.addEventListener("click", () => ctx.onReply(m));
    // The bubble opens the inspector; what is interactive inside it (links,
    // players, buttons, a quote) keeps its own click.
    box.addEventListener("click", (event) => {
      if (event.target.closest("a, button, audio, video, input")) return;
      ctx.onInspect({kind: "message", id: m.message_id});
    });
    box.addEventListener("keydown", (event) => {
      if (event.target === box && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        ctx.onInspect({kind: "message", id: m.message_id});
      }
    });
    box.tabIndex = 0;
    box.title = "Click to inspect";
    column.append(box);
    if (m.reply_markup) {
      column.classList.add("has-keyboard");
      column.append(keyboard(m));
    }
    row.append(column, reply);
    return row;
  }

  // -- lines: what the user did ------------------------------------------------

  const LINE_TEXT = {restart: "You restarted the bot", unblock: "You unblocked the bot",
    stop: "You stopped the bot", block: "You blocked the bot"};

  function buttonLabel(message, data) {
    for (const row of (message && message.reply_markup ? message.reply_markup.inline_keyboard : [])) {
      for (const spec of row) if (spec.callback_data === data) return spec.text;
    }
    return data;
  }

  function lineText(event) {
    if (event.kind === "start") {
      const membership = event.update && event.update.membership;
      const parameter = membership && membership.start_parameter;
      return parameter ? `You started the bot (start parameter \u201c${parameter}\u201d)`
        : "You started the bot";
    }
    if (event.kind === "click") {
      const data = event.update.callback_query.data;
      return `You pressed \u201c${buttonLabel(ctx.byId.get(event.message_id), data)}\u201d`;
    }
    return LINE_TEXT[event.kind] || event.kind;
  }

  function line(event) {
    const row = el("div", `line line-${event.kind}`);
    row.id = `event-${event.event_id}`;
    row.dataset.inspect = `event:${event.event_id}`;
    const button = el("button", "line-text", lineText(event));
    button.type = "button";
    button.title = event.update ? "Click to see the update your bot received" : "Click to inspect";
    button.addEventListener("click", () => ctx.onInspect({kind: "event", id: event.event_id}));
    row.append(button);
    if (event.kind === "click") {
      const status = ctx.clickStatus(event);
      row.dataset.status = status.state;
      row.append(el("span", `line-status ${status.state}`, status.text));
    }
    return row;
  }

  function quote(messageId) {
    const target = ctx.byId.get(messageId);
    const box = el("button", "quote");
    box.type = "button";
    box.append(el("b", null, target ? (target.from_bot ? ctx.botName : "You") : ""),
      el("span", null, snippet(target)));
    box.addEventListener("click", () => {
      const original = document.getElementById(`msg-${messageId}`);
      if (!original) return;
      original.scrollIntoView({block: "center", behavior: "smooth"});
      original.classList.add("flash");
      setTimeout(() => original.classList.remove("flash"), 1200);
    });
    return box;
  }

  // A picture too small to carry the time stamp over it (it would hide the
  // picture): the stamp goes below it instead.
  const SMALL_MEDIA = {width: 160, height: 72};
  const smallMedia = (media) => !!media && media.width > 0 && media.height > 0
    && (media.width < SMALL_MEDIA.width || media.height < SMALL_MEDIA.height);

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
    node.addEventListener(node.tagName === "IMG" ? "load" : "loadedmetadata", ctx.onMediaSized);
    return node;
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
    player.src = ctx.mediaUrl(m);
    return sized(player, m.media);
  }

  function mediaView(m) {
    const media = m.media;
    if (m.type === "photo") {
      const img = el("img", "photo");
      img.alt = m.caption || "Photo";
      img.src = ctx.mediaUrl(m);
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
      player.src = ctx.mediaUrl(m);
      box.append(label, player);
      return box;
    }
    const link = el("a", "document");
    link.href = ctx.mediaUrl(m);
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

  // -- inline keyboards --------------------------------------------------------

  function isHttps(url) {
    try { return new URL(url).protocol === "https:"; } catch (e) { return false; }
  }

  // A button's text in its own box, so that a long one ends in an ellipsis
  // (a flex container does not ellipsize its text).
  const label = (text) => el("span", "kb-label", text);

  function keyButton(m, spec) {
    if (spec.url !== undefined) {
      if (!isHttps(spec.url)) {
        const dead = el("span", "kb-btn disabled");
        dead.append(label(spec.text));
        dead.title = "Not an https link: not opened";
        return dead;
      }
      const link = el("a", "kb-btn link");
      link.append(label(spec.text));
      link.href = spec.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      link.title = spec.url;
      return link;
    }
    const button = el("button", "kb-btn");
    button.append(label(spec.text));
    button.type = "button";
    if (spec.copy_text !== undefined) {
      button.classList.add("copy");
      button.addEventListener("click", () => Sandbox.copy(spec.copy_text));
    } else if (spec.callback_data !== undefined) {
      if (ctx.isPending(m, spec.callback_data)) {
        button.classList.add("pending");
        button.setAttribute("aria-busy", "true");
      }
      button.addEventListener("click", () => ctx.onPress(m, spec.callback_data));
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

  return {use, el, snippet, dayOf, daySeparator, bubble, line, lineText, buttonLabel, size};
})();
