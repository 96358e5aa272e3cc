import LookoutHTTP
import Testing

@Suite struct FieldListTests {
    @Test func containsComparesWholeElementsWithoutCase() {
        #expect(FieldList.contains("h2c", in: "websocket, H2C"))
        #expect(FieldList.contains("http2-settings", in: "Upgrade,HTTP2-Settings"))
        #expect(FieldList.contains("trailers", in: " trailers ;q=1") == false)
        #expect(FieldList.contains("h2c", in: "h2c-x, xh2c") == false)
        #expect(FieldList.contains("h2c", in: "") == false)
    }
}
