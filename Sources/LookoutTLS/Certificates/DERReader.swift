/// A reader of DER (ITU-T X.690 §10) tag-length-value elements, for the few certificate
/// extensions Lookout inspects itself. Definite lengths only, as DER requires; every read is
/// bounds-checked and a malformed element ends the reading (nil), never a crash.
struct DERReader {
    struct Element {
        let tag: UInt8
        let content: ArraySlice<UInt8>
        /// The content read as a sequence of elements.
        var children: DERReader { DERReader(content) }
        /// Every element of the content, or nil when any is malformed.
        var elements: [Element]? {
            var reader = children
            return reader.all()
        }
    }

    private let bytes: ArraySlice<UInt8>
    private var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    var isAtEnd: Bool { position >= bytes.endIndex }

    /// The next element; nil at the end or when it is malformed.
    mutating func next() -> Element? {
        guard position + 2 <= bytes.endIndex else { return nil }
        let tag = bytes[position]
        guard tag & 0x1F != 0x1F else { return nil }  // multi-byte tags are not used in certificates
        var length = Int(bytes[position + 1])
        var start = position + 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 4, start + count <= bytes.endIndex else { return nil }
            length = 0
            for i in 0..<count { length = length << 8 | Int(bytes[start + i]) }
            start += count
        }
        guard length <= bytes.endIndex - start else { return nil }
        position = start + length
        return Element(tag: tag, content: bytes[start..<(start + length)])
    }

    /// Every element, or nil when any is malformed.
    mutating func all() -> [Element]? {
        var elements: [Element] = []
        while !isAtEnd {
            guard let element = next() else { return nil }
            elements.append(element)
        }
        return elements
    }
}

/// ASN.1 tags used by the certificate profile checks.
enum DERTag {
    static let sequence: UInt8 = 0x30
    static let objectIdentifier: UInt8 = 0x06
    static let octetString: UInt8 = 0x04
    /// Context-specific [n], primitive (0x80 | n) or constructed (0xA0 | n).
    static func context(_ n: UInt8, constructed: Bool) -> UInt8 { (constructed ? 0xA0 : 0x80) | n }
}
