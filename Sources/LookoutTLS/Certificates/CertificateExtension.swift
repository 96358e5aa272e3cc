import CLookoutSSL

/// One extension of a certificate (RFC 5280 §4.1.2.9): its OpenSSL NID, whether it is
/// marked critical, and its DER value.
struct CertificateExtension {
    let nid: Int32
    let isCritical: Bool
    let value: [UInt8]
}

extension Certificate {
    /// Every extension, in certificate order.
    var extensions: [CertificateExtension] {
        var result: [CertificateExtension] = []
        for index in 0..<max(0, X509_get_ext_count(x509)) {
            guard let ext = X509_get_ext(x509, index) else { continue }
            let nid = OBJ_obj2nid(X509_EXTENSION_get_object(ext))
            var value: [UInt8] = []
            if let data = X509_EXTENSION_get_data(ext) {
                let length = Int(ASN1_STRING_length(data))
                if length > 0, let start = ASN1_STRING_get0_data(data) {
                    value = Array(UnsafeBufferPointer(start: start, count: length))
                }
            }
            result.append(CertificateExtension(nid: nid, isCritical: X509_EXTENSION_get_critical(ext) == 1, value: value))
        }
        return result
    }

    /// The subject's commonName values, as UTF-8 (RFC 5280 §4.1.2.6).
    var subjectCommonNames: [String] {
        guard let name = X509_get_subject_name(x509) else { return [] }
        var names: [String] = []
        var index: Int32 = -1
        while true {
            index = X509_NAME_get_index_by_NID(name, NID_commonName, index)
            guard index >= 0, let entry = X509_NAME_get_entry(name, index),
                  let data = X509_NAME_ENTRY_get_data(entry) else { break }
            var utf8: UnsafeMutablePointer<UInt8>?
            let length = ASN1_STRING_to_UTF8(&utf8, data)
            if length >= 0, let utf8 {
                names.append(String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self))
                CRYPTO_free(utf8, #fileID, #line)
            }
        }
        return names
    }

    /// Whether the subject is an empty name.
    var hasEmptySubject: Bool {
        guard let name = X509_get_subject_name(x509) else { return true }
        return X509_NAME_entry_count(name) == 0
    }

    /// Whether the issuer and subject names are the same (RFC 5280 §3.2 "self-issued").
    var isSelfIssued: Bool {
        X509_NAME_cmp(X509_get_subject_name(x509), X509_get_issuer_name(x509)) == 0
    }

    /// The serial number's sign and the length of its magnitude in bytes, leading zeros
    /// removed (RFC 5280 §4.1.2.2).
    var serialNumberShape: (negative: Bool, magnitudeBytes: [UInt8]) {
        guard let serial = X509_get0_serialNumber(x509) else { return (false, []) }
        let length = Int(ASN1_STRING_length(serial))
        var bytes = length > 0 ? Array(UnsafeBufferPointer(start: ASN1_STRING_get0_data(serial), count: length)) : []
        while bytes.first == 0 { bytes.removeFirst() }
        return (ASN1_STRING_type(serial) == V_ASN1_NEG_INTEGER, bytes)
    }

    /// The public key's algorithm, size in bits and, for EC keys, its curve's name.
    var publicKeyShape: (type: Int32, bits: Int32, curve: String?) {
        guard let key = X509_get0_pubkey(x509) else { return (0, 0, nil) }
        let type = EVP_PKEY_get_base_id(key)
        var curve: String?
        if type == EVP_PKEY_EC {
            var buffer = [CChar](repeating: 0, count: 64)
            var length = 0
            if EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1 {
                curve = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return (type, EVP_PKEY_get_bits(key), curve)
    }

    /// `X509_get_extension_flags` and the key-usage bits (all set when the extension is absent).
    var extensionFlags: (flags: UInt32, keyUsage: UInt32) {
        (X509_get_extension_flags(x509), X509_get_key_usage(x509))
    }
}
