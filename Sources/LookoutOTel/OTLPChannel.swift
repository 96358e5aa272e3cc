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
        let deadline: UInt64
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

        mutating func send(_ bytes: [UInt8]) -> Failure? {
            guard let tls else { return sendRaw(bytes) }
            var offset = 0
            while offset < bytes.count {
                let written: Int
                do { written = try bytes[offset...].withUnsafeBytes { try tls.writePlaintext($0) } } catch {
                    return .io("TLS write failed: \(error)")
                }
                if let failure = sendRaw(tls.takeCiphertext()) { return failure }
                offset += written
                if written == 0 { return .io("TLS write made no progress") }
            }
            return nil
        }

        /// Everything until the Collector closes (the request said `Connection: close`), 4 MiB at most.
        mutating func receiveAll() -> Result<[UInt8], Failure> {
            var data: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            var plain = [UInt8](repeating: 0, count: 16 * 1024)
            while data.count < 4 << 20 {
                if let tls {
                    // Drain what is already decrypted before reading more ciphertext.
                    let result: TLSReadResult
                    do { result = try plain.withUnsafeMutableBytes { try tls.readPlaintext(into: $0) } } catch {
                        return .failure(.io("TLS read failed: \(error)"))
                    }
                    switch result {
                    case .bytes(let count):
                        data += plain[..<count]
                        continue
                    case .closed:
                        return .success(data)
                    case .wantsRead:
                        break
                    }
                }
                switch readRaw(&buffer) {
                case .success(0): return .success(data)
                case .success(let count):
                    if let tls { tls.receiveCiphertext(Array(buffer[..<count])) } else { data += buffer[..<count] }
                case .failure(let failure): return .failure(failure)
                }
            }
            return .success(data)
        }

        private func sendRaw(_ bytes: [UInt8]) -> Failure? {
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
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
