// Replay and one update's path. Hooks onto what the other scripts draw,
// without changing them: the inspector's selection (the path of the update
// it shows: the action, its delivery by getUpdates or webhook and how long
// after, the bot's reaction; from a bot's message back to the update it
// answered), the call list (a Path button; with the testing tools, Re-send)
// and the webhook attempts (the request and response when the delivery
// records keep them; with the testing tools, Redeliver). Redeliver and
// Re-send exist only with BOTSVC_TEST_TOOLS=1, as their methods do. One file
// of some 300 lines for the three hooks: they share the buttons, the toasts
// and the path's drawing (a call's Path button draws into the inspector).
"use strict";

(() => {
  const el = Sandbox.el;
  const $ = (id) => document.getElementById(id);
  const pulse = $("pulse");
  const chatBox = $("chat");
  const inspector = $("inspector-body");
  const botId = Number((pulse || chatBox || {dataset: {}}).dataset.botId);
  const testTools = !!pulse && pulse.dataset.testTools === "1";
  const pathUrl = chatBox ? chatBox.dataset.inspectUrl.replace(/\/inspect$/, "/path") : null;
  const clockTime = (unix) => new Date(unix * 1000).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", second: "2-digit"});
  const ACTIONS = {start: "You started the bot", restart: "You restarted the bot",
    unblock: "You unblocked the bot", stop: "You stopped the bot", block: "You blocked the bot",
    message: "You sent a message", click: "You clicked a button"};

  function button(label, className, onClick) {
    const b = el("button", `btn small-btn ${className}`, label);
    b.type = "button";
    b.addEventListener("click", (event) => { event.stopPropagation(); onClick(b); });
    return b;
  }

  async function busy(b, work) {
    b.disabled = true;
    try { await work(); } catch (e) { Sandbox.toast(Sandbox.describe(e), "error"); } finally { b.disabled = false; }
  }

  // -- replay ------------------------------------------------------------------------

  async function redeliver(updateId, then) {
    const replay = await Sandbox.api("redeliverUpdate", {bot_id: botId, update_id: updateId});
    Sandbox.toast(`Update ${updateId} queued again as update ${replay.update_id}`);
    if (then) then(replay);
  }

  async function resend(callId) {
    const answer = await Sandbox.api("resendCall", {bot_id: botId, call_id: callId});
    Sandbox.toast(`Re-sent ${answer.method}: ${answer.ok ? `HTTP ${answer.http_status}`
      : `${answer.http_status} ${answer.error_code}`}`, answer.ok ? "info" : "error");
  }

  // -- the path of an update -------------------------------------------------------------

  // The inspector redraws its selection as the chat changes (each message of
  // a chatty bot): a path asked again within REUSE_MS is the one just read,
  // since each read walks the bot's whole call log. A replay asks afresh.
  const REUSE_MS = 2000;
  const recent = new Map();   // query -> {at, answer}

  async function fetchPath(query, fresh = false) {
    const key = JSON.stringify(query);
    const kept = recent.get(key);
    if (!fresh && kept && performance.now() - kept.at < REUSE_MS) return kept.answer;
    const url = new URL(pathUrl, location.href);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    const answer = await Sandbox.getJSON(url);
    recent.clear();
    recent.set(key, {at: performance.now(), answer});
    return answer;
  }

  function showCallInFeed(callId) {
    const item = document.querySelector(`#feed li[data-call-id="${callId}"]`);
    if (!item) { Sandbox.toast("That call is no longer in the list (see the bot's page)"); return; }
    item.scrollIntoView({block: "nearest"});
    item.classList.add("path-focus");
    setTimeout(() => item.classList.remove("path-focus"), 2000);
  }

  function reactionItem(call, selected) {
    const item = el("li", `path-call${call.ok ? "" : " failed"}${call.call_id === selected ? " selected" : ""}`);
    item.dataset.callId = call.call_id;
    const line = el("button", "path-call-line");
    line.type = "button";
    line.append(el("time", null, clockTime(call.date)), " ", el("b", null, call.method), " \u00b7 ",
      call.ok ? `HTTP ${call.http_status}` : `${call.http_status} ${call.error_code}`,
      call.call_id === selected ? " \u00b7 this call" : "");
    line.addEventListener("click", () => {
      const open = item.querySelector(".json");
      if (open) { open.remove(); return; }
      item.append(JsonView.render(call));
    });
    item.append(line, button("In the list", "path-locate", () => showCallInFeed(call.call_id)));
    return item;
  }

  function deliveryStep(path) {
    const d = path.delivery;
    if (!d) {
      return el("li", "path-step muted", path.kept_calls ? "Not delivered yet (pending), or delivered before what the call log keeps"
        : "No delivery seen: the call log keeps nothing of this bot (BOTSVC_CALL_LOG=0?)");
    }
    const after = d.after_seconds !== undefined ? ` \u00b7 ${d.after_seconds} s after` : "";
    const step = el("li", "path-step");
    step.dataset.by = d.by;
    if (d.by === "getUpdates") {
      step.append(`Delivered by getUpdates (call ${d.call_id}) at ${clockTime(d.date)}${after} `,
        button("In the list", "path-locate", () => showCallInFeed(d.call_id)));
    } else {
      const tries = d.attempts.map((a) => `attempt ${a.attempt}: ${a.error !== undefined ? a.error : `HTTP ${a.http_status}`}`).join("; ");
      step.append(d.date !== null ? `Delivered by webhook at ${clockTime(d.date)}${after} (${tries})`
        : `Webhook attempts, none succeeded yet (${tries})`);
    }
    return step;
  }

  function pathSection(path, holder) {
    const box = el("section", "inspect-section path-section");
    box.dataset.updateId = path.update_id;
    box.append(el("h4", null, path.replay_of ? `The path of update ${path.update_id}, a replay of ${path.replay_of}`
      : `The path of update ${path.update_id}`));
    const steps = el("ol", "path-steps");
    steps.append(el("li", "path-step", path.action
      ? `${ACTIONS[path.action.kind] || path.action.kind} at ${clockTime(path.action.date)}`
      : `Queued again by Redeliver at ${clockTime(path.queued_at)}`));
    steps.append(deliveryStep(path));
    const reaction = el("li", "path-step");
    reaction.append(path.delivery && path.delivery.date !== null
      ? `The bot's reaction: ${path.reactions.length}${path.reactions_cut ? "+" : ""} call${path.reactions.length === 1 ? "" : "s"} naming this chat`
      : "The bot's reaction: none yet");
    const list = el("ol", "path-calls");
    list.append(...path.reactions.map((call) => reactionItem(call, path.call_id)));
    reaction.append(list);
    steps.append(reaction);
    box.append(steps);
    if (path.replays.length) {
      const replays = el("p", "path-replays small", "Replays: ");
      for (const r of path.replays) {
        replays.append(button(`${r.update_id}${r.delivered ? "" : " (pending)"}`, "path-replay",
          () => follow({update_id: r.update_id}, holder)), " ");
      }
      box.append(replays);
    }
    if (testTools) {
      const actions = el("div", "inspect-actions");
      actions.append(button("Redeliver", "path-redeliver", (b) => busy(b,
        () => redeliver(path.update_id, () => follow({update_id: path.update_id}, holder, true)))));
      box.append(actions);
    }
    return box;
  }

  // The path for ``query`` into ``holder`` (in place of the one it shows).
  async function showPath(query, holder, fresh = false) {
    const token = holder.dataset.pathFor = JSON.stringify(query);
    const selection = holder.dataset.selection;
    let section;
    try {
      section = pathSection(await fetchPath(query, fresh), holder);
    } catch (e) {
      section = el("p", "muted small path-section", e.code === "INVALID_PARAMETER"
        ? "No update goes with this in what is kept (the journal, the call log)." : Sandbox.describe(e));
    }
    // Asked for something else meanwhile, or the inspector shows another selection.
    if (holder.dataset.pathFor !== token || holder.dataset.selection !== selection) return;
    for (const old of holder.querySelectorAll(":scope > .path-section")) old.remove();
    holder.append(section);
  }

  // A path followed from the one shown (a replay's): kept while the
  // inspector shows the same selection, which it redraws as the chat changes.
  let followed = {selection: null, query: null};

  function follow(query, holder, fresh = false) {
    followed = {selection: holder.dataset.selection, query};
    showPath(query, holder, fresh);
  }

  // The inspector drew a selection: add its path below.
  function onInspector() {
    const selection = inspector.dataset.selection || "";
    if (selection === inspector.dataset.pathDrawn && inspector.querySelector(".path-section")) return;
    inspector.dataset.pathDrawn = selection;
    const [kind, id] = selection.split(":");
    if (followed.selection === selection && followed.query) showPath(followed.query, inspector);
    else if (kind === "event") showPath({event_id: id}, inspector);
    else if (kind === "message") showPath({message_id: id}, inspector);
    else if (kind !== "call") delete inspector.dataset.pathFor;
  }

  // From the call list: the update a call answered, in the inspector.
  function showCallPath(callId) {
    const head = el("header", "inspect-head");
    head.append(el("b", "inspect-title", `Call ${callId}: the update it answered`));
    inspector.replaceChildren(head);
    inspector.dataset.selection = inspector.dataset.pathDrawn = `call:${callId}`;
    const hint = $("inspector-hint");
    if (hint) hint.hidden = true;
    inspector.scrollIntoView({block: "nearest"});
    showPath({call_id: callId}, inspector);
  }

  // -- the call list and the webhook attempts ------------------------------------------------

  let replayMarks = new Map();   // update_id -> replay_of, of the bot's kept replays

  async function markReplays(items) {
    if (!items.length || !pulse) return;
    try {
      const url = new URL(pulse.dataset.pulseUrl.replace(/\/pulse$/, "/replays"), location.href);
      const answer = await Sandbox.getJSON(url);
      replayMarks = new Map(answer.replays.map((r) => [r.update_id, r.replay_of]));
    } catch (e) {
      return;
    }
    for (const item of items) {
      const ids = item.dataset.updateIds.split(" ").map(Number).filter((u) => replayMarks.has(u));
      if (ids.length && !item.querySelector(".replay-pill")) {
        item.querySelector(".call-line").append(el("span", "pill replay-pill",
          ids.map((u) => `${u}: replay of ${replayMarks.get(u)}`).join(", ")));
      }
    }
  }

  function decorateCalls() {
    const fresh = [...document.querySelectorAll("#feed > li.call:not([data-replay])")];
    for (const item of fresh) {
      item.dataset.replay = "1";
      const row = el("div", "replay-row");
      const callId = Number(item.dataset.callId);
      if (inspector) row.append(button("Path", "call-path", () => showCallPath(callId)));
      if (testTools && item.dataset.method !== "getUpdates") {
        row.append(button("Re-send", "call-resend", (b) => busy(b, () => resend(callId))));
      }
      if (row.childElementCount) item.append(row);
    }
    const polls = fresh.filter((item) => item.dataset.updateIds);
    if (polls.length) markReplays(polls);
  }

  const details = new Map();   // "update:attempt" -> the record with its request and response
  const opened = new Set();

  function exchange(title, part) {
    const box = el("div", "exchange");
    box.append(el("b", null, title), JsonView.render(part.headers || {}));
    const body = el("pre", "exchange-body", part.body === undefined ? "" : String(part.body));
    box.append(body);
    if (part.body_truncated) box.append(el("p", "muted small", "The body is cut: only its start is kept."));
    return box;
  }

  function detailView(found) {
    const box = el("div", "attempt-detail");
    const record = found.attempt;
    if (!found.detail_kept) {
      box.append(el("p", "muted small", "The delivery records keep no request or response here."));
    } else if (!record) {
      box.append(el("p", "muted small", "This attempt is no longer among the kept records."));
    } else {
      if (record.request) box.append(exchange("Request", record.request));
      box.append(record.response ? exchange("Response", record.response)
        : el("p", "muted small", "No response: the attempt failed before one came."));
    }
    return box;
  }

  async function loadDetail(key) {
    if (details.has(key)) return;
    const [updateId, attempt] = key.split(":").map(Number);
    const url = new URL(pulse.dataset.pulseUrl.replace(/\/pulse$/, `/attempts/${updateId}/${attempt}`),
      location.href);
    details.set(key, await Sandbox.getJSON(url));
  }

  function decorateAttempts() {
    for (const item of document.querySelectorAll("#deliveries > li:not([data-replay])")) {
      item.dataset.replay = "1";
      const key = `${item.dataset.updateId}:${item.dataset.attempt}`;
      const row = el("span", "replay-row");
      row.append(button(opened.has(key) ? "Hide" : "Request and response", "attempt-detail-toggle", (b) => busy(b, async () => {
        if (opened.has(key)) opened.delete(key); else { await loadDetail(key); opened.add(key); }
        b.textContent = opened.has(key) ? "Hide" : "Request and response";
        const shown = item.querySelector(".attempt-detail");
        if (shown) shown.remove();
        if (opened.has(key)) item.append(detailView(details.get(key)));
      })));
      if (testTools) {
        row.append(button("Redeliver", "attempt-redeliver", (b) => busy(b, () => redeliver(Number(item.dataset.updateId)))));
      }
      item.append(" ", row);
      if (opened.has(key) && details.has(key)) item.append(detailView(details.get(key)));
    }
  }

  function watch(node, then, options = {childList: true}) {
    if (!node) return;
    new MutationObserver(then).observe(node, options);
    then();
  }

  document.addEventListener("DOMContentLoaded", () => {
    watch($("feed"), decorateCalls);
    watch($("deliveries"), decorateAttempts);
    if (inspector && pathUrl) {
      watch(inspector, onInspector, {attributes: true, attributeFilter: ["data-selection"], childList: true});
    }
  });
})();
