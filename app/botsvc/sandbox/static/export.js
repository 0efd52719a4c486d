// "Export as test" on a chat: exportChat as a pytest module for the plugin,
// or as a JSON transcript, of the whole chat or of what came after a chosen
// message. The file is shown as text (never parsed as markup), and can be
// copied or downloaded. Calls go through Sandbox.api (the session's CSRF
// token); the dialog is built here so the chat page's template only holds
// the button.
"use strict";

(() => {
  const chat = document.getElementById("chat");
  const button = document.getElementById("btn-export");
  if (!chat || !button) return;
  const {el, api, copy, describe} = Sandbox;

  // The messages the page shows, oldest first: "after this one" choices.
  function shownMessages() {
    return [...document.querySelectorAll("#messages [data-message-id]")].map((row) => ({
      id: row.dataset.messageId,
      label: (row.querySelector(".text")?.textContent || "a file").slice(0, 60),
      mine: row.classList.contains("out"),
    }));
  }

  function build() {
    const box = el("dialog", "dialog export-dialog");
    box.id = "export-dialog";
    const form = el("form", "export-form");
    form.method = "dialog";
    form.append(el("h2", null, "Export as test"));
    const from = el("select");
    from.id = "export-from";
    const format = el("select");
    format.id = "export-format";
    for (const [value, label] of [["pytest", "pytest module"], ["transcript", "JSON transcript"]]) {
      const option = el("option", null, label);
      option.value = value;
      format.append(option);
    }
    const labelFrom = el("label", "small", "From ");
    labelFrom.append(from);
    const labelFormat = el("label", "small", "As ");
    labelFormat.append(format);
    const go = el("button", "btn primary", "Export");
    go.type = "button";
    go.id = "export-run";
    const controls = el("div", "export-controls");
    controls.append(labelFrom, labelFormat, go);
    const name = el("p", "small muted");
    name.id = "export-file-name";
    const error = el("p", "form-error");
    error.id = "export-error";
    error.setAttribute("role", "alert");
    error.hidden = true;
    const output = el("pre", "export-output");
    output.id = "export-output";
    const copyButton = el("button", "btn", "Copy");
    copyButton.type = "button";
    copyButton.id = "export-copy";
    const download = el("a", "btn", "Download");
    download.id = "export-download";
    const close = el("button", "btn", "Close");
    close.value = "close";
    const actions = el("div", "dialog-actions export-actions");
    actions.append(copyButton, download, close);
    form.append(controls, error, name, output, actions);
    box.append(form);
    document.body.append(box);
    return {box, from, format, go, name, error, output, copyButton, download};
  }

  let ui = null;
  let url = null;

  function fillChoices() {
    ui.from.replaceChildren();
    const whole = el("option", null, "the whole chat");
    whole.value = "";
    ui.from.append(whole);
    for (const m of shownMessages()) {
      const option = el("option", null, `after ${m.mine ? "your" : "the bot's"} “${m.label}”`);
      option.value = m.id;
      ui.from.append(option);
    }
  }

  async function run() {
    const params = {user_id: Number(chat.dataset.userId), bot_id: Number(chat.dataset.botId),
                    format: ui.format.value};
    if (ui.from.value) params.after_message_id = Number(ui.from.value);
    ui.error.hidden = true;
    ui.go.setAttribute("aria-busy", "true");
    try {
      const file = await api("exportChat", params);
      ui.name.textContent = file.file_name;
      ui.output.textContent = file.content;
      if (url) URL.revokeObjectURL(url);
      const type = file.file_name.endsWith(".json") ? "application/json" : "text/x-python";
      url = URL.createObjectURL(new Blob([file.content], {type}));
      ui.download.href = url;
      ui.download.download = file.file_name;
      ui.copyButton.disabled = false;
      ui.download.removeAttribute("aria-disabled");
    } catch (error) {
      ui.error.textContent = describe(error);
      ui.error.hidden = false;
    } finally {
      ui.go.removeAttribute("aria-busy");
    }
  }

  button.addEventListener("click", () => {
    ui = ui || build();
    if (!ui.wired) {
      ui.go.addEventListener("click", run);
      ui.copyButton.addEventListener("click", () => copy(ui.output.textContent));
      ui.wired = true;
    }
    fillChoices();
    ui.output.textContent = "";
    ui.name.textContent = "";
    ui.copyButton.disabled = true;
    ui.download.removeAttribute("href");
    ui.download.setAttribute("aria-disabled", "true");
    ui.box.showModal();
    run();
  });
})();
