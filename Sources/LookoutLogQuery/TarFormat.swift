/// The POSIX ustar archive format (POSIX.1-1988, as `tar` and Python's `tarfile` read it): a
/// 512-byte header per file, its bytes padded to a 512-byte block, and two empty blocks at the end.
public enum TarFormat {
    public static let blockBytes = 512

    /// The header of a regular file. Names over 100 bytes go in the ustar prefix field, split at a
    /// slash; a size of 8 GiB or more is written base-256, as GNU tar and `tarfile` read it.
    public static func header(name: String, size: UInt64, modified: Int, mode: Int = 0o644) -> [UInt8] {
        var block = [UInt8](repeating: 0, count: blockBytes)
        var nameBytes = Array(name.utf8)
        var prefix: [UInt8] = []
        if nameBytes.count > 100, let slash = nameBytes.indices.last(where: { nameBytes[$0] == UInt8(ascii: "/") && $0 <= 155 }) {
            prefix = Array(nameBytes[..<slash])
            nameBytes = Array(nameBytes[(slash + 1)...])
        }
        put(&block, 0, Array(nameBytes.prefix(100)))
        put(&block, 100, octal(UInt64(mode), width: 8))
        put(&block, 108, octal(0, width: 8))
        put(&block, 116, octal(0, width: 8))
        if size < 1 << 33 {
            put(&block, 124, octal(size, width: 12))
        } else {
            var field = [UInt8](repeating: 0, count: 12)
            field[0] = 0x80
            for index in 0..<8 { field[11 - index] = UInt8(truncatingIfNeeded: size >> (8 * UInt64(index))) }
            put(&block, 124, field)
        }
        put(&block, 136, octal(UInt64(max(0, modified)), width: 12))
        block[156] = UInt8(ascii: "0")
        put(&block, 257, Array("ustar\u{0}00".utf8))
        put(&block, 265, Array("lookout".utf8))
        put(&block, 297, Array("lookout".utf8))
        put(&block, 345, Array(prefix.prefix(155)))
        // The checksum is the sum of the header's bytes with its own field taken as spaces.
        for index in 148..<156 { block[index] = UInt8(ascii: " ") }
        let sum = block.reduce(0) { $0 + UInt64($1) }
        put(&block, 148, octal(sum, width: 7) + [UInt8(ascii: " ")])
        return block
    }

    /// The zero bytes that bring `size` bytes of content to a whole block.
    public static func padding(after size: UInt64) -> [UInt8] {
        let rest = Int(size % UInt64(blockBytes))
        return rest == 0 ? [] : [UInt8](repeating: 0, count: blockBytes - rest)
    }

    /// Two empty blocks end an archive.
    public static let end = [UInt8](repeating: 0, count: 2 * blockBytes)

    /// `value` in octal, zero-filled to `width - 1` digits and a NUL.
    private static func octal(_ value: UInt64, width: Int) -> [UInt8] {
        var digits = Array(String(value, radix: 8).utf8)
        if digits.count < width - 1 { digits = [UInt8](repeating: UInt8(ascii: "0"), count: width - 1 - digits.count) + digits }
        return digits + [0]
    }

    private static func put(_ block: inout [UInt8], _ offset: Int, _ bytes: [UInt8]) {
        block.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
    }
}
