// The bot's pulse, live: its calls as they happen (failures highlighted with
// their description, filters by method and failures only), how it gets its
// updates (the last poll and the polling rate, or the webhook's attempts and
// since when it fails), its pending updates; with the testing tools, the
// service clock, its faults and reset. One GET every second; the calls come
// as "newer than the newest held".
"use strict";

(() => {
  const root = document.getElementById("pulse");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const botId = Number(root.dataset.botId);
  const POLL_MS = 1000, HIDDEN_POLL_MS = 5000, KEPT = 200, RATE_WINDOW_S = 60;
  let newestCall = 0, now = 0, filters = "";
  const samples = [];   // [machine ms, empty_polls]

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
    head.append(el("time", "call-time", clockTime(call.date)), el("b", "call-method", call.method),
      el("span", `call-status ${call.ok ? "ok" : "failed"}`, call.ok ? String(call.http_status)
        : `${call.http_status} ${call.error_code}`),
      el("span", "call-duration muted", `${Math.round(call.duration_ms)} ms`));
    if (call.replayed) head.append(el("span", "pill", "replayed"));
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

  function showCalls(calls) {
    const feed = $("feed");
    const fresh = calls.filter((c) => c.call_id > newestCall);
    if (!fresh.length) return;
    newestCall = Math.max(newestCall, ...fresh.map((c) => c.call_id));
    // Newest first, as getBotCalls lists them.
    feed.prepend(...fresh.sort((a, b) => b.call_id - a.call_id).map(callItem));
    while (feed.children.length > KEPT) feed.lastElementChild.remove();
    $("feed-empty").hidden = true;
  }

  // -- vitals ----------------------------------------------------------------------

  // Polls per minute: the empty ones, counted by the service, over the
  // samples of up to the last minute; and the recorded ones (updates came,
  // or the call failed) of the last minute, which the service lists.
  function pollingRate(pulse) {
    const at = performance.now();
    samples.push([at, pulse.empty_polls]);
    while (samples.length > 2 && at - samples[0][0] > RATE_WINDOW_S * 1000) samples.shift();
    const seconds = (at - samples[0][0]) / 1000;
    if (seconds < 3) return "measuring\u2026";
    const perMinute = ((pulse.empty_polls - samples[0][1]) / seconds) * 60 + pulse.recent_polls;
    return `${perMinute < 10 ? perMinute.toFixed(1) : Math.round(perMinute)} per minute`;
  }

  function showVitals(pulse) {
    const webhook = pulse.mode === "webhook";
    $("vital-mode").textContent = webhook ? "webhook" : "polling (getUpdates)";
    $("vital-poll").textContent = pulse.last_poll_at === null ? "never" : ago(pulse.last_poll_at);
    $("vital-poll-box").hidden = webhook;
    $("vital-rate-box").hidden = webhook;
    if (!webhook) $("vital-rate").textContent = pollingRate(pulse);
    $("vital-pending").textContent = String(pulse.webhook.pending_update_count);
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

  let timer = null, inFlight = false;

  async function poll() {
    if (inFlight) return;
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
        showCalls(pulse.calls);
        showVitals(pulse);
        showTools(pulse);
      }
    } catch (e) {
      if (e.code === "INVALID_PARAMETER" && e.parameters.field === "bot_id") {
        $("feed-empty").hidden = false;
        $("feed-empty").textContent = "This bot no longer exists (the installation was reset?).";
        delay = null;   // nothing more to ask
      } else {
        delay = 3000;
      }
    } finally {
      inFlight = false;
      if (delay !== null) timer = setTimeout(poll, delay);
    }
  }

  function setFilters() {
    const params = new URLSearchParams();
    if ($("feed-method").value) params.set("method", $("feed-method").value);
    if ($("feed-failures").checked) params.set("failures_only", "1");
    filters = params.toString();
    newestCall = 0;
    $("feed").replaceChildren();
    $("feed-empty").hidden = false;
    poll();
  }

  $("feed-method").addEventListener("change", setFilters);
  $("feed-failures").addEventListener("change", setFilters);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
  wireTools();
  poll();
})();
