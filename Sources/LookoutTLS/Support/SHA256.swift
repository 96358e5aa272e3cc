import CLookoutSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's EVP interface.
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = output.withUnsafeMutableBufferPointer { out in
            bytes.withUnsafeBytes { input in
                EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return output
    }
}
