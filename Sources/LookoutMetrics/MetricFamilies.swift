import Prometheus

/// Names, help texts and buckets of every series Lookout exports (README "Metrics" lists them).
/// Descriptors are made when asked (they are not `Sendable`); only first uses of a series ask.
enum MetricFamilies {
    static func counter(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "lookout", metricName: name, unitName: "total", helpText: help)
    }

    static func gauge(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "lookout", metricName: name, unitName: "", helpText: help)
    }

    static var exchanges: MetricNameDescriptor { counter("exchanges", "Finished exchanges by kind, method, status class and error code (empty: none).") }
    static var phaseSeconds: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "lookout", metricName: "exchange_phase", unitName: "seconds",
            helpText: "Duration of each phase of every upstream attempt (dns, connect, tls, send, wait, receive; HAR's meaning) and of the whole exchange (total).")
    }
    static var requestBytes: MetricNameDescriptor { counter("request_bytes", "Request bytes sent upstream, heads and bodies, every attempt.") }
    static var responseBytes: MetricNameDescriptor { counter("response_bytes", "Response bytes received from upstream, heads and bodies, every attempt.") }
    static var tunnelBytes: MetricNameDescriptor { counter("tunnel_bytes", "Bytes relayed by tunnels and switched protocols (WebSocket), by direction; counted when the tunnel closes.") }
    static var upstreamRequests: MetricNameDescriptor { counter("upstream_requests", "Upstream attempts that got a connection: a new one, or one reused from the pool.") }
    static var trustEvaluations: MetricNameDescriptor { counter("trust_evaluations", "Upstream certificate evaluations by trust rule, result (passed, failed, reported) and reason.") }
    static var retries: MetricNameDescriptor { counter("retries", "Upstream attempts repeated by the retry policy (or on a stale pooled connection).") }
    static var redirects: MetricNameDescriptor { counter("redirects", "Redirects followed by the proxy (redirects.rules).") }
    static var simulated: MetricNameDescriptor {
        counter("simulated", "Requests simulate looked up in its recordings, by result (answered, missed).")
    }
    static var messages: MetricNameDescriptor {
        counter("messages", "Messages read inside WebSockets, event streams and gRPC calls, by protocol and direction (client_to_upstream, upstream_to_client).")
    }
    static var firstEventSeconds: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "lookout", metricName: "stream_first_event", unitName: "seconds",
                             helpText: "Time from a request's end to the origin's first event or message, by protocol (sse, ndjson, json-seq, grpc, grpc-web).")
    }
    static var gapSeconds: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "lookout", metricName: "stream_gap", unitName: "seconds",
                             helpText: "Gaps between an origin's consecutive events or messages, by protocol (sampled past 8192 gaps in one stream).")
    }
    static var policyDecisions: MetricNameDescriptor {
        counter("policy_decisions", "Egress policy decisions (policy), by role, decision (allow, deny) and mode.")
    }
    static var policyWouldDeny: MetricNameDescriptor {
        counter("policy_would_deny", "Exchanges and tunnels a report-mode role forwarded and enforce would have refused, by role.")
    }
    static var findings: MetricNameDescriptor {
        counter("findings", "Passive security findings (audit), by finding id and severity.")
    }
    static var otelDropped: MetricNameDescriptor {
        counter("otel_dropped", "Spans and log records the OpenTelemetry exporter dropped (a full queue, a refused batch, a flush out of time), by signal.")
    }
    static var otelExported: MetricNameDescriptor {
        counter("otel_exported", "Spans and log records the Collector took, by signal (traces, logs).")
    }
    static var cacheLookups: MetricNameDescriptor { counter("cache_lookups", "Shared cache lookups by result: hit, miss, stale, revalidated, bypass.") }
    static var connectionsRejected: MetricNameDescriptor { counter("connections_rejected", "Client connections refused before any request (access.clients, max_connections, shutdown), by error code.") }
    static var droppedEvents: MetricNameDescriptor { counter("monitor_events_dropped", "Events a monitor lost because its queue was full (log.queue_limit).") }

    static var loopSpins: MetricNameDescriptor { counter("event_loop_spins", "Times an event loop polled before sleeping (event_loop_spin_us).") }
    static var loopSpinSeconds: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "lookout", metricName: "event_loop_spin_seconds", unitName: "total",
                             helpText: "Time event loops spent polling before sleeping (event_loop_spin_us), in seconds.")
    }

    static var clientConnections: MetricNameDescriptor { gauge("client_connections_open", "Client connections open now.") }
    static var upstreamConnections: MetricNameDescriptor { gauge("upstream_connections_open", "Upstream connections open now (busy, pooled and tunnels').") }
    static var inFlight: MetricNameDescriptor { gauge("exchanges_in_flight", "Exchanges started and not yet finished.") }
    static var reachability: MetricNameDescriptor { gauge("reachability_status", "1 for the current network reachability status, 0 for the others (reachability.enabled).") }
    static var cacheObjects: MetricNameDescriptor { gauge("cache_objects", "Responses in the shared cache.") }
    static var cacheBytes: MetricNameDescriptor { gauge("cache_bytes", "Bytes the shared cache holds on disk.") }
    static var startTime: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "lookout", metricName: "start_time", unitName: "seconds",
                             helpText: "Unix time the proxy started.")
    }
    static var buildInfo: MetricNameDescriptor { gauge("build_info", "Always 1; the version is a label.") }

    /// From 0.5 ms (loopback) to a minute (a slow origin), in seconds.
    static let secondsBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
}
