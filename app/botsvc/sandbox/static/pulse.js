// The bot's pulse, live, one GET a second: its calls (drawn by
// call-list.js: every one, as they happen, the pulse reading back to the
// newest held), how it gets its updates (the last poll and a 10-s polling
// rate, or the webhook's attempts and since when it fails), its pending
// updates, and the page's health banner: not polling while updates wait,
// the webhook failing. With the testing tools: the service clock, its
// faults and reset.
"use strict";

(() => {
  const root = document.getElementById("pulse");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const botId = Number(root.dataset.botId);
  const POLL_MS = 1000, HIDDEN_POLL_MS = 5000, RATE_WINDOW_S = 10, STALLED_S = 60;
  let now = 0;
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
    const asked = CallList.filters();
    try {
      const target = new URL(root.dataset.pulseUrl, location.href);
      target.search = asked;
      target.searchParams.set("after_call", CallList.newest());
      const pulse = await Sandbox.getJSON(target);
      if (asked === CallList.filters()) {
        now = pulse.clock.now;
        Sandbox.setServiceNow(now);
        CallList.take(pulse);
        showVitals(pulse);
        showTools(pulse);
      }
    } catch (e) {
      if (e.code === "INVALID_PARAMETER" && e.parameters.field === "bot_id") {
        CallList.say("This bot no longer exists (the installation was reset?).");
        delay = null;   // nothing more to ask
      } else if (e.code === "INVALID_PARAMETER" && asked && asked === CallList.filters()) {
        CallList.refused(e);   // a filter getBotCalls refuses
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

  CallList.onChange(poll);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
  wireTools();
  poll();
})();
