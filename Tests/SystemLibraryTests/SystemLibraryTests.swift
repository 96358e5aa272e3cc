import Testing
import LookoutTLS
import LookoutHTTP2

@Suite struct SystemLibraryTests {
    @Test func openSSLIsLinkedAndIsVersion3() {
        #expect(OpenSSLLibrary.version.major == 3)
        #expect(OpenSSLLibrary.versionText.hasPrefix("OpenSSL 3."))
    }

    @Test func nghttp2IsLinkedAndReportsItsVersion() {
        let parts = NGHTTP2Library.versionText.split(separator: ".").compactMap { Int($0) }
        #expect(parts.count == 3)
        #expect(parts[0] == 1 && parts[1] >= 40)
    }
}
