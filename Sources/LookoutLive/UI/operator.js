// The operator's side of the UI: exchanges held at a breakpoint (edit the head and body, then
// Resume, Abort or Answer), Resend and Edit-and-resend on finished exchanges, and breakpoints
// set from the filter box. Uses app.js's helpers ($, state, section, keyValues, showNotice, …).
"use strict";

/// A running exchange a breakpoint holds (its phase names the breakpoint).
function isHeld(record) {
  return record.state === "in_flight" && /^breakpoint_/.test(record.phase || "");
}

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
    body: body === undefined ? "" : JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  return { ok: response.ok, status: response.status, body: answer };
}

// MARK: - Editing a message

function bytesOfBase64(text) {
  const raw = atob(text || "");
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

function base64OfBytes(bytes) {
  let raw = "";
  for (const b of bytes) raw += String.fromCharCode(b);
  return btoa(raw);
}

/// How a body is shown for editing: pretty JSON, text, or hex for anything that is not UTF-8.
function bodyForEditing(message) {
  const bytes = bytesOfBase64(message.body_base64);
  if (message.body === undefined) {
    return { format: "hex", text: Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ") };
  }
  try {
    return { format: "json", text: JSON.stringify(JSON.parse(message.body), null, 2) };
  } catch {
    return { format: "text", text: message.body };
  }
}

function field(parent, label, id, value, multiline) {
  const row = document.createElement("label");
  row.className = "edit-field";
  const name = document.createElement("span");
  name.textContent = label;
  const input = document.createElement(multiline ? "textarea" : "input");
  input.id = id;
  input.value = value;
  input.spellcheck = false;
  if (multiline) input.rows = Math.min(18, Math.max(3, value.split("\n").length + 1));
  row.append(name, input);
  parent.appendChild(row);
  return input;
}

function headerLines(pairs) {
  return (pairs || []).map(([name, value]) => `${name}: ${value}`).join("\n");
}

function parseHeaderLines(text) {
  const pairs = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error(`headers: "${line}" is not Name: value`);
    pairs.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  return pairs;
}

/// The edits between what was shown and what is in the form now (only what changed is sent).
function editsFrom(form) {
  const edits = {};
  if (form.method && form.method.value !== form.original.method) edits.method = form.method.value;
  if (form.url && form.url.value !== form.original.url) edits.url = form.url.value;
  if (form.status && form.status.value !== String(form.original.status)) edits.status = Number(form.status.value);
  const before = new Map(form.original.headers.map(([n, v]) => [n.toLowerCase(), v]));
  const after = new Map(parseHeaderLines(form.headers.value).map(([n, v]) => [n.toLowerCase(), [n, v]]));
  const set = {};
  const remove = [];
  for (const [key, [name, value]] of after) if (before.get(key) !== value) set[name] = value;
  for (const key of before.keys()) if (!after.has(key)) remove.push(key);
  if (Object.keys(set).length || remove.length) edits.headers = { set, remove };
  if (form.body && !form.body.readOnly && form.body.value !== form.original.body) {
    if (form.format === "hex") {
      const digits = form.body.value.replace(/\s+/g, "");
      if (!/^([0-9a-fA-F]{2})*$/.test(digits)) throw new Error("body: hex digits in pairs");
      edits.body_base64 = base64OfBytes(digits.match(/../g)?.map((h) => parseInt(h, 16)) || []);
    } else {
      edits.body = form.body.value;
    }
  }
  return edits;
}

/// Fields for a message: its start (method and URL, or status), its head's fields, its body.
function messageForm(box, prefix, message, editable) {
  const shown = bodyForEditing(message);
  const form = { original: { headers: message.headers || [], body: shown.text }, format: shown.format };
  if (message.status !== undefined) {
    form.status = field(box, "status", prefix + "-status", String(message.status));
    form.original.status = message.status;
  } else {
    form.method = field(box, "method", prefix + "-method", message.method);
    form.url = field(box, "URL", prefix + "-url", message.url);
    form.original.method = message.method;
    form.original.url = message.url;
  }
  form.headers = field(box, "headers", prefix + "-headers", headerLines(message.headers), true);
  form.body = field(box, `body (${shown.format})`, prefix + "-body", shown.text, true);
  form.body.dataset.format = shown.format;
  if (!editable) {
    form.body.readOnly = true;
    form.body.title = "longer than max_body_bytes: only the head can be edited";
  }
  return form;
}

function button(parent, text, id, title, action) {
  const element = document.createElement("button");
  element.type = "button";
  element.id = id;
  element.className = "op";
  element.textContent = text;
  element.title = title;
  element.addEventListener("click", action);
  parent.appendChild(element);
  return element;
}

// MARK: - A held exchange

const held = { id: null, form: null, answer: null };

async function renderHeld(body, record) {
  const response = await fetch("/exchanges/" + record.id, { credentials: "same-origin" });
  if (!response.ok || state.detailId !== record.id) return;
  const view = await response.json();
  if (view.state !== "held") return;
  const box = section(body, "Held");
  box.id = "held";
  keyValues(box, [["paused at", view.phase], ["breakpoint", view.rule],
    ["timeout", `${view.timeout_s} s, then ${view.on_timeout}`]]);
  const message = view.phase === "request" ? view.request : view.response;
  held.id = record.id;
  held.form = messageForm(box, "held", message, message.body_editable);
  const actions = document.createElement("div");
  actions.className = "actions";
  box.appendChild(actions);
  button(actions, "Resume", "held-resume", "send it on with the edits (r, or Ctrl+Enter in a field)", resumeHeld);
  button(actions, "Abort", "held-abort", "end it: the client gets 502 aborted_by_operator (a)", abortHeld);
  button(actions, "Answer", "held-answer", "answer with the response below instead (n)", answerHeld);
  const answer = document.createElement("details");
  answer.className = "answer-form";
  const summary = document.createElement("summary");
  summary.textContent = "answer with";
  answer.appendChild(summary);
  box.appendChild(answer);
  held.answer = messageForm(answer, "answer", { status: 200, headers: [["Content-Type", "text/plain"]], body: "", body_base64: "" }, true);
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.ctrlKey) { event.preventDefault(); resumeHeld(); }
  });
}

async function settleHeld(path, body, done) {
  const id = held.id;
  const result = await post(`/exchanges/${id}/${path}`, body);
  if (!result.ok) {
    showNotice(result.body.error || `${path} failed (${result.status})`);
    return;
  }
  showNotice(`exchange ${id}: ${done}`);
  held.id = null;
  refreshInFlight();
  setTimeout(() => { if (state.detailId === id) openDetail(id); }, 300);
}

function resumeHeld() {
  if (held.id === null) return;
  let edits;
  try { edits = editsFrom(held.form); } catch (error) { showNotice(error.message); return; }
  settleHeld("resume", edits, "resumed" + (Object.keys(edits).length ? " with edits" : ""));
}

function abortHeld() {
  if (held.id !== null) settleHeld("abort", undefined, "aborted");
}

function answerHeld() {
  if (held.id === null) return;
  let headers;
  try { headers = parseHeaderLines(held.answer.headers.value); } catch (error) { showNotice(error.message); return; }
  settleHeld("answer", { status: Number(held.answer.status.value), headers, body: held.answer.body.value }, "answered");
}

// MARK: - Resend

function renderResend(body, record) {
  if (record.kind !== "http" && record.kind !== "intercepted") return;
  const box = section(body, "Resend");
  const actions = document.createElement("div");
  actions.className = "actions";
  box.appendChild(actions);
  button(actions, "Resend", "resend", "send this request again as a new exchange", () => resend(record.id, {}));
  button(actions, "Edit and resend", "edit-resend", "change the request, then send it", () => editResend(box, record));
}

async function editResend(box, record) {
  if (box.querySelector("#resend-method")) return;
  const headers = Object.entries(record.request_headers || {});
  let captured = { body: "", body_base64: "" };
  if (record.capture && record.capture.request) {
    const response = await fetch(`/exchanges/${record.id}/body/request`, { credentials: "same-origin" });
    if (response.ok) {
      const bytes = new Uint8Array(await response.arrayBuffer());
      let text;
      try { text = new TextDecoder("utf-8", { fatal: true }).decode(bytes); } catch { text = undefined; }
      captured = { body: text, body_base64: base64OfBytes(bytes) };
    }
  }
  const form = messageForm(box, "resend", { method: record.method, url: record.url, headers, ...captured }, true);
  const actions = document.createElement("div");
  actions.className = "actions";
  box.appendChild(actions);
  button(actions, "Send", "resend-send", "send the edited request as a new exchange", () => {
    let edits;
    try { edits = editsFrom(form); } catch (error) { showNotice(error.message); return; }
    resend(record.id, edits);
  });
}

async function resend(id, edits) {
  const result = await post(`/exchanges/${id}/resend`, edits);
  if (!result.ok) {
    showNotice(result.body.error || `resend failed (${result.status})`);
    return;
  }
  const created = result.body.id;
  showNotice(`exchange ${id} resent as ${created}`);
  // Its detail opens when its record arrives (or shortly, if it is still running), unless the
  // operator has looked elsewhere meanwhile.
  state.detailId = created;
  state.selectedId = created;
  setTimeout(() => { if (state.detailId === created) openDetail(created); }, 300);
}

// MARK: - Breakpoints from the filter box

async function refreshBreakpoints() {
  const response = await fetch("/breakpoints", { credentials: "same-origin" }).catch(() => null);
  if (!response || !response.ok) return;
  const body = await response.json();
  const list = $("breakpoints");
  list.replaceChildren();
  for (const rule of body.breakpoints) {
    const chip = document.createElement("span");
    chip.className = "chip";
    chip.dataset.id = rule.id;
    chip.textContent = `${rule.id}: ${rule.filter} (${rule.on.join("+")})`;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "×";
    remove.title = "remove this breakpoint";
    remove.addEventListener("click", async () => {
      await fetch("/breakpoints/" + rule.id, { method: "DELETE", credentials: "same-origin" });
      refreshBreakpoints();
    });
    chip.appendChild(remove);
    list.appendChild(chip);
  }
}

async function addBreakpoint() {
  const filter = $("filter").value.trim();
  if (!filter) { showNotice("type a filter first: the breakpoint pauses the exchanges it matches"); return; }
  const on = $("break-on").value.split("+");
  const result = await post("/breakpoints", { filter, on });
  showNotice(result.ok ? `breakpoint ${result.body.id} set: ${filter}` : (result.body.error || "the breakpoint was refused"));
  refreshBreakpoints();
}

/// r, a, n act on the held exchange in the detail pane (outside the editor's fields).
function operatorKey(event) {
  if (held.id === null || state.detailId !== held.id || event.ctrlKey || event.metaKey || event.altKey) return false;
  const action = { r: resumeHeld, a: abortHeld, n: answerHeld }[event.key];
  if (!action) return false;
  event.preventDefault();
  action();
  return true;
}

$("break").addEventListener("click", addBreakpoint);
setInterval(refreshBreakpoints, 3000);
refreshBreakpoints();
