// Edit and resend, on each call of the list (with the testing tools, as
// resendCall exists only then): its parameters as JSON in a field, changed
// there and sent as the bot through resendCall with ``params``. The method's
// own schema judges them before anything is sent (a refusal names the
// field); what is sent is a re-send like any other, marked so in the list.
// The text is the person's own: set with .value and textContent, never markup.
"use strict";

(() => {
  const el = Sandbox.el;
  const pulse = document.getElementById("pulse");
  const feed = document.getElementById("feed");
  if (!pulse || !feed || pulse.dataset.testTools !== "1") return;
  const botId = Number(pulse.dataset.botId);

  function editor(item) {
    const call = item.callRecord;
    const box = el("div", "call-editor");
    const label = el("label", "small", `Parameters of ${call.method}, sent as the bot (JSON)`);
    const field = el("textarea", "call-editor-params");
    field.spellcheck = false;
    field.rows = 6;
    field.value = JSON.stringify(call.params || {}, null, 2);
    label.append(field);
    const send = el("button", "btn small-btn primary call-editor-send", "Send as the bot");
    const cancel = el("button", "btn small-btn call-editor-cancel", "Cancel");
    send.type = cancel.type = "button";
    const error = el("p", "form-error small call-editor-error");
    error.hidden = true;
    const outcome = el("p", "muted small call-editor-outcome");
    outcome.hidden = true;
    const row = el("div", "tool-row");
    row.append(send, cancel);
    box.append(label, row, error, outcome);
    cancel.addEventListener("click", () => box.remove());
    send.addEventListener("click", () => sendEdited(call, field, send, error, outcome));
    return box;
  }

  function edited(text) {
    let params;
    try {
      params = JSON.parse(text);
    } catch (e) {
      throw new Error(`Not JSON: ${e.message}`);
    }
    if (params === null || typeof params !== "object" || Array.isArray(params)) {
      throw new Error("The parameters must be a JSON object");
    }
    return params;
  }

  async function sendEdited(call, field, send, error, outcome) {
    error.hidden = true;
    send.disabled = true;
    try {
      const answer = await Sandbox.api("resendCall", {bot_id: botId, call_id: call.call_id,
        params: edited(field.value)});
      const said = answer.ok ? `HTTP ${answer.http_status}` : `${answer.http_status} ${answer.error_code}`
        + (answer.description ? `: ${answer.description}` : "");
      outcome.textContent = `Sent: ${said} (request ${answer.request_id}).`;
      outcome.hidden = false;
      Sandbox.toast(`Re-sent ${answer.method} (edited): ${said}`, answer.ok ? "info" : "error");
    } catch (e) {
      error.textContent = e.status === undefined ? e.message : Sandbox.describe(e);
      error.hidden = false;
    } finally {
      send.disabled = false;
    }
  }

  function decorate() {
    for (const item of feed.querySelectorAll("li.call:not([data-editable])")) {
      item.dataset.editable = "1";
      const call = item.callRecord;
      if (!call || call.method === "getUpdates") continue;
      const open = el("button", "btn small-btn call-edit", "Edit and resend");
      open.type = "button";
      open.title = "Change its parameters and send it again as the bot (resendCall with params)";
      open.addEventListener("click", (event) => {
        event.stopPropagation();
        const shown = item.querySelector(".call-editor");
        if (shown) { shown.remove(); return; }
        item.append(editor(item));
        item.querySelector(".call-editor-params").focus();
      });
      let row = item.querySelector(".replay-row");
      if (!row) { row = el("div", "replay-row"); item.append(row); }
      row.append(open);
    }
  }

  new MutationObserver(decorate).observe(feed, {childList: true});
  decorate();
})();
