// The bot's calls, as a browser's Network panel lists requests: every one,
// newest first (the pulse reads back to the newest held, so a burst leaves
// no gap), older ones page by page through getBotCalls (its cursor);
// getBotCalls' own filters (method, failures, and chat, time and text where
// it declares them); Save the list (a file of every kept call the filters
// select, as getBotCalls gives them); Pause (new calls held, shown on resume) and Clear view
// (the list, never the log). Marks on a row: injected by the testing tools,
// cut (too large to keep whole), and the service clock running ahead. The
// pulse (pulse.js) asks and hands each answer here (take).
"use strict";

const CallList = (() => {
  const root = document.getElementById("pulse");
  if (!root) return null;
  const $ = (id) => document.getElementById(id);
  const el = Sandbox.el;
  const botId = Number(root.dataset.botId);
  // Rows the list holds at most (the log keeps 1,000 a bot; older pages add).
  const KEPT = 3000;
  let newestCall = 0, moves = [], filters = "", olderCursor = null, paused = false;
  let held = [];        // calls come while paused, newest first: shown on resume
  let changed = () => {};   // the pulse asks again when the filters change
  const declared = new Set(($("feed-filters").dataset.filters || "").split(" ").filter(Boolean));

  const clockTime = (unix) => new Date(unix * 1000).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", second: "2-digit"});

  // -- the calls -------------------------------------------------------------------

  function callItem(call) {
    const item = el("li", `call ${call.ok ? "ok" : "failed"}`);
    item.callRecord = call;   // the record as getBotCalls gave it (Edit and resend reads it)
    item.dataset.callId = call.call_id;
    item.dataset.method = call.method;
    // The updates a poll returned (replay.js marks the replays among them).
    if (call.method === "getUpdates" && Array.isArray(call.result)) {
      item.dataset.updateIds = call.result.map((u) => u.update_id).join(" ");
    }
    const head = el("button", "call-line");
    head.type = "button";
    head.setAttribute("aria-expanded", "false");
    const time = el("time", "call-time", clockTime(call.date));
    head.append(time, el("b", "call-method", call.method),
      el("span", `call-status ${call.ok ? "ok" : "failed"}`, call.ok ? String(call.http_status)
        : `${call.http_status} ${call.error_code}`),
      el("span", "call-duration muted", `${Math.round(call.duration_ms)} ms`));
    if (call.replayed) head.append(el("span", "pill", "replayed"));
    // resendCall's: the testing tools sent it again, not the bot (as a replayed update is marked).
    if (call.resent_from !== undefined) head.append(el("span", "pill replay-pill resent-pill", `re-send of call ${call.resent_from}`));
    if (call.injected) head.append(Sandbox.injectedPill(call.injected));
    if (call.params_preview || (call.cut_fields || []).length) {
      const cut = el("span", "pill cut", "cut");
      cut.title = `Too large to keep whole: ${(call.cut_fields || []).join(", ") || "its parameters"} kept as a preview`;
      head.append(cut);
    }
    // Dated after advanceClock, the service's date runs ahead of the wall
    // clock: say so, by the offset it was dated with (not the clock's now).
    const datedAhead = offsetAt(call.date);
    if (datedAhead > 0) {
      const ahead = el("span", "pill clock-ahead", `clock +${span(datedAhead)}`);
      ahead.title = "Dated when the service clock ran this far ahead of the machine's (advanceClock): this time is the service's";
      head.append(ahead);
      time.classList.add("ahead");
    }
    item.append(head);
    if (!call.ok && call.description) item.append(el("p", "call-description", call.description));
    head.addEventListener("click", () => {
      const open = item.querySelector("pre");
      head.setAttribute("aria-expanded", String(!open));
      if (open) { open.remove(); return; }
      item.append(JsonView.render(call));
    });
    return item;
  }

  // The offset a record dated ``date`` was dated with: the newest move of
  // the service clock at or before it (none before the first).
  function offsetAt(date) {
    let at = 0;
    for (const move of moves) if (move.moved_at <= date) at = move.offset;
    return at;
  }

  const span = (seconds) => (seconds < 3600 ? `${Math.round(seconds / 60)} min`
    : seconds < 86400 ? `${Math.round(seconds / 3600)} h` : `${Math.round(seconds / 86400)} d`);

  function showCalls(calls) {
    const fresh = calls.filter((c) => c.call_id > newestCall);
    if (!fresh.length) return;
    newestCall = Math.max(newestCall, ...fresh.map((c) => c.call_id));
    // Newest first, as getBotCalls lists them.
    fresh.sort((a, b) => b.call_id - a.call_id);
    if (paused) {
      held = fresh.concat(held);
      showHeld();
      return;
    }
    addNewest(fresh);
  }

  function addNewest(calls) {
    const feed = $("feed");
    feed.prepend(...calls.map(callItem));
    if (feed.children.length > KEPT) {
      while (feed.children.length > KEPT) feed.lastElementChild.remove();
      olderCursor = null;   // the oldest rows are gone: Clear view to start again
      $("feed-older").hidden = true;
    }
    $("feed-empty").hidden = feed.children.length > 0;
  }

  function showHeld() {
    $("feed-held").hidden = !paused;
    $("feed-held").textContent = `Paused: ${held.length} new call${held.length === 1 ? "" : "s"}`
      + " held, shown when you resume.";
  }

  function setPaused(on) {
    paused = on;
    $("feed-pause").textContent = on ? "Resume" : "Pause";
    $("feed-pause").setAttribute("aria-pressed", String(on));
    if (!on && held.length) addNewest(held);
    if (!on) held = [];
    showHeld();
  }

  // The list only: the log keeps every call (a fresh page shows them again).
  function clearView() {
    held = [];
    olderCursor = null;
    $("feed").replaceChildren();
    $("feed-older").hidden = true;
    $("feed-empty").hidden = false;
    $("feed-empty").textContent = "Cleared. New calls appear here as they happen.";
    showHeld();
  }

  // getBotCalls' own parameters for the filters set (JSON values, as its
  // schema takes them), for the older pages read through it.
  function filterParams() {
    const params = {};
    for (const [name, value] of new URLSearchParams(filters)) {
      params[name] = name === "failures_only" ? true
        : name === "since" || name === "until" ? Number(value)
          : name === "chat_id" && /^-?\d{1,18}$/.test(value) ? Number(value) : value;
    }
    if (declared.has("detail")) params.detail = true;
    return params;
  }

  async function loadOlder() {
    if (!olderCursor) return;
    const button = $("feed-older");
    const asked = filters;
    button.disabled = true;
    try {
      const page = await Sandbox.api("getBotCalls", {bot_id: botId, limit: 100, cursor: olderCursor,
        ...filterParams()});
      if (asked !== filters) return;
      const feed = $("feed");
      const shown = new Set([...feed.children].map((li) => li.dataset.callId));
      feed.append(...page.calls.filter((c) => !shown.has(String(c.call_id))).map(callItem));
      olderCursor = page.next_cursor;
      button.hidden = !olderCursor;
    } catch (e) {
      Sandbox.toast(Sandbox.describe(e), "error");
    } finally {
      button.disabled = false;
    }
  }

  // A datetime-local field's value as Unix seconds ("" when empty).
  const unixOf = (field) => (field && field.value ? String(Math.floor(new Date(field.value).getTime() / 1000)) : "");

  function setFilters() {
    const params = new URLSearchParams();
    if ($("feed-method").value) params.set("method", $("feed-method").value);
    if ($("feed-failures").checked) params.set("failures_only", "1");
    if ($("feed-chat") && $("feed-chat").value.trim()) params.set("chat_id", $("feed-chat").value.trim());
    if ($("feed-search") && $("feed-search").value) params.set("search", $("feed-search").value);
    if (unixOf($("feed-since"))) params.set("since", unixOf($("feed-since")));
    if (unixOf($("feed-until"))) params.set("until", unixOf($("feed-until")));
    filters = params.toString();
    // Save the list: the same filters, every kept call they select.
    $("feed-save").href = filters ? `${$("feed-save").dataset.saveUrl}?${filters}` : $("feed-save").dataset.saveUrl;
    newestCall = 0;
    olderCursor = null;
    held = [];
    $("feed").replaceChildren();
    $("feed-older").hidden = true;
    $("feed-empty").hidden = false;
    $("feed-empty").textContent = "No calls match.";
    showHeld();
    changed();   // an answer for the old filters is dropped when it comes
  }

  // An answer of the pulse for the filters it was asked with.
  function take(pulse) {
    moves = pulse.clock_moves || [];
    $("feed-error").hidden = true;
    if (pulse.older_cursor !== undefined && newestCall === 0) {
      olderCursor = pulse.older_cursor;
      $("feed-older").hidden = !olderCursor;
    }
    showCalls(pulse.calls);
  }

  // A filter getBotCalls refused (its schema's error, said by the filters).
  function refused(error) {
    $("feed-error").textContent = Sandbox.describe(error);
    $("feed-error").hidden = false;
  }

  function say(text) {
    $("feed-empty").hidden = false;
    $("feed-empty").textContent = text;
  }

  let typing = null;
  $("feed-filters").addEventListener("change", setFilters);
  $("feed-filters").addEventListener("input", (event) => {
    if (event.target.type !== "search" && event.target.name !== "chat_id") return;
    clearTimeout(typing);
    typing = setTimeout(setFilters, 300);
  });
  $("feed-filters").addEventListener("submit", (event) => { event.preventDefault(); setFilters(); });
  $("feed-pause").addEventListener("click", () => setPaused(!paused));
  $("feed-clear").addEventListener("click", clearView);
  $("feed-older").addEventListener("click", loadOlder);

  return {take, refused, say, filters: () => filters, newest: () => newestCall,
    onChange: (then) => { changed = then; }};
})();
