import CLookoutSSL

/// What reading PEM files shares between certificates and revocation lists.
enum PEMReading {
    /// Whether `bytes` hold a PEM block ("-----BEGIN …") anywhere; else they are read as DER.
    static func looksLikePEM(_ bytes: [UInt8]) -> Bool {
        let marker = Array("-----BEGIN".utf8)
        return bytes.count >= marker.count
            && (0...(bytes.count - marker.count)).contains { start in bytes[start..<(start + marker.count)].elementsEqual(marker) }
    }

    /// After a `PEM_read_bio_*` loop: its end at the end of input (PEM_R_NO_START_LINE) is
    /// fine and cleared; any other queued error means a block was damaged.
    static func finishReading(_ source: String, what: String) throws(CertificateError) {
        let lastError = ERR_peek_last_error()
        let endOfInput = ERR_GET_LIB(lastError) == ERR_LIB_PEM && ERR_GET_REASON(lastError) == PEM_R_NO_START_LINE
        if lastError != 0 && !endOfInput {
            throw CertificateError.openSSL(.invalidPEM, "\(source): a \(what) block did not decode")
        }
        OpenSSLErrorQueue.clear()
    }
}
