@testable import LookoutTLS

/// What Lookout reads of certificates: PEM bundles (configs, `lookout verify`, `lookout pin`),
/// DER, `sha256/` pins, and the Web PKI profile's DER reading of each certificate's extensions.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPEMAndDER(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (all, _) = pieces(data, size)
    var certificates = (try? Certificate.loadAll(pem: String(decoding: all, as: UTF8.self))) ?? []
    if let der = try? Certificate(der: all) { certificates.append(der) }
    for certificate in certificates {
        _ = certificate.subjectAlternativeNames
        _ = certificate.spkiSHA256Pin
        try? WebPKIProfile.check([certificate, certificate], host: "example.com") { _ in false }
    }
    _ = try? PublicKeyPin(String(decoding: all, as: UTF8.self))
    var reader = DERReader(all)
    _ = reader.all()
    _ = WebPKIProfile.isWellFormedAccess(all)
    return 0
}
