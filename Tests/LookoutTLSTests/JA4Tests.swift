import Testing
@testable import LookoutTLS

/// A ClientHello record with these fields (extension bodies filled where JA4 reads them).
func clientHelloRecord(ciphers: [UInt16], extensions: [UInt16], alpn: [String], versions: [UInt16], signatures: [UInt16],
                       serverName: String = "example.com") -> [UInt8] {
    func u16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }
    func u16(_ v: Int) -> [UInt8] { u16(UInt16(v)) }
    var extensionBytes: [UInt8] = []
    for type in extensions {
        var data: [UInt8] = []
        switch type {
        case 0x0000:
            let name = Array(serverName.utf8)
            data = u16(name.count + 3) + [0] + u16(name.count) + name
        case 0x0010:
            let list = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            data = u16(list.count) + list
        case 0x002b:
            data = [UInt8(versions.count * 2)] + versions.flatMap { u16($0) }
        case 0x000d:
            data = u16(signatures.count * 2) + signatures.flatMap { u16($0) }
        default:
            data = []
        }
        extensionBytes += u16(type) + u16(data.count) + data
    }
    var hello: [UInt8] = u16(0x0303) + [UInt8](repeating: 7, count: 32) + [0]
    hello += u16(ciphers.count * 2) + ciphers.flatMap { u16($0) } + [1, 0]
    hello += u16(extensionBytes.count) + extensionBytes
    let handshake: [UInt8] = [1, 0] + u16(hello.count) + hello
    return [0x16, 0x03, 0x01] + u16(handshake.count) + handshake
}

@Suite struct JA4Tests {
    /// Chrome's ClientHello as browserleaks.com lists it (`ja4_ro`, the original order), with
    /// FoxIO's published cipher hash for Chrome (8daaf6152771, JA4.md's example) and that
    /// listing's JA4.
    @Test func chromesHelloGivesItsPublishedFingerprint() throws {
        let record = clientHelloRecord(
            ciphers: [0x1a1a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c,
                      0x009d, 0x002f, 0x0035],
            extensions: [0x2a2a, 0x002d, 0x0033, 0x0010, 0xfe0d, 0x0017, 0x44cd, 0x0000, 0x000b, 0x000a, 0x002b, 0xff01,
                         0x0023, 0x0012, 0x0005, 0x000d, 0x001b, 0x3a3a],
            alpn: ["h2", "http/1.1"], versions: [0x5a5a, 0x0304, 0x0303],
            signatures: [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601])
        let hello = try #require(ClientHello(record: record))
        #expect(hello.serverName == "example.com" && hello.alpn == ["h2", "http/1.1"])
        #expect(JA4.fingerprint(hello) == "t13d1516h2_8daaf6152771_d8a2da3f94cd")
        #expect(JA4.raw(hello).ciphers.joined(separator: ",")
                == "002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9")
    }

    @Test func theRulesForNoSNIALPNOrExtensions() throws {
        let bare = try #require(ClientHello(record: clientHelloRecord(ciphers: [0x002f], extensions: [], alpn: [], versions: [],
                                                                       signatures: [])))
        #expect(JA4.fingerprint(bare).hasPrefix("t12i010000_") && JA4.fingerprint(bare).hasSuffix("_000000000000"))
        let odd = try #require(ClientHello(record: clientHelloRecord(ciphers: [0x1301], extensions: [0x0010, 0x002b], alpn: ["x/"],
                                                                      versions: [0x0304], signatures: [])))
        // A non-alphanumeric ALPN character: the first and last hex digits of its bytes ("782f").
        #expect(JA4.fingerprint(odd).hasPrefix("t13i01027f_"))
    }

    @Test func whatIsNotAWholeClientHelloIsNone() {
        #expect(ClientHello(record: Array("GET / HTTP/1.1\r\n".utf8)) == nil)
        let record = clientHelloRecord(ciphers: [0x1301], extensions: [0x0000], alpn: [], versions: [], signatures: [])
        #expect(ClientHello(record: Array(record.dropLast(3))) == nil)
        #expect(ClientHello.recordLength([0x16, 3, 1]) == 0 && ClientHello.recordLength([0x16, 3, 1, 0x01, 0x00]) == 261)
        #expect(ClientHello.recordLength([0x47]) == nil)
        #expect(ClientHello.isGREASE(0x7a7a) && !ClientHello.isGREASE(0x7a7b) && !ClientHello.isGREASE(0x1301))
    }

    /// A ServerHello record: `extensions` as (type, data) in order.
    private func serverHelloRecord(version: UInt16 = 0x0303, cipher: UInt16, extensions: [(UInt16, [UInt8])]) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }
        let extensionBytes = extensions.flatMap { u16(Int($0.0)) + u16($0.1.count) + $0.1 }
        let hello = u16(Int(version)) + [UInt8](repeating: 9, count: 32) + [0] + u16(Int(cipher)) + [0] + u16(extensionBytes.count)
            + extensionBytes
        let handshake: [UInt8] = [2, 0] + u16(hello.count) + hello
        return [0x16, 0x03, 0x03] + u16(handshake.count) + handshake
    }

    @Test func ja4sReadsTheServersChoicesInOrder() throws {
        let tls13 = try #require(ServerHello(record: serverHelloRecord(cipher: 0x1301, extensions: [(0x002b, [0x03, 0x04]),
                                                                                                  (0x0033, [0, 0x1d, 0, 0])])))
        #expect(tls13.selectedVersion == 0x0304)
        // "002b,0033" hashed, as the ServerHello ordered them (not sorted).
        #expect(JA4S.fingerprint(tls13) == "t130200_1301_a56c5b993250")
        let tls12 = try #require(ServerHello(record: serverHelloRecord(cipher: 0xc02f, extensions: [
            (0xff01, [0]), (0x0010, [0, 3, 2] + Array("h2".utf8)), (0x000b, [1, 0])])))
        #expect(tls12.alpn == "h2" && JA4S.fingerprint(tls12) == "t1203h2_c02f_26b1f9d0693b")
        #expect(ServerHello(record: clientHelloRecord(ciphers: [1], extensions: [], alpn: [], versions: [], signatures: [])) == nil)
    }
}
