// The bot's pulse, live: its calls as they happen, every one (the pulse
// reads back to the newest held: a burst leaves no gap), older ones page by
// page (getBotCalls' cursor); filters (getBotCalls' own: method, failures,
// and chat, time and text where it has them), Pause and Clear view (the
// list, never the log), as a browser's Network panel has. How it gets its
// updates (the last poll and a 10-s polling rate, or the webhook's attempts
// and since when it fails), its pending updates, and the page's health
// banner: not polling while updates wait, the webhook failing. With the
// testing tools: the service clock, its faults and reset. One GET a second.
"use strict";

(() => {
  const root = document.getElementById("pulse");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const botId = Number(root.dataset.botId);
  const POLL_MS = 1000, HIDDEN_POLL_MS = 5000, RATE_WINDOW_S = 10, STALLED_S = 60;
  // Rows the list holds at most (the log keeps 1,000 a bot; older pages add).
  const KEPT = 3000;
  let newestCall = 0, now = 0, offset = 0, filters = "", olderCursor = null, paused = false;
  let held = [];        // calls come while paused, newest first: shown on resume
  const samples = [];   // [machine ms, empty_polls]
  const declared = new Set(($("feed-filters").dataset.filters || "").split(" ").filter(Boolean));

  const el = Sandbox.el;

  const clockTime = (unix) => new Date(unix * 1000).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", second: "2-digit"});

  function ago(unix) {
    const seconds = Math.max(0, Math.round(now - unix));
    if (seconds < 60) return `${seconds} s ago`;
    if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
    if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
    return `${Math.floor(seconds / 86400)} d ago`;
  }

  // -- the calls -------------------------------------------------------------------

  function callItem(call) {
    const item = el("li", `call ${call.ok ? "ok" : "failed"}`);
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
    if (call.injected && typeof Inspector !== "undefined") head.append(Inspector.injectedPill(call.injected));
    else if (call.injected) head.append(el("span", "pill warn injected", "injected"));
    if (call.params_preview || (call.cut_fields || []).length) {
      const cut = el("span", "pill cut", "cut");
      cut.title = `Too large to keep whole: ${(call.cut_fields || []).join(", ") || "its parameters"} kept as a preview`;
      head.append(cut);
    }
    // After advanceClock the service's dates run ahead of the wall clock: say so.
    if (offset > 0) {
      const ahead = el("span", "pill clock-ahead", `clock +${span(offset)}`);
      ahead.title = "The service clock runs this far ahead of the machine's (advanceClock): this time is the service's";
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

  // -- vitals ----------------------------------------------------------------------

  // Polls per minute over the last 10 s (a minute's count lagged up to a
  // minute behind a bot that starts or stops): the empty ones, counted by
  // the service, over the page's samples of the window; and the recorded
  // ones (updates came, or the call failed) of the window, which it lists.
  // Beside it, the time since the last poll says at once that polls stopped.
  function pollingRate(pulse) {
    const at = performance.now();
    samples.push([at, pulse.empty_polls]);
    while (samples.length > 2 && at - samples[1][0] >= RATE_WINDOW_S * 1000) samples.shift();
    const seconds = (at - samples[0][0]) / 1000;
    if (seconds < 2) return "measuring\u2026";
    const perMinute = ((pulse.empty_polls - samples[0][1]) / seconds) * 60
      + pulse.recent_polls * (60 / RATE_WINDOW_S);
    return `${perMinute < 10 ? perMinute.toFixed(1) : Math.round(perMinute)} per minute (last 10 s)`;
  }

  // Updates wait and the bot has not asked for them for a minute: the bot
  // is down, or polls another installation.
  function stalled(pulse) {
    if (pulse.mode !== "polling" || !pulse.webhook.pending_update_count) return null;
    if (pulse.last_poll_at !== null && now - pulse.last_poll_at < STALLED_S) return null;
    const count = pulse.webhook.pending_update_count;
    return `${count} update${count === 1 ? "" : "s"} waiting, and the bot has not polled `
      + (pulse.last_poll_at === null ? "at all" : `for ${ago(pulse.last_poll_at).replace(/ ago$/, "")}`);
  }

  function showVitals(pulse) {
    const webhook = pulse.mode === "webhook";
    $("vital-mode").textContent = webhook ? "webhook" : "polling (getUpdates)";
    $("vital-poll").textContent = pulse.last_poll_at === null ? "never" : ago(pulse.last_poll_at);
    $("vital-poll-box").hidden = webhook;
    $("vital-rate-box").hidden = webhook;
    if (!webhook) $("vital-rate").textContent = pollingRate(pulse);
    $("vital-pending").textContent = String(pulse.webhook.pending_update_count);
    const stall = stalled(pulse);
    $("vital-stalled-box").hidden = !stall;
    $("vital-stalled").textContent = stall || "";
    const name = pulse.bot.display_name;
    Sandbox.health("not-polling", stall && `${name}: ${stall}.`);
    Sandbox.health("webhook-failing", pulse.failing_since === null ? null
      : `${name}: the webhook has been failing since ${clockTime(pulse.failing_since)}`
        + ` (${ago(pulse.failing_since)})${pulse.webhook.last_error ? `: ${pulse.webhook.last_error}` : ""}.`);
    $("vital-webhook-box").hidden = !webhook;
    $("vital-webhook").textContent = pulse.webhook.url;
    const failing = pulse.failing_since !== null;
    $("vital-failing-box").hidden = !failing;
    if (failing) {
      $("vital-failing").textContent = `${clockTime(pulse.failing_since)} (${ago(pulse.failing_since)})`
        + (pulse.webhook.last_error ? `: ${pulse.webhook.last_error}` : "");
    }
    $("deliveries-box").hidden = !webhook && !pulse.deliveries.length;
    $("deliveries").replaceChildren(...pulse.deliveries.map((d) => {
      const ok = d.error === undefined && d.http_status >= 200 && d.http_status < 300;
      const item = el("li", ok ? "ok" : "failed");
      item.dataset.updateId = d.update_id;
      item.dataset.attempt = d.attempt;
      item.append(el("time", null, clockTime(d.started_at)),
        ` update ${d.update_id} \u00b7 attempt ${d.attempt} \u00b7 `,
        el("b", null, d.error !== undefined ? d.error : `HTTP ${d.http_status}`),
        el("span", "muted", ` \u00b7 ${d.duration_ms} ms`));
      if (d.replay_of !== undefined) item.append(" ", el("span", "pill", `replay of ${d.replay_of}`));
      return item;
    }));
  }

  // -- the testing tools -------------------------------------------------------------

  function showTools(pulse) {
    if (!$("tools")) return;
    $("clock-now").textContent = new Date(pulse.clock.now * 1000).toLocaleString();
    $("clock-now").dataset.unix = pulse.clock.now;
    $("clock-offset").textContent = pulse.clock.offset ? `(${pulse.clock.offset} s ahead of the machine)` : "";
    const faults = pulse.faults || [];
    $("faults-none").hidden = faults.length > 0;
    $("faults").replaceChildren(...faults.map((f) => el("li", "fault",
      `${f.method}: ${f.error_code || "no error"}${f.delay_ms ? `, held ${f.delay_ms} ms` : ""}`
      + ` \u00b7 ${f.remaining} call${f.remaining === 1 ? "" : "s"} left`)));
  }

  async function tool(method, params, done) {
    try {
      const result = await Sandbox.api(method, params);
      if (done) done(result);
      poll();
    } catch (e) {
      Sandbox.toast(Sandbox.describe(e), "error");
    }
  }

  function wireTools() {
    if (!$("tools")) return;
    for (const button of root.querySelectorAll("[data-advance]")) {
      button.addEventListener("click", () => tool("advanceClock", {seconds: Number(button.dataset.advance)},
        (clock) => Sandbox.toast(`The service clock is now ${new Date(clock.now * 1000).toLocaleString()}`)));
    }
    $("fault-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const form = new FormData(event.target);
      const params = {bot_id: botId, method: form.get("method"), delay_ms: Number(form.get("delay_ms") || 0),
        count: Number(form.get("count") || 1)};
      if (form.get("error_code")) params.error_code = form.get("error_code");
      tool("injectFault", params, () => Sandbox.toast(`Armed: the next ${params.count} ${params.method}`));
    });
    $("faults-clear").addEventListener("click", () => tool("clearFaults", {bot_id: botId}));
    $("reset").addEventListener("click", () => {
      if (!window.confirm("Reset the installation? Every bot, user, chat, message and file goes.")) return;
      tool("reset", {}, () => location.assign(document.querySelector(".topbar nav a[href$='/bots']").href));
    });
  }

  // -- polling ---------------------------------------------------------------------

  let timer = null, inFlight = false, again = false;

  async function poll() {
    if (inFlight) { again = true; return; }   // asked again meanwhile: once more after
    inFlight = true;
    clearTimeout(timer);
    let delay = document.hidden ? HIDDEN_POLL_MS : POLL_MS;
    const asked = filters;
    try {
      const target = new URL(root.dataset.pulseUrl, location.href);
      target.search = filters;
      target.searchParams.set("after_call", newestCall);
      const pulse = await Sandbox.getJSON(target);
      if (asked === filters) {
        now = pulse.clock.now;
        offset = pulse.clock.offset || 0;
        Sandbox.setServiceNow(now);
        $("feed-error").hidden = true;
        if (pulse.older_cursor !== undefined && newestCall === 0) {
          olderCursor = pulse.older_cursor;
          $("feed-older").hidden = !olderCursor;
        }
        showCalls(pulse.calls);
        showVitals(pulse);
        showTools(pulse);
      }
    } catch (e) {
      if (e.code === "INVALID_PARAMETER" && e.parameters.field === "bot_id") {
        $("feed-empty").hidden = false;
        $("feed-empty").textContent = "This bot no longer exists (the installation was reset?).";
        delay = null;   // nothing more to ask
      } else if (e.code === "INVALID_PARAMETER" && asked === filters && filters) {
        $("feed-error").textContent = Sandbox.describe(e);   // a filter getBotCalls refuses
        $("feed-error").hidden = false;
        delay = 3000;
      } else {
        delay = 3000;
      }
    } finally {
      inFlight = false;
      if (again) delay = 0;
      again = false;
      clearTimeout(timer);
      if (delay !== null) timer = setTimeout(poll, delay);
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
    newestCall = 0;
    olderCursor = null;
    held = [];
    $("feed").replaceChildren();
    $("feed-older").hidden = true;
    $("feed-empty").hidden = false;
    $("feed-empty").textContent = "No calls match.";
    showHeld();
    poll();   // an answer for the old filters is dropped when it comes
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
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
  wireTools();
  poll();
})();
