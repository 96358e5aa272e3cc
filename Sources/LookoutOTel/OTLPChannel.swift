#if canImport(Glibc)
import Glibc
#endif
import LookoutModel
import LookoutTLS

extension OTLPPoster {
    /// One connection to the Collector, in clear or through TLS (OpenSSL over memory BIOs, as
    /// Lookout's upstream connections are), each step bounded by the request's deadline.
    struct Channel {
        let fd: Int32
        /// Each request's own: a kept connection gets the next request's.
        var deadline: UInt64
        var tls: TLSConnection?

        /// The TLS handshake, then the Collector's chain judged for `host` (RFC 6125 names).
        mutating func handshake(engine: TLSEngine, evaluator: DefaultTrustEvaluator, host: String) -> Failure? {
            let connection: TLSConnection
            do { connection = try engine.makeClientConnection(serverName: host) } catch {
                return .connect("cannot set up TLS: \(error)")
            }
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let status = connection.handshake()
                if let failure = sendRaw(connection.takeCiphertext()) { return failure }
                switch status {
                case .complete:
                    do {
                        try evaluator.evaluate(connection.peerCertificateChain, host: host, now: UnixTime.now())
                    } catch {
                        return .connect("the Collector's certificate is not trusted: \(error.message)")
                    }
                    tls = connection
                    return nil
                case .failed(let error):
                    return .connect("TLS handshake with the Collector failed: \(error)")
                case .wantIO:
                    switch readRaw(&buffer) {
                    case .success(0): return .io("the Collector closed the connection during the TLS handshake")
                    case .success(let count): connection.receiveCiphertext(Array(buffer[..<count]))
                    case .failure(let failure): return failure
                    }
                }
            }
        }

        /// Sends the parts one after the other, as one stream: in clear, each but the last with
        /// `MSG_MORE`, so a small head does not leave in a segment of its own.
        mutating func send(_ parts: [UnsafeRawBufferPointer]) -> Failure? {
            guard let tls else {
                for (index, part) in parts.enumerated() {
                    if let failure = sendRaw(part, more: index < parts.count - 1) { return failure }
                }
                return nil
            }
            for part in parts {
                var offset = 0
                while offset < part.count {
                    let written: Int
                    do { written = try tls.writePlaintext(UnsafeRawBufferPointer(rebasing: part[offset...])) } catch {
                        return .io("TLS write failed: \(error)")
                    }
                    if let failure = sendRaw(tls.takeCiphertext()) { return failure }
                    offset += written
                    if written == 0 { return .io("TLS write made no progress") }
                }
            }
            return nil
        }

        /// Appends what arrives next (waiting up to the deadline) to `data`; false at the end of the stream.
        mutating func readSome(into data: inout [UInt8]) -> Result<Bool, Failure> {
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                if let tls {
                    // Drain what is already decrypted before reading more ciphertext.
                    let result: TLSReadResult
                    do { result = try buffer.withUnsafeMutableBytes { try tls.readPlaintext(into: $0) } } catch {
                        return .failure(.io("TLS read failed: \(error)"))
                    }
                    switch result {
                    case .bytes(let count):
                        data += buffer[..<count]
                        return .success(true)
                    case .closed:
                        return .success(false)
                    case .wantsRead:
                        break
                    }
                }
                switch readRaw(&buffer) {
                case .success(0): return .success(false)
                case .success(let count):
                    guard let tls else {
                        data += buffer[..<count]
                        return .success(true)
                    }
                    tls.receiveCiphertext(Array(buffer[..<count]))
                case .failure(let failure): return .failure(failure)
                }
            }
        }

        private func sendRaw(_ bytes: [UInt8]) -> Failure? {
            bytes.withUnsafeBytes { sendRaw($0, more: false) }
        }

        private func sendRaw(_ bytes: UnsafeRawBufferPointer, more: Bool) -> Failure? {
            let flags = Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0)
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, flags)
                if n > 0 {
                    offset += n
                } else if n < 0 && (errno == EAGAIN || errno == EINTR) {
                    guard Self.wait(fd, Int16(POLLOUT), deadline: deadline) else { return .timedOut("sending to the Collector timed out") }
                } else {
                    return .io("sending to the Collector failed: \(String(cString: strerror(errno)))")
                }
            }
            return nil
        }

        /// One read: the count (0 at the end of the stream), waiting up to the deadline.
        private func readRaw(_ buffer: inout [UInt8]) -> Result<Int, Failure> {
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n >= 0 { return .success(n) }
                guard errno == EAGAIN || errno == EINTR else {
                    return .failure(.io("reading the Collector's answer failed: \(String(cString: strerror(errno)))"))
                }
                guard Self.wait(fd, Int16(POLLIN), deadline: deadline) else { return .failure(.timedOut("the Collector did not answer in time")) }
            }
        }

        /// Waits until `fd` is ready for `events` or the deadline passes.
        static func wait(_ fd: Int32, _ events: Int16, deadline: UInt64) -> Bool {
            while true {
                let now = Instant.now().nanoseconds
                guard now < deadline else { return false }
                var entry = pollfd(fd: fd, events: events, revents: 0)
                let ready = poll(&entry, 1, Int32(min(UInt64(Int32.max), (deadline - now) / 1_000_000 + 1)))
                if ready > 0 { return true }
                if ready < 0 && errno != EINTR { return false }
            }
        }
    }
}
