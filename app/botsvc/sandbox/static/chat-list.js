// The sidebar's chat list, live: each chat's last message, its state and
// the unread count, asked every 2 s as "anything new since the version I
// hold?". Every text is set with textContent.
"use strict";

(() => {
  const list = document.getElementById("chat-list");
  if (!list) return;
  const POLL_MS = 2000, HIDDEN_POLL_MS = 10000;
  let version = null, day = null;

  const el = Sandbox.el;

  function entryFor(botId, name) {
    let item = list.querySelector(`li[data-bot-id="${botId}"]`);
    if (item) return item;
    item = el("li");
    item.dataset.botId = botId;
    const link = el("a");
    link.href = list.dataset.chatUrl.replace(/\/0$/, `/${botId}`);
    const avatar = el("span", `avatar av${botId % 8}`, name.slice(0, 1).toUpperCase());
    avatar.setAttribute("aria-hidden", "true");
    const entry = el("span", "entry");
    const top = el("span", "entry-top");
    top.append(el("b", "entry-name", name), el("time", "entry-time"));
    const bottom = el("span", "entry-bottom");
    const unread = el("span", "unread");
    unread.hidden = true;
    const preview = el("span", "entry-preview");
    preview.dir = "auto";
    bottom.append(preview, unread);
    entry.append(top, bottom);
    link.append(avatar, entry);
    item.append(link);
    for (const empty of list.querySelectorAll("li:not([data-bot-id])")) empty.remove();
    list.append(item);
    return item;
  }

  function show(entries) {
    let unreadTotal = 0;
    for (const e of entries) {
      const item = entryFor(e.bot_id, e.display_name);
      const preview = item.querySelector(".entry-preview");
      preview.replaceChildren();
      if (e.state !== "active") preview.append(el("em", null, e.state), " ");
      preview.append(e.preview);
      const time = item.querySelector(".entry-time");
      if (e.date === null) {
        time.textContent = "";
        delete time.dataset.unix;
      } else if (time.dataset.unix !== String(e.date)) {
        time.dataset.unix = e.date;
        time.dataset.format = "short";
        Sandbox.localTimes(item);
      }
      const unread = item.querySelector(".unread");
      const open = item.querySelector("a[aria-current]");
      unread.hidden = !e.unread || Boolean(open);
      unread.textContent = e.unread >= 100 ? "99+" : String(e.unread);
      if (!open) unreadTotal += e.unread;
    }
    // The tab tells of unread messages while the person looks elsewhere.
    Sandbox.titleMark("unread", unreadTotal ? `(${unreadTotal > 99 ? "99+" : unreadTotal})` : "");
  }

  async function poll() {
    let delay = document.hidden ? HIDDEN_POLL_MS : POLL_MS;
    try {
      const url = new URL(list.dataset.listUrl, location.href);
      if (version !== null) url.searchParams.set("since", version);
      const answer = await Sandbox.getJSON(url);
      if (answer.changed) show(answer.entries);
      version = answer.version;
      // The service's day moved on (midnight, or advanceClock): "today"'s
      // times become dates.
      const today = Sandbox.serviceNow().toDateString();
      if (day !== null && day !== today) Sandbox.localTimes(list);
      day = today;
    } catch (e) {
      delay = 5000;
    }
    setTimeout(poll, delay);
  }

  poll();
})();
