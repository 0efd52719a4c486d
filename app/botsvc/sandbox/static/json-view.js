// JSON as a developer reads it: indented like JSON.stringify(value, null, 2),
// with keys, strings, numbers and literals coloured. Built node by node with
// textContent, so a value is never parsed as markup; the element's text is
// exactly the JSON (a test may JSON.parse it back).
"use strict";

const JsonView = (() => {
  function span(className, text) {
    const node = document.createElement("span");
    node.className = className;
    node.textContent = text;
    return node;
  }

  function write(out, value, indent) {
    if (value === null || typeof value !== "object") {
      const kind = value === null ? "null" : typeof value;
      out.push(span(`j-${kind}`, JSON.stringify(value)));
      return;
    }
    const isArray = Array.isArray(value);
    const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
    if (!entries.length) {
      out.push(isArray ? "[]" : "{}");
      return;
    }
    const inner = indent + "  ";
    out.push(isArray ? "[\n" : "{\n");
    entries.forEach(([key, item], i) => {
      out.push(inner);
      if (!isArray) out.push(span("j-key", JSON.stringify(key)), ": ");
      write(out, item, inner);
      out.push(i < entries.length - 1 ? ",\n" : "\n");
    });
    out.push(indent + (isArray ? "]" : "}"));
  }

  // A <pre> holding ``value`` as indented JSON.
  function render(value, className = "json") {
    const pre = document.createElement("pre");
    pre.className = className;
    const out = [];
    write(out, value, "");
    pre.append(...out);
    return pre;
  }

  return {render};
})();
