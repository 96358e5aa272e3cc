// The Messages pane: what passed inside a WebSocket, an event stream or a gRPC call, one row per
// message with its direction, time and size, JSON pretty-printed, gRPC messages as protobuf
// fields (by name when the proxy has descriptor sets), other bytes as hex. A running exchange's
// pane fills live from the event stream.
"use strict";

const messagesView = { source: null, seen: new Set(), descriptors: null };

function hasMessages(record) {
  return Boolean(record.messages || record.upgrade === "websocket" || (record.capture && record.capture.messages));
}

function stopMessages() {
  if (messagesView.source) messagesView.source.close();
  messagesView.source = null;
  messagesView.seen = new Set();
}

async function renderMessages(body, record) {
  stopMessages();
  if (!hasMessages(record)) return;
  const box = section(body, "Messages");
  const m = record.messages || {};
  keyValues(box, [
    ["protocol", m.protocol || record.upgrade], ["count", m.count],
    ["client → upstream", m.client_to_upstream && `${m.client_to_upstream.count} · ${formatBytes(m.client_to_upstream.bytes)}`],
    ["upstream → client", m.upstream_to_client && `${m.upstream_to_client.count} · ${formatBytes(m.upstream_to_client.bytes)}`],
    ["first event ms", m.first_event_ms], ["gaps ms (p50 / p99 / max)", m.gaps_ms && `${m.gaps_ms.p50} / ${m.gaps_ms.p99} / ${m.gaps_ms.max}`],
    ["close", m.close_code && `${m.close_code}${m.close_reason ? " " + m.close_reason : ""}${m.closed_by ? " by " + m.closed_by : ""}`],
    ["grpc status", m.grpc_status], ["grpc message", m.grpc_message], ["decoding", m.decoding !== "full" ? m.decoding : ""],
  ]);
  const list = document.createElement("ol");
  list.id = "messages-list";
  list.className = "messages";
  box.appendChild(list);
  const grpc = (m.protocol || "").startsWith("grpc") ? await grpcTypes(record) : null;
  if (record.state === "in_flight") follow(record, list, grpc);
  const response = await fetch(`/exchanges/${record.id}/messages`, { credentials: "same-origin" });
  if (!response.ok) return;
  for (const line of (await response.text()).split("\n")) {
    if (!line) continue;
    try { addMessage(list, normalized(JSON.parse(line)), grpc); } catch { /* a cut last line */ }
  }
}

/// The records of a running exchange as they happen (lifecycle records are kept while asked for).
function follow(record, list, grpc) {
  const filter = encodeURIComponent(`id:${record.id}`);
  const source = new EventSource(`/events?verbose=1&filter=${filter}`);
  messagesView.source = source;
  source.onmessage = (message) => {
    let event;
    try { event = JSON.parse(message.data); } catch { return; }
    if (event.event === "ws.message" || event.event === "stream.event") addMessage(list, normalized(event), grpc);
  };
}

/// One shape for a capture line and a `ws.message`/`stream.event` record.
function normalized(raw) {
  return {
    from: raw.from, ms: raw.ms,
    kind: raw.type || raw.opcode || raw.event_name || raw.format || "message",
    size: raw.bytes ?? raw.wire_bytes, index: raw.index,
    text: raw.text ?? raw.preview, base64: raw.base64 ?? raw.preview_base64,
    truncated: Boolean(raw.truncated || raw.preview_truncated), close: raw.close_code,
  };
}

function addMessage(list, message, grpc) {
  const key = `${message.from}|${message.ms}|${message.kind}|${message.size}`;
  if (messagesView.seen.has(key) || list.children.length >= 5000) return;
  messagesView.seen.add(key);
  const item = document.createElement("li");
  item.className = "message " + (message.from === "client" ? "sent" : "received");
  const head = document.createElement("div");
  head.className = "message-head";
  head.textContent = `${message.from === "client" ? "→" : "←"} +${formatMs(message.ms)} ms  ${message.kind}`
    + `  ${message.size !== undefined ? formatBytes(message.size) : ""}${message.close ? "  code " + message.close : ""}`;
  item.appendChild(head);
  const content = messageContent(message, grpc && grpc[message.from === "client" ? "input" : "output"]);
  if (content) item.appendChild(content);
  list.appendChild(item);
}

function messageContent(message, type) {
  const pre = document.createElement("pre");
  pre.className = "message-body";
  if (message.text !== undefined && message.text !== null) {
    try {
      pre.textContent = JSON.stringify(JSON.parse(message.text), null, 2);
      pre.dataset.format = "json";
    } catch {
      pre.textContent = message.text;
      pre.dataset.format = "text";
    }
  } else if (message.base64) {
    const bytes = Uint8Array.from(atob(message.base64), (c) => c.charCodeAt(0));
    const fields = type !== undefined ? protobufLines(bytes, type, 0) : null;
    pre.textContent = fields ? fields.join("\n") : hexDump(bytes);
    pre.dataset.format = fields ? "protobuf" : "hex";
  } else {
    return null;
  }
  if (message.truncated) pre.textContent += "\n…";
  return pre;
}

// MARK: - Protobuf wire format (https://protobuf.dev/programming-guides/encoding/)

function varint(bytes, at) {
  let value = 0n, shift = 0n;
  for (let i = at; i < bytes.length && i < at + 10; i++) {
    value |= BigInt(bytes[i] & 0x7f) << shift;
    if (!(bytes[i] & 0x80)) return [value, i + 1];
    shift += 7n;
  }
  return [0n, -1];
}

/// `bytes` as `name (number): value` lines, nested messages indented; null when they are not a
/// protobuf message. `type` is a message type from the descriptor sets, or null (numbers only).
function protobufLines(bytes, type, depth) {
  const lines = [];
  const pad = "  ".repeat(depth);
  let i = 0;
  while (i < bytes.length) {
    const [key, next] = varint(bytes, i);
    if (next < 0) return null;
    i = next;
    const number = Number(key >> 3n), wire = Number(key & 7n);
    if (number === 0) return null;
    const field = type && type.fields[number];
    const label = field ? `${field.name} (${number})` : String(number);
    if (wire === 0) {
      const [value, after] = varint(bytes, i);
      if (after < 0) return null;
      i = after;
      lines.push(`${pad}${label}: ${value}`);
    } else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      if (i + size > bytes.length) return null;
      lines.push(`${pad}${label}: 0x${Array.from(bytes.subarray(i, i + size)).reverse().map((b) => b.toString(16).padStart(2, "0")).join("")}`);
      i += size;
    } else if (wire === 2) {
      const [length, after] = varint(bytes, i);
      if (after < 0 || after + Number(length) > bytes.length) return null;
      const inner = bytes.subarray(after, after + Number(length));
      i = after + Number(length);
      const innerType = field && field.type ? messagesView.descriptors.types[field.type] : null;
      const nested = depth < 8 && inner.length && (!field || innerType) ? protobufLines(inner, innerType || null, depth + 1) : null;
      let text = null;
      try { text = new TextDecoder("utf-8", { fatal: true }).decode(inner); } catch { text = null; }
      if (nested && (!text || innerType || /[\x00-\x08\x0e-\x1f]/.test(text))) {
        lines.push(`${pad}${label} {`, ...nested, `${pad}}`);
      } else if (text !== null && !/[\x00-\x08\x0e-\x1f]/.test(text)) {
        lines.push(`${pad}${label}: ${JSON.stringify(text)}`);
      } else {
        lines.push(`${pad}${label}: <${inner.length} bytes> ${Array.from(inner.subarray(0, 32), (b) => b.toString(16).padStart(2, "0")).join("")}`);
      }
    } else {
      return null;
    }
  }
  return lines;
}

// MARK: - Descriptor sets (grpc.descriptor_sets): FileDescriptorSet, read with the same decoder

/// The call's input and output message types, by its URL path `/package.Service/Method`.
async function grpcTypes(record) {
  if (messagesView.descriptors === null) {
    messagesView.descriptors = { types: {}, methods: {} };
    const response = await fetch("/grpc/descriptors", { credentials: "same-origin" });
    if (response.ok) readDescriptorSets(new Uint8Array(await response.arrayBuffer()));
  }
  const path = new URL(record.url).pathname.replace(/^\//, "").replace("/", ".");
  const method = messagesView.descriptors.methods[path];
  if (!method) return { input: null, output: null };
  return { input: messagesView.descriptors.types[method.input] || null, output: messagesView.descriptors.types[method.output] || null };
}

/// The fields of a message as [number, wire, bytes or value].
function rawFields(bytes) {
  const out = [];
  let i = 0;
  while (i < bytes.length) {
    const [key, next] = varint(bytes, i);
    if (next < 0) break;
    i = next;
    const number = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) { const [v, a] = varint(bytes, i); if (a < 0) break; i = a; out.push([number, v]); }
    else if (wire === 2) { const [l, a] = varint(bytes, i); if (a < 0) break; out.push([number, bytes.subarray(a, a + Number(l))]); i = a + Number(l); }
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else break;
  }
  return out;
}

const utf8Text = (bytes) => new TextDecoder().decode(bytes);

function readDescriptorSets(bytes) {
  const view = messagesView.descriptors;
  for (const [number, file] of rawFields(bytes)) {
    if (number !== 1) continue;
    const fields = rawFields(file);
    const pkg = fields.filter(([n]) => n === 2).map(([, v]) => utf8Text(v))[0] || "";
    const scope = pkg ? "." + pkg : "";
    for (const [n, v] of fields) {
      if (n === 4) readMessage(v, scope);
      if (n === 6) {
        const service = rawFields(v);
        const name = service.filter(([k]) => k === 1).map(([, s]) => utf8Text(s))[0];
        for (const [k, method] of service) {
          if (k !== 2) continue;
          const parts = Object.fromEntries(rawFields(method).filter(([m]) => m <= 3).map(([m, s]) => [m, utf8Text(s)]));
          view.methods[`${pkg ? pkg + "." : ""}${name}.${parts[1]}`] = { input: parts[2], output: parts[3] };
        }
      }
    }
  }
}

function readMessage(bytes, scope) {
  const fields = rawFields(bytes);
  const name = fields.filter(([n]) => n === 1).map(([, v]) => utf8Text(v))[0];
  const full = `${scope}.${name}`;
  const type = { name: full, fields: {} };
  for (const [n, v] of fields) {
    if (n === 2) {
      const parts = Object.fromEntries(rawFields(v).map(([k, value]) => [k, value]));
      const fieldName = parts[1] ? utf8Text(parts[1]) : "?";
      type.fields[Number(parts[3])] = { name: fieldName, type: parts[6] ? utf8Text(parts[6]) : null };
    }
    if (n === 3) readMessage(v, full);
  }
  messagesView.descriptors.types[full] = type;
}
