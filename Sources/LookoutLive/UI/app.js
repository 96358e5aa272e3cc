// Lookout's live UI: a virtualised table of exchanges fed by /exchanges (the ring) and /events
// (Server-Sent Events), running exchanges from /exchanges?state=in_flight, and a detail pane from
// /exchanges/ID. Plain browser JavaScript, served by Lookout itself: nothing is fetched elsewhere.
"use strict";

const ROW_HEIGHT = 24;
const MAX_ROWS = 10000;          // the ring's default size: older rows leave the table
const OVERSCAN = 10;
const IN_FLIGHT_EVERY_MS = 1000;
const STATUS_EVERY_MS = 3000;

const state = {
  rows: [],                      // finished exchanges, newest first
  byId: new Map(),               // id -> finished record
  running: new Map(),            // id -> in-flight record
  view: [],                      // what the table shows: running first, then finished
  selectedId: null,
  filter: "",
  paused: false,
  pending: [],                   // records that arrived while paused
  lastSeq: null,
  source: null,
  dropped: 0,
  renderQueued: false,
  detailId: null,
};

const $ = (id) => document.getElementById(id);
const viewport = $("viewport");
const spacer = $("spacer");

// The token came in the address once and is a cookie now: keep it out of history and screenshots.
if (new URLSearchParams(location.search).has("token")) {
  const params = new URLSearchParams(location.search);
  params.delete("token");
  history.replaceState(null, "", location.pathname + (params.toString() ? "?" + params : ""));
}

// MARK: - Loading and streaming

async function load() {
  closeStream();
  state.rows = [];
  state.byId.clear();
  state.running.clear();
  state.pending = [];
  state.lastSeq = null;
  const query = new URLSearchParams({ limit: "1000" });
  if (state.filter) query.set("filter", state.filter);
  let response;
  try {
    response = await fetch("/exchanges?" + query, { credentials: "same-origin" });
  } catch (error) {
    setStreamState("down", "proxy unreachable");
    setTimeout(load, 2000);
    return;
  }
  if (response.status === 400) {
    const problem = await response.json();
    showFilterError(problem.error, problem.column);
    render();
    return;
  }
  if (response.status === 401) {
    setStreamState("down", "token needed: open /ui/?token=…");
    return;
  }
  showFilterError(null);
  const body = await response.json();
  for (const record of body.exchanges) {
    if (!shows(record)) continue;
    state.rows.push(record);
    state.byId.set(record.id, record);
    if (state.lastSeq === null || record.seq > state.lastSeq) state.lastSeq = record.seq;
  }
  updateHarLink();
  openStream();
  refreshInFlight();
  render();
}

function openStream() {
  const query = new URLSearchParams();
  if (state.filter) query.set("filter", state.filter);
  // Resume right after the newest record listed, so nothing is missed or repeated.
  if (state.lastSeq !== null) query.set("lastEventId", String(state.lastSeq));
  const source = new EventSource("/events?" + query);
  state.source = source;
  source.onopen = () => setStreamState("live", "live");
  source.onerror = () => setStreamState("down", "reconnecting…");
  source.onmessage = (message) => {
    let record;
    try { record = JSON.parse(message.data); } catch { return; }
    if (message.lastEventId) record.seq = Number(message.lastEventId);
    if (record.event !== "exchange" || !shows(record)) return;
    if (state.paused) {
      // Kept, not shown: the table holds still until Resume.
      state.pending.push(record);
      if (state.pending.length > MAX_ROWS) state.pending.shift();
      scheduleRender();
      return;
    }
    add(record);
  };
  source.addEventListener("dropped", (message) => {
    const count = JSON.parse(message.data).dropped || 0;
    state.dropped += count;
    showNotice(`${state.dropped} records were dropped: this browser read too slowly`);
  });
}

function closeStream() {
  if (state.source) state.source.close();
  state.source = null;
}

/// The proxy's own pages (this UI's requests among them) stay out of the table unless the filter
/// asks for them with `kind:admin`.
function shows(record) {
  return record.kind !== "admin" || /\bkind:admin\b/.test(state.filter);
}

function add(record) {
  if (state.byId.has(record.id) || !shows(record)) return;
  state.rows.unshift(record);
  state.byId.set(record.id, record);
  state.running.delete(record.id);
  if (state.rows.length > MAX_ROWS) state.byId.delete(state.rows.pop().id);
  if (record.seq !== undefined) state.lastSeq = record.seq;
  if (state.detailId === record.id) openDetail(record.id);
  scheduleRender();
}

async function refreshInFlight() {
  if (!state.paused) {
    const query = new URLSearchParams({ state: "in_flight", limit: "1000" });
    if (state.filter) query.set("filter", state.filter);
    try {
      const response = await fetch("/exchanges?" + query, { credentials: "same-origin" });
      if (response.ok) {
        const body = await response.json();
        state.running = new Map(body.exchanges.filter((r) => !state.byId.has(r.id)).map((r) => [r.id, r]));
        scheduleRender();
      }
    } catch { /* the stream state shows that the proxy is gone */ }
  }
}

async function refreshStatus() {
  try {
    const response = await fetch("/", { credentials: "same-origin" });
    if (!response.ok) return;
    const lines = (await response.text()).split("\n");
    const values = {};
    for (const line of lines) {
      const at = line.indexOf(": ");
      if (at > 0) values[line.slice(0, at)] = line.slice(at + 2);
    }
    const shown = [
      ["reachability", values.reachability],
      ["connections", values.open_connections],
      ["upstream", values.open_upstream_connections],
      ["in flight", values.exchanges_in_flight],
      ["finished", values.exchanges_finished],
      ["dropped events", values.dropped_events],
    ].filter(([, value]) => value !== undefined);
    const counters = $("counters");
    counters.textContent = shown.map(([name, value]) => `${name}: ${value}`).join("  ·  ");
    counters.dataset.reachability = values.reachability || "";
  } catch { /* shown by the stream state */ }
}

function setStreamState(kind, text) {
  const pill = $("stream-state");
  pill.className = "pill " + kind;
  pill.textContent = text;
}

function showNotice(text) {
  const notice = $("notice");
  notice.textContent = text;
  notice.hidden = !text;
}

// MARK: - Filter

let filterTimer = null;

function applyFilter() {
  clearTimeout(filterTimer);
  const text = $("filter").value.trim();
  if (text === state.filter && !$("filter").classList.contains("invalid")) return;
  state.filter = text;
  load();
}

function showFilterError(message, column) {
  const box = $("filter-error");
  const input = $("filter");
  if (!message) {
    box.hidden = true;
    input.classList.remove("invalid");
    return;
  }
  input.classList.add("invalid");
  box.hidden = false;
  // The caret sits under the column the parser names (1-based).
  $("filter-caret").textContent = column ? " ".repeat(Math.max(0, column - 1)) + "^ " : "";
  $("filter-message").textContent = message;
  box.dataset.column = column || "";
}

/// The HAR and the recording hold what the table shows: the filter's exchanges, without the
/// proxy's own pages unless the filter names them.
function updateHarLink() {
  let filter = state.filter;
  if (!/\bkind:admin\b/.test(filter)) filter = filter ? `(${filter}) and not kind:admin` : "not kind:admin";
  const query = new URLSearchParams({ filter });
  $("har").href = "/exchanges.har?" + query;
  $("recording").href = "/exchanges.tar.gz?" + query;
}

// MARK: - The table

function scheduleRender() {
  if (state.renderQueued) return;
  state.renderQueued = true;
  requestAnimationFrame(() => { state.renderQueued = false; render(); });
}

function render() {
  const running = [...state.running.values()].sort((a, b) => b.id - a.id);
  state.view = running.concat(state.rows);
  spacer.style.height = state.view.length * ROW_HEIGHT + "px";
  $("row-count").textContent = `${state.rows.length} exchanges` + (running.length ? `, ${running.length} running` : "")
    + (state.paused && state.pending.length ? `, ${state.pending.length} waiting` : "");
  drawRows();
}

function drawRows() {
  const first = Math.max(0, Math.floor(viewport.scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(state.view.length, Math.ceil((viewport.scrollTop + viewport.clientHeight) / ROW_HEIGHT) + OVERSCAN);
  const fragment = document.createDocumentFragment();
  for (let index = first; index < last; index++) fragment.appendChild(rowElement(state.view[index], index));
  spacer.replaceChildren(fragment);
}

function rowElement(record, index) {
  const row = document.createElement("div");
  const isRunning = record.state === "in_flight";
  const failed = !isRunning && (record.error || (record.status || 0) >= 500);
  const paused = isRunning && /^breakpoint_/.test(record.phase || "");
  row.className = "row" + (failed ? " failed" : "") + (isRunning ? " running" : "") + (paused ? " held" : "")
    + (record.simulated ? " simulated" : "")
    + (record.id === state.selectedId ? " selected" : "");
  row.style.top = index * ROW_HEIGHT + "px";
  row.dataset.id = record.id;
  row.dataset.index = index;
  const cells = [
    ["c-time", time(record)],
    ["c-client", record.client || ""],
    ["c-method", record.method || ""],
    ["c-url", record.url || ""],
    ["c-status", paused ? `held · ${record.phase.slice("breakpoint_".length)}`
      : isRunning ? `running · ${record.phase}` : (record.status ?? "—")],
    ["c-kind", record.kind || ""],
    ["c-code", record.error ? record.error.code : ""],
    ["c-ms", formatMs(record.timings_ms ? record.timings_ms.total : record.duration_ms)],
    ["c-bytes", formatBytes(bytesOf(record))],
  ];
  for (const [name, text] of cells) {
    const cell = document.createElement("span");
    cell.className = name;
    cell.textContent = String(text);
    if (name === "c-url") cell.title = record.url || "";
    row.appendChild(cell);
  }
  if (isRunning) {
    const cancel = document.createElement("button");
    cancel.className = "cancel";
    cancel.type = "button";
    cancel.textContent = "cancel";
    cancel.title = "cancel this exchange (DELETE /exchanges/" + record.id + ")";
    cancel.addEventListener("click", (event) => { event.stopPropagation(); cancelExchange(record.id); });
    // First in its cell, so a long phase name never hides it.
    row.querySelector(".c-status").prepend(cancel);
  }
  row.addEventListener("click", () => { select(record.id); openDetail(record.id); });
  return row;
}

function time(record) {
  if (!record.ts) return "";
  const date = new Date(record.ts);
  return isNaN(date) ? record.ts : date.toTimeString().slice(0, 8) + "." + String(date.getMilliseconds()).padStart(3, "0");
}

function bytesOf(record) {
  const bytes = record.bytes || {};
  if (record.kind === "tunnel") return (bytes.client_to_upstream || 0) + (bytes.upstream_to_client || 0);
  return (bytes.response_body || 0) + (bytes.client_to_upstream || 0) + (bytes.upstream_to_client || 0);
}

function formatMs(value) {
  if (value === undefined || value === null || value < 0) return "";
  return value >= 100 ? value.toFixed(0) : value.toFixed(2);
}

function formatBytes(value) {
  if (!value) return "0";
  if (value < 10 * 1024) return String(value);
  if (value < 10 * 1024 * 1024) return (value / 1024).toFixed(1) + " KiB";
  return (value / 1048576).toFixed(1) + " MiB";
}

function select(id) {
  state.selectedId = id;
  drawRows();
}

function moveSelection(step) {
  if (!state.view.length) return;
  let index = state.view.findIndex((r) => r.id === state.selectedId);
  index = index < 0 ? 0 : Math.min(state.view.length - 1, Math.max(0, index + step));
  state.selectedId = state.view[index].id;
  const top = index * ROW_HEIGHT;
  if (top < viewport.scrollTop) viewport.scrollTop = top;
  else if (top + ROW_HEIGHT > viewport.scrollTop + viewport.clientHeight) viewport.scrollTop = top + ROW_HEIGHT - viewport.clientHeight;
  drawRows();
}

async function cancelExchange(id) {
  const response = await fetch("/exchanges/" + id, { method: "DELETE", credentials: "same-origin" });
  const body = await response.json().catch(() => ({}));
  showNotice(response.ok ? `exchange ${id} cancelled` : (body.error || `cancelling ${id} failed`));
  refreshInFlight();
}

// MARK: - The detail pane

async function openDetail(id) {
  state.detailId = id;
  const pane = $("detail");
  pane.hidden = false;
  const running = state.running.get(id);
  let record = running;
  let events = [];
  if (!running) {
    const response = await fetch("/exchanges/" + id, { credentials: "same-origin" });
    if (response.ok) {
      const body = await response.json();
      record = body.exchange;
      events = body.events || [];
    } else {
      record = state.byId.get(id);
    }
  }
  if (!record || state.detailId !== id) return;
  $("detail-title").textContent = `#${record.id}  ${record.method} ${record.url}`;
  const body = $("detail-body");
  body.replaceChildren();
  body.dataset.id = id;
  renderDetail(body, record, events);
}

function closeDetail() {
  state.detailId = null;
  stopMessages();
  $("detail").hidden = true;
}

function section(parent, title) {
  const heading = document.createElement("h3");
  heading.textContent = title;
  parent.appendChild(heading);
  const box = document.createElement("div");
  box.className = "section-" + title.toLowerCase().replace(/[^a-z]+/g, "-");
  parent.appendChild(box);
  return box;
}

function keyValues(parent, pairs) {
  const table = document.createElement("table");
  table.className = "kv";
  for (const [key, value] of pairs) {
    if (value === undefined || value === null || value === "") continue;
    const row = table.insertRow();
    row.insertCell().textContent = key;
    row.insertCell().textContent = typeof value === "object" ? JSON.stringify(value) : String(value);
  }
  parent.appendChild(table);
  return table;
}

function renderDetail(body, record, events) {
  const isRunning = record.state === "in_flight";
  const overview = section(body, "Overview");
  keyValues(overview, [
    ["id", record.id], ["state", isRunning ? `running · ${record.phase}` : "finished"],
    ["status", record.status], ["kind", record.kind], ["client", record.client],
    ["http version", record.http_version], ["started", record.ts],
    ["attempts", record.attempts], ["redirects", record.redirects], ["final URL", record.final_url],
    ["upgrade", record.upgrade], ["resent from", record.resent_from], ["resent by", record.resent_by],
    ["modified by", (record.modified_by || []).join(", ")], ["held ms", record.held_ms],
    ["simulated", record.simulated ? `${record.simulated.recording} entry ${record.simulated.entry}` : ""],
    ["client JA4", record.tls && record.tls.client_ja4],
  ]);
  // The operator's part (operator.js): a held exchange's editor, or Resend on a finished one.
  if (isHeld(record)) renderHeld(body, record);
  else if (!isRunning) renderResend(body, record);
  if (isRunning) {
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.className = "cancel";
    cancel.id = "detail-cancel";
    cancel.textContent = "cancel this exchange";
    cancel.addEventListener("click", () => cancelExchange(record.id));
    overview.appendChild(cancel);
  }
  if (record.error) {
    const box = section(body, "Error");
    const error = document.createElement("div");
    error.className = "error-box";
    error.id = "detail-error";
    error.textContent = `${record.error.code}: ${record.error.message}`
      + (record.error.cancelled_by ? ` (cancelled by ${record.error.cancelled_by})` : "")
      + (record.error.aborted_by ? ` (aborted by ${record.error.aborted_by})` : "");
    box.appendChild(error);
  }
  if (record.findings && record.findings.length) {
    const list = document.createElement("ol");
    list.className = "attempts findings";
    for (const finding of record.findings) {
      const item = document.createElement("li");
      item.className = "finding " + finding.severity;
      item.textContent = `${finding.severity} · ${finding.id} (CWE-${finding.cwe}) · ${finding.evidence}`;
      list.appendChild(item);
    }
    section(body, "Findings").appendChild(list);
  }
  waterfall(section(body, "Timing"), record.timings_ms || {});
  if (record.kind === "tunnel" || record.upgrade) {
    const bytes = record.bytes || {};
    keyValues(section(body, "Tunnel"), [
      ["client → upstream", bytes.client_to_upstream], ["upstream → client", bytes.upstream_to_client],
      ["duration ms", record.duration_ms],
    ]);
  } else if (record.bytes) {
    keyValues(section(body, "Bytes"), Object.entries(record.bytes));
  }
  const attempts = record.transactions || (record.upstream ? [Object.assign({ url: record.final_url || record.url, status: record.status }, record.upstream)] : []);
  if (attempts.length) {
    const list = document.createElement("ol");
    list.className = "attempts";
    for (const attempt of attempts) {
      const item = document.createElement("li");
      const timing = attempt.timings_ms ? ` · ${formatMs(attempt.timings_ms.total)} ms` : "";
      item.textContent = `${attempt.url || ""} → ${attempt.status ?? attempt.error ?? "—"} · ${attempt.address || ""}`
        + `${attempt.reused ? " (reused)" : ""}${attempt.proxy ? " via " + attempt.proxy : ""}${timing}`;
      list.appendChild(item);
    }
    section(body, "Attempts").appendChild(list);
  }
  if (record.cache) keyValues(section(body, "Cache"), Object.entries(record.cache));
  const tls = record.upstream && record.upstream.tls;
  if (tls) tlsSection(section(body, "TLS"), tls, record);
  if (record.request_headers) keyValues(section(body, "Request headers"), Object.entries(record.request_headers));
  if (record.response_headers) keyValues(section(body, "Response headers"), Object.entries(record.response_headers));
  renderMessages(body, record);
  if (record.capture) {
    for (const which of ["request", "response"]) {
      if (record.capture[which]) capturedBody(section(body, which === "request" ? "Request body" : "Response body"), record, which);
    }
  }
  if (events.length) {
    const list = document.createElement("ol");
    list.className = "attempts";
    for (const event of events) {
      const item = document.createElement("li");
      const { v, ts, event: name, id, conn, task, ...rest } = event;
      item.textContent = `${(ts || "").slice(11, 23)} ${name} ${Object.keys(rest).length ? JSON.stringify(rest) : ""}`;
      list.appendChild(item);
    }
    section(body, "Events").appendChild(list);
  }
}

function waterfall(parent, timings) {
  const phases = ["blocked", "dns", "connect", "tls", "send", "wait", "receive"];
  const total = timings.total > 0 ? timings.total : phases.reduce((sum, p) => sum + Math.max(0, timings[p] || 0), 0) || 1;
  const grid = document.createElement("div");
  grid.className = "waterfall";
  grid.id = "waterfall";
  let offset = 0;
  for (const phase of phases) {
    const value = timings[phase];
    if (value === undefined || value < 0) continue;
    const label = document.createElement("span");
    label.textContent = phase;
    const track = document.createElement("div");
    track.className = "track";
    const bar = document.createElement("div");
    bar.className = "bar " + phase;
    bar.style.left = Math.min(100, (offset / total) * 100) + "%";
    bar.style.width = Math.min(100, (value / total) * 100) + "%";
    track.appendChild(bar);
    const number = document.createElement("span");
    number.className = "num";
    number.dataset.phase = phase;
    number.dataset.ms = String(value);
    number.textContent = formatMs(value) + " ms";
    grid.append(label, track, number);
    offset += value;
  }
  const label = document.createElement("strong");
  label.textContent = "total";
  const number = document.createElement("strong");
  number.className = "num";
  number.dataset.phase = "total";
  number.dataset.ms = String(timings.total);
  number.textContent = formatMs(timings.total) + " ms";
  grid.append(label, document.createElement("span"), number);
  parent.appendChild(grid);
}

function tlsSection(parent, tls, record) {
  const trust = tls.trust || {};
  keyValues(parent, [
    ["version", tls.version], ["cipher", tls.cipher], ["ALPN", tls.alpn], ["SNI", tls.sni],
    ["resumed", tls.resumed], ["trust rule", trust.rule], ["evaluator", trust.evaluator],
    ["decision", trust.result], ["reason", trust.reason], ["message", trust.message],
    ["client certificate", tls.client_certificate ? tls.client_certificate.subject : undefined],
    ["origin JA4S", tls.ja4s],
  ]);
  const pins = trust.presented_pins || [];
  if (pins.length) {
    const line = "pins: [" + pins.map((pin) => JSON.stringify(pin)).join(", ") + "]";
    const row = document.createElement("div");
    row.className = "pins";
    const field = document.createElement("input");
    field.readOnly = true;
    field.id = "pins-line";
    field.value = line;
    const copy = document.createElement("button");
    copy.type = "button";
    copy.textContent = "copy pins: line";
    copy.addEventListener("click", async () => {
      field.select();
      try { await navigator.clipboard.writeText(line); } catch { document.execCommand("copy"); }
      copy.textContent = "copied";
    });
    row.append(field, copy);
    parent.appendChild(row);
  }
}

async function capturedBody(parent, record, which) {
  const url = `/exchanges/${record.id}/body/${which}?decoded=1`;
  const headers = record[which + "_headers"] || {};
  const type = (headers["content-type"] || "").toLowerCase();
  const link = document.createElement("a");
  link.href = `/exchanges/${record.id}/body/${which}`;
  link.textContent = "raw body";
  link.download = `${record.id}.${which}`;
  parent.appendChild(link);
  if (record.capture.truncated) parent.append(" (cut at capture.max_body_bytes)");
  if (type.startsWith("image/")) {
    const image = document.createElement("img");
    image.className = "body";
    image.alt = `${which} body (${type})`;
    image.src = url;
    parent.appendChild(image);
    return;
  }
  const response = await fetch(url, { credentials: "same-origin" });
  const pre = document.createElement("pre");
  pre.className = "body";
  pre.dataset.which = which;
  if (!response.ok) {
    const problem = await response.json().catch(() => ({}));
    pre.textContent = problem.error || `HTTP ${response.status}`;
    parent.appendChild(pre);
    return;
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  const shown = bytes.subarray(0, 1 << 20);
  let text = null;
  try { text = new TextDecoder("utf-8", { fatal: true }).decode(shown); } catch { text = null; }
  if (text !== null && (type.includes("json") || /^\s*[\[{]/.test(text))) {
    try {
      text = JSON.stringify(JSON.parse(text), null, 2);
      pre.dataset.format = "json";
    } catch { pre.dataset.format = "text"; }
  } else if (text !== null && !/[\x00-\x08\x0e-\x1f]/.test(text)) {
    pre.dataset.format = "text";
  } else {
    text = hexDump(shown.subarray(0, 64 * 1024));
    pre.dataset.format = "hex";
  }
  pre.textContent = text + (bytes.length > shown.length ? `\n… ${bytes.length - shown.length} more bytes` : "");
  parent.appendChild(pre);
}

function hexDump(bytes) {
  const lines = [];
  for (let offset = 0; offset < bytes.length; offset += 16) {
    const slice = bytes.subarray(offset, offset + 16);
    const hex = Array.from(slice, (b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = Array.from(slice, (b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join("");
    lines.push(offset.toString(16).padStart(8, "0") + "  " + hex.padEnd(48) + "  " + ascii);
  }
  return lines.join("\n");
}

// MARK: - Controls and keys

$("pause").addEventListener("click", () => {
  state.paused = !state.paused;
  const button = $("pause");
  button.textContent = state.paused ? "Resume" : "Pause";
  button.classList.toggle("active", state.paused);
  if (!state.paused) {
    const waiting = state.pending;
    state.pending = [];
    for (const record of waiting) add(record);
    refreshInFlight();
  }
  render();
});

$("clear").addEventListener("click", () => {
  state.rows = [];
  state.byId.clear();
  state.running.clear();
  state.pending = [];
  state.selectedId = null;
  showNotice("");
  render();
});

$("filter").addEventListener("keydown", (event) => {
  if (event.key === "Enter") { event.preventDefault(); applyFilter(); }
  if (event.key === "Escape") { $("filter").blur(); $("table").focus(); }
});
$("filter").addEventListener("input", () => {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(applyFilter, 400);
});
$("detail-close").addEventListener("click", closeDetail);
viewport.addEventListener("scroll", drawRows, { passive: true });
window.addEventListener("resize", drawRows);

document.addEventListener("keydown", (event) => {
  const typing = event.target instanceof HTMLInputElement;
  if (event.key === "/" && !typing) {
    event.preventDefault();
    $("filter").focus();
    $("filter").select();
  } else if (typing || event.target instanceof HTMLTextAreaElement) {
    return;
  } else if (operatorKey(event)) {
    return;
  } else if (event.key === "ArrowDown") {
    event.preventDefault();
    moveSelection(1);
  } else if (event.key === "ArrowUp") {
    event.preventDefault();
    moveSelection(-1);
  } else if (event.key === "Enter" && state.selectedId !== null) {
    event.preventDefault();
    openDetail(state.selectedId);
  } else if (event.key === "Escape") {
    closeDetail();
  }
});

setInterval(refreshInFlight, IN_FLIGHT_EVERY_MS);
setInterval(refreshStatus, STATUS_EVERY_MS);
refreshStatus();
load();
