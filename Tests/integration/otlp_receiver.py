"""An OTLP/HTTP receiver for the tests, built on the official protocol definitions (PyPI
`opentelemetry-proto`): it decodes every batch — http/protobuf with the generated classes,
http/json by the OTLP JSON mapping — and keeps the spans and log records, with what each
request looked like. Its answers can be scripted (a status and Retry-After per request)."""

from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from google.protobuf.json_format import MessageToDict


def _attributes(items) -> dict:
    out = {}
    for kv in items:
        value = kv["value"]
        if "stringValue" in value:
            out[kv["key"]] = value["stringValue"]
        elif "intValue" in value:
            out[kv["key"]] = int(value["intValue"])
        elif "doubleValue" in value:
            out[kv["key"]] = float(value["doubleValue"])
        elif "boolValue" in value:
            out[kv["key"]] = value["boolValue"]
        elif "arrayValue" in value:
            out[kv["key"]] = [v.get("stringValue") for v in value["arrayValue"].get("values", [])]
        else:
            out[kv["key"]] = None
    return out


class Receiver:
    """`keep_alive`: answer in HTTP/1.1 and keep connections open; `close_after`: then close a
    connection silently (no `Connection: close`) after that many answers on it, as a Collector
    closing an idle connection does. Each request records the client's port (`peer`)."""

    def __init__(self, port: int = 0, tls=None, keep_alive: bool = False, close_after: int = 0):
        self.spans: list[dict] = []
        self.logs: list[dict] = []
        self.requests: list[dict] = []
        self.resources: list[dict] = []
        self.script: list[tuple[int, dict]] = []   # answers to give first, in order
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"
            answered = 0

            def log_message(self, *args):
                pass

            def end_headers(self):
                super().end_headers()
                self.answered += 1
                if close_after and self.answered >= close_after:
                    self.close_connection = True

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                info = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                        "bytes": len(body), "time": time.monotonic(), "peer": self.client_address[1]}
                with receiver.lock:
                    receiver.requests.append(info)
                    scripted = receiver.script.pop(0) if receiver.script else None
                if scripted:
                    status, headers = scripted
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                json_wire = self.headers.get("Content-Type", "").startswith("application/json")
                receiver.take(self.path, body, json_wire)
                self.send_response(200)
                self.send_header("Content-Type", "application/json" if json_wire else "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.scheme = "http"
        if tls:
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        host = "localhost" if self.scheme == "https" else "127.0.0.1"
        return f"{self.scheme}://{host}:{self.port}"

    def take(self, path: str, body: bytes, json_wire: bool):
        if path.endswith("/v1/traces"):
            if json_wire:
                document = json.loads(body)
            else:
                document = MessageToDict(trace_service_pb2.ExportTraceServiceRequest.FromString(body))
                _hex_ids(document)
            for resource_spans in document.get("resourceSpans", []):
                resource = _attributes(resource_spans.get("resource", {}).get("attributes", []))
                for scope in resource_spans.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        span["attrs"] = _attributes(span.get("attributes", []))
                        for event in span.get("events", []):
                            event["attrs"] = _attributes(event.get("attributes", []))
                        with self.lock:
                            self.spans.append(span)
                            self.resources.append(resource)
        elif path.endswith("/v1/logs"):
            if json_wire:
                document = json.loads(body)
            else:
                document = MessageToDict(logs_service_pb2.ExportLogsServiceRequest.FromString(body))
                _hex_ids(document)
            for resource_logs in document.get("resourceLogs", []):
                for scope in resource_logs.get("scopeLogs", []):
                    for record in scope.get("logRecords", []):
                        record["attrs"] = _attributes(record.get("attributes", []))
                        with self.lock:
                            self.logs.append(record)

    def wait_spans(self, count: int, timeout: float = 10) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.spans) >= count:
                    return list(self.spans)
            time.sleep(0.05)
        raise AssertionError(f"{len(self.spans)} spans arrived, {count} expected")

    def wait_logs(self, count: int, timeout: float = 10) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.logs) >= count:
                    return list(self.logs)
            time.sleep(0.05)
        raise AssertionError(f"{len(self.logs)} log records arrived, {count} expected")

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _hex_ids(node):
    """MessageToDict writes bytes as base64; OTLP/JSON (and these tests) use hex for the ids."""
    import base64
    if isinstance(node, dict):
        for key, value in list(node.items()):
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)
