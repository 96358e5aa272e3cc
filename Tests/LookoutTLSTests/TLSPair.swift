import LookoutTLS

/// A client and a server connection wired back to back in memory.
struct TLSPair {
    let client: TLSConnection
    let server: TLSConnection

    /// Moves all pending ciphertext client → server; returns the byte count.
    @discardableResult
    func clientToServer() -> Int {
        let bytes = client.takeCiphertext()
        server.receiveCiphertext(bytes)
        return bytes.count
    }

    /// Moves all pending ciphertext server → client; returns the byte count.
    @discardableResult
    func serverToClient() -> Int {
        let bytes = server.takeCiphertext()
        client.receiveCiphertext(bytes)
        return bytes.count
    }

    /// Drives both handshakes until both complete, one fails and nothing more moves, or
    /// 20 rounds pass.
    func handshake() -> (client: TLSHandshakeStatus, server: TLSHandshakeStatus) {
        var clientStatus = TLSHandshakeStatus.wantIO
        var serverStatus = TLSHandshakeStatus.wantIO
        for _ in 0..<20 {
            clientStatus = client.handshake()
            let sent = clientToServer()
            serverStatus = server.handshake()
            let received = serverToClient()
            if clientStatus == .complete && serverStatus == .complete { break }
            let failed = { (status: TLSHandshakeStatus) -> Bool in if case .failed = status { return true } else { return false } }
            if (failed(clientStatus) || failed(serverStatus)) && sent == 0 && received == 0 { break }
        }
        // A client finishing first leaves its Finished in flight; let the server see it.
        if clientStatus == .complete, serverStatus != .complete {
            clientToServer()
            serverStatus = server.handshake()
            serverToClient()
        }
        return (clientStatus, serverStatus)
    }

    /// Everything `connection` can decrypt now, and whether close_notify arrived.
    static func readAll(_ connection: TLSConnection) throws(TLSError) -> (bytes: [UInt8], closed: Bool) {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let outcome: Result<TLSReadResult, TLSError> = buffer.withUnsafeMutableBytes { raw in
                do throws(TLSError) { return .success(try connection.readPlaintext(into: raw)) } catch { return .failure(error) }
            }
            switch try outcome.get() {
            case .bytes(let count): result += buffer[0..<count]
            case .wantsRead: return (result, false)
            case .closed: return (result, true)
            }
        }
    }
}
