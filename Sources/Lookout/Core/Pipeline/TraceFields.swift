import HTTPTypes

/// W3C Trace Context's fields, written lowercase as the recommendation names them (Trace Context
/// §3.2, §3.3). HTTPTypes' own `.traceparent` writes "Traceparent" on the wire; names are
/// case-insensitive in HTTP, but instrumented servers commonly read the fields from a plain
/// dictionary of the received names (OpenTelemetry's default getter), where only the lowercase
/// name is found.
package enum TraceFields {
    package static let parent = HTTPField.Name("traceparent")!
    package static let state = HTTPField.Name("tracestate")!
}
