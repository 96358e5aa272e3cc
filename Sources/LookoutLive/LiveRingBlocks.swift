#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes of `LiveRing`'s records: written in order into blocks of `blockSize` mapped with
/// `mmap` (a record longer than that gets a block of its own size), released oldest first once
/// the ring no longer keeps a record in them. The last released standard block is kept as the
/// spare, so a ring turning over at a steady rate maps nothing new. Not thread-safe: `LiveRing`
/// holds it under its lock.
struct LiveRingBlocks: ~Copyable {
    /// Where a record's bytes are.
    struct Place {
        let block: UInt64
        let offset: Int
        let length: Int
    }

    private struct Block {
        let id: UInt64
        let base: UnsafeMutableRawPointer
        let size: Int
        var used = 0
    }

    static let blockSize = 256 * 1024

    /// Oldest first; the last one is written to.
    private var blocks: [Block] = []
    private var spare: Block?
    private var nextID: UInt64 = 0

    init() {}

    deinit {
        for block in blocks { munmap(block.base, block.size) }
        if let spare { munmap(spare.base, spare.size) }
    }

    var mappedBytes: Int { blocks.reduce(spare?.size ?? 0) { $0 + $1.size } }

    /// Copies `bytes` in; nil when no memory could be mapped (the record is then not kept).
    mutating func store(_ bytes: UnsafeRawBufferPointer) -> Place? {
        if blocks.isEmpty || blocks[blocks.count - 1].used + bytes.count > blocks[blocks.count - 1].size {
            guard let block = newBlock(holding: bytes.count) else { return nil }
            blocks.append(block)
        }
        let last = blocks.count - 1
        let place = Place(block: blocks[last].id, offset: blocks[last].used, length: bytes.count)
        if let source = bytes.baseAddress, !bytes.isEmpty {
            (blocks[last].base + place.offset).copyMemory(from: source, byteCount: bytes.count)
        }
        blocks[last].used += bytes.count
        return place
    }

    /// A copy of the bytes at `place` (empty if its block was released).
    func bytes(at place: Place) -> [UInt8] {
        guard let first = blocks.first, place.block >= first.id, place.block - first.id < UInt64(blocks.count) else {
            return []
        }
        let block = blocks[Int(place.block - first.id)]
        return Array(UnsafeRawBufferPointer(start: block.base + place.offset, count: place.length))
    }

    /// Releases the blocks older than block `id`; the one being written to is always kept.
    mutating func release(before id: UInt64) {
        var released = 0
        while released < blocks.count - 1 && blocks[released].id < id {
            recycle(blocks[released])
            released += 1
        }
        if released > 0 { blocks.removeFirst(released) }
    }

    private mutating func newBlock(holding length: Int) -> Block? {
        defer { nextID += 1 }
        if length <= Self.blockSize, let block = spare {
            spare = nil
            return Block(id: nextID, base: block.base, size: block.size)
        }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let size = max(Self.blockSize, (length + page - 1) / page * page)
        let base = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let base, base != MAP_FAILED else { return nil }
        return Block(id: nextID, base: base, size: size)
    }

    private mutating func recycle(_ block: Block) {
        if block.size == Self.blockSize && spare == nil {
            spare = block
        } else {
            munmap(block.base, block.size)
        }
    }
}
