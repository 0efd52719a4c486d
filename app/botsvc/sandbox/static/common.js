// The sandbox's shared script: calling operator methods, toasts, the dialog,
// the clipboard, and the bot manager's buttons and forms. Data never goes
// through an HTML parser: every text is set with textContent.
"use strict";

const Sandbox = (() => {
  const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content || "";

  // A new element with its class and its text (set as text: never parsed).
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  class ApiError extends Error {
    constructor(body, status) {
      super(body.description || `HTTP ${status}`);
      this.code = body.error_code;
      this.parameters = body.parameters || {};
      this.status = status;
    }
  }

  // POST /sandbox/api/<method> with the session's CSRF token. ``params`` is
  // a plain object (sent as JSON) or a FormData (multipart, for uploads).
  async function api(method, params = {}) {
    const url = meta("sandbox-api").replace(/_$/, encodeURIComponent(method));
    const isForm = params instanceof FormData;
    return unwrap(await reach(url, {
      method: "POST",
      credentials: "same-origin",
      headers: isForm ? {"X-CSRF-Token": meta("csrf-token")}
        : {"X-CSRF-Token": meta("csrf-token"), "Content-Type": "application/json"},
      body: isForm ? params : JSON.stringify(params),
    }));
  }

  // fetch, telling the page's health whether the server answered at all: a
  // person reads "The server cannot be reached", never "Failed to fetch".
  async function reach(url, options) {
    let response;
    try {
      response = await fetch(url, options);
    } catch (e) {
      unreachable(true);
      throw new ApiError({description: "The server cannot be reached"}, 0);
    }
    // 502-504: the front door answers for a service that does not.
    unreachable(response.status >= 502 && response.status <= 504);
    return response;
  }

  // GET a sandbox JSON answer (the pages' polls); its result, or ApiError.
  // Every poll passes here: whether the server answers at all is told here.
  async function getJSON(url) {
    return unwrap(await reach(url, {credentials: "same-origin", cache: "no-store"}));
  }

  // -- health: a banner and the tab's title -------------------------------------

  const issues = new Map();        // key -> text, what the banner says
  const marks = new Map();         // key -> text before the page's title
  const baseTitle = document.title;
  let lostSince = null;

  function retitle() {
    const before = [...marks.values()].filter(Boolean);
    if (issues.size) before.unshift("\u26a0");
    document.title = before.length ? `${before.join(" ")} ${baseTitle}` : baseTitle;
  }

  // Something wrong the person should see at once (not polling, the webhook
  // failing, the server gone), or ``null`` when it is over.
  function health(key, text) {
    if (text) issues.set(key, text);
    else issues.delete(key);
    const box = document.getElementById("health");
    if (box) {
      box.replaceChildren(...[...issues.entries()].map(([name, line]) => {
        const item = el("p", `health-line ${name}`, line);
        item.dataset.issue = name;
        return item;
      }));
      box.hidden = issues.size === 0;
    }
    retitle();
  }

  // A count for the tab's title (unread messages): "(3) Name · botsvc sandbox".
  function titleMark(key, text) {
    marks.set(key, text);
    retitle();
  }

  function unreachable(lost) {
    if (!lost) {
      if (lostSince !== null) health("unreachable", null);
      lostSince = null;
      return;
    }
    lostSince = lostSince || new Date();
    health("unreachable", "The server cannot be reached (since "
      + `${lostSince.toLocaleTimeString()}): what this page shows may be out of date.`);
  }

  // POST JSON to a sandbox route with the session's CSRF token.
  async function post(url, params) {
    return unwrap(await reach(url, {
      method: "POST", credentials: "same-origin",
      headers: {"X-CSRF-Token": meta("csrf-token"), "Content-Type": "application/json"},
      body: JSON.stringify(params),
    }));
  }

  async function unwrap(response) {
    let body;
    try {
      body = await response.json();
    } catch (e) {
      body = {description: `The server answered HTTP ${response.status}`};
    }
    if (response.status === 401) signedOut();
    if (!response.ok || !body.ok) throw new ApiError(body, response.status);
    return body.result;
  }

  // To the sign-in form, which brings the person back to this page.
  function signedOut() {
    const target = new URL(meta("sandbox-signin"), location.href);
    target.searchParams.set("next", location.pathname + location.search);
    location.assign(target);
  }

  // An error as a person reads it: the description, and the reason word of
  // a media refusal.
  function describe(error) {
    const reason = error.parameters && error.parameters.reason;
    return reason ? `${error.message} (${reason})` : error.message;
  }

  // Toasts show just below the lowest of the page's headers in view (the
  // top bar, the banner, the chat's header with its buttons, the bot's
  // header): never over a button, never over the chat's newest line. The box
  // moves into that header (no style is set from a script: the CSP's).
  const HEADERS = ".topbar, #health, .chat-head, .bot-page > .panel:first-child";
  function anchorToasts(box) {
    let anchor = null, bottom = 0;
    for (const head of document.querySelectorAll(HEADERS)) {
      const edge = head.getBoundingClientRect().bottom;
      if (!head.hidden && edge > bottom && edge < window.innerHeight / 2) { anchor = head; bottom = edge; }
    }
    if (!anchor) {
      box.classList.remove("anchored");
      if (box.parentElement !== document.body) document.body.append(box);
      return;
    }
    if (getComputedStyle(anchor).position === "static") anchor.classList.add("toast-anchor");
    box.classList.add("anchored");
    if (box.parentElement !== anchor) anchor.append(box);
  }

  function toast(text, kind = "info") {
    const box = document.getElementById("toasts");
    anchorToasts(box);
    const item = document.createElement("div");
    item.className = `toast ${kind}`;
    item.textContent = text;
    box.append(item);
    setTimeout(() => item.classList.add("leaving"), 3500);
    setTimeout(() => item.remove(), 4000);
    return item;
  }

  // The one dialog: an alert, or a secret shown once with a copy button.
  function dialog({title = "", text = "", secret = null, onClose = null}) {
    const box = document.getElementById("dialog");
    document.getElementById("dialog-title").textContent = title;
    document.getElementById("dialog-text").textContent = text;
    const secretBox = document.getElementById("dialog-secret");
    secretBox.hidden = secret === null;
    document.getElementById("dialog-secret-value").textContent = secret || "";
    document.getElementById("dialog-copy").onclick = () => copy(secret || "");
    box.onclose = () => {
      document.getElementById("dialog-secret-value").textContent = "";
      if (onClose) onClose();
    };
    box.showModal();
  }

  async function copy(text) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {
      // Outside a secure context (plain http on a LAN address) the async
      // clipboard is missing: copy through a selected, off-screen field.
      const field = document.createElement("textarea");
      field.value = text;
      field.className = "visually-hidden";
      document.body.append(field);
      field.select();
      const done = document.execCommand("copy");
      field.remove();
      if (!done) {
        toast("Could not copy to the clipboard", "error");
        return;
      }
    }
    toast("Copied to the clipboard");
  }

  // The service clock (advanceClock moves it ahead of the machine's): what
  // "today" and "ago" mean on the page. Each answer that carries the
  // service's ``now`` sets it again (setServiceNow).
  let serviceOffsetMs = 0;
  function setServiceNow(unix) {
    if (Number.isFinite(unix) && unix > 0) serviceOffsetMs = unix * 1000 - Date.now();
  }
  const serviceNow = () => new Date(Date.now() + serviceOffsetMs);
  // How far the service clock runs ahead of the machine's, in seconds.
  const clockAhead = () => Math.round(serviceOffsetMs / 1000);

  function localTimes(root = document) {
    const today = serviceNow().toDateString();
    for (const el of root.querySelectorAll("time[data-unix]")) {
      const date = new Date(Number(el.dataset.unix) * 1000);
      el.dateTime = date.toISOString();
      el.title = date.toLocaleString();
      // Short (the sidebar): the time today, else the date alone, so that a
      // bot's name keeps its room.
      el.textContent = el.dataset.format !== "short"
        ? date.toLocaleString([], {dateStyle: "medium", timeStyle: "short"})
        : date.toDateString() === today ? date.toLocaleTimeString([], {hour: "2-digit", minute: "2-digit"})
          : date.getFullYear() === serviceNow().getFullYear()
            ? date.toLocaleDateString([], {month: "short", day: "numeric"})
            : date.toLocaleDateString([], {dateStyle: "short"});
    }
  }

  // A fault the testing tools injected, as every list and the inspector say
  // it: a real failure or delay it was not ("injected: RATE_LIMITED, held 700 ms").
  function injectedPill(injected) {
    const what = [injected.error_code, injected.delay_ms ? `held ${injected.delay_ms} ms` : null]
      .filter(Boolean).join(", ");
    const pill = el("span", "pill warn injected", what ? `injected: ${what}` : "injected");
    pill.title = "Armed by injectFault (the testing tools), not the bot's doing";
    return pill;
  }

  function formValues(form) {
    const params = {};
    for (const [name, value] of new FormData(form)) {
      if (value !== "") params[name] = value;
    }
    return params;
  }

  // Where a user's chats are: with the same bot open when one is.
  function chatsOf(element, userId) {
    const bot = element.dataset.openBot;
    return bot ? `${element.dataset.chatsUrl}/${encodeURIComponent(userId)}/${encodeURIComponent(bot)}`
      : `${element.dataset.chatsUrl}?user=${encodeURIComponent(userId)}`;
  }

  // What happens after a call succeeded: show a new token once, open a new
  // user's chats, or show the page again as it now is.
  function then(kind, result, element) {
    if (kind === "token") {
      dialog({title: "The bot's token",
        text: "Copy it now and keep it secret: it is shown only this once.",
        secret: result.token, onClose: () => location.reload()});
    } else if (kind === "user") {
      location.assign(chatsOf(element, result.user_id));
    } else {
      location.reload();
    }
  }

  async function callFrom(element, params) {
    const error = element.querySelector(".form-error");
    if (element.dataset.confirm && !window.confirm(element.dataset.confirm)) return;
    element.setAttribute("aria-busy", "true");
    try {
      then(element.dataset.then, await api(element.dataset.call, params), element);
    } catch (e) {
      if (error) {
        error.textContent = describe(e);
        error.hidden = false;
      } else {
        toast(describe(e), "error");
      }
    } finally {
      element.removeAttribute("aria-busy");
    }
  }

  function wire() {
    setServiceNow(Number(meta("service-now")));
    localTimes();
    for (const button of document.querySelectorAll("button[data-call]")) {
      button.addEventListener("click", () => callFrom(button, JSON.parse(button.dataset.params || "{}")));
    }
    for (const form of document.querySelectorAll("form[data-call]")) {
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        callFrom(form, formValues(form));
      });
    }
    const users = document.getElementById("user-select");
    if (users) users.addEventListener("change", () => location.assign(chatsOf(users, users.value)));
    // Broadcasts still delivering: show their progress as it goes.
    if (document.querySelector("[data-unfinished]")) {
      setInterval(() => {
        if (!document.getElementById("dialog").open) location.reload();
      }, 2000);
    }
  }

  document.addEventListener("DOMContentLoaded", wire);
  return {api, getJSON, post, describe, toast, dialog, copy, localTimes, signedOut, el,
    setServiceNow, serviceNow, clockAhead, health, titleMark, injectedPill};
})();
