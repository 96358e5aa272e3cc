import CLookoutSSL

/// Reads OpenSSL's per-thread error queue.
///
/// OpenSSL records failures in a thread-local queue. The queue must be empty before an SSL
/// I/O call so that `SSL_get_error` explains that call and nothing older, and it must be
/// drained after a failure so a later call does not inherit the entries.
enum OpenSSLErrorQueue {
    /// Empties the queue without reading it. Runs before every SSL read and write, and the queue
    /// is almost always empty already: `ERR_clear_error` resets all 16 slots whatever they hold
    /// (about 100 ns here), while `ERR_peek_error` only compares the queue's ends (about 14 ns).
    /// `SSL_get_error` consults the queue through `ERR_peek_error` alone, so a queue it calls
    /// empty explains the next call as well as a cleared one.
    static func clear() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// Removes every entry and returns them, oldest first, as
    /// `ERR_error_string_n` renders them ("error:0A000102:SSL routines::unsupported protocol").
    static func drain() -> [String] {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            messages.append(describe(code))
        }
        return messages
    }

    /// Removes every entry and returns the short reason strings ("unsupported protocol")
    /// alongside the full renderings.
    static func drainDetailed() -> (full: [String], reasons: [String]) {
        var full: [String] = []
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            full.append(describe(code))
            if let reason = ERR_reason_error_string(code) {
                reasons.append(String(cString: reason))
            }
        }
        return (full, reasons)
    }

    /// One queue entry as text.
    static func describe(_ code: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        return buffer.withUnsafeMutableBufferPointer { pointer in
            ERR_error_string_n(code, pointer.baseAddress, pointer.count)
            return String(cString: pointer.baseAddress!)
        }
    }

    /// `context` followed by whatever OpenSSL queued, e.g.
    /// "PEM_read_bio_X509 failed: error:0480006C:PEM routines::no start line".
    static func message(_ context: String) -> String {
        let entries = drain()
        return entries.isEmpty ? context : "\(context): \(entries.joined(separator: "; "))"
    }
}
