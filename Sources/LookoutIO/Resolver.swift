import Dispatch
#if canImport(Glibc)
import Glibc
import LookoutSync
#endif

/// Why a host name could not be resolved.
public struct ResolveError: Error, Sendable, CustomStringConvertible {
    public var host: String
    public var message: String
    public var description: String { "cannot resolve \(host): \(message)" }
}

/// The outcome of a lookup.
public struct Resolution: Sendable {
    public var addresses: [SocketAddress]
    /// True when no lookup was made (IP literal or cache hit).
    public var fromCache: Bool
    /// Wall time the lookup took, in seconds (0 for cache hits and literals).
    public var duration: Double
}

/// Host name resolution with `getaddrinfo` on a background queue (it blocks), and a small TTL cache.
public final class Resolver: Sendable {
    private struct Entry: Sendable {
        var ips: [String]
        var expires: UInt64
    }

    private let cacheTTL: Double
    private let cache = Guarded<[String: Entry]>([:])
    private let lookupQueue = DispatchQueue(label: "lookout.dns", attributes: .concurrent)
    /// Bounds concurrent getaddrinfo calls so a DNS stall cannot exhaust Dispatch's threads.
    private let lookupSlots = DispatchSemaphore(value: 8)
    private static let maxEntries = 4096

    public init(cacheTTL: Double) {
        self.cacheTTL = cacheTTL
    }

    /// Resolves `host` and calls `completion` on `loop`. IP literals and cache hits complete at once, synchronously.
    public func resolve(host: String, port: Int, on loop: EventLoop,
                        completion: @escaping @Sendable (Result<Resolution, ResolveError>) -> Void) {
        if let literal = SocketAddress(ip: host, port: port) {
            completion(.success(Resolution(addresses: [literal], fromCache: true, duration: 0)))
            return
        }
        let key = host.lowercased()
        if let special = Resolver.specialUseName(key, port: port) {
            completion(special.map { Resolution(addresses: $0, fromCache: true, duration: 0) }
                .mapError { ResolveError(host: host, message: $0.message) })
            return
        }
        let now = DispatchTime.now().uptimeNanoseconds
        if cacheTTL > 0, let entry = cache.withLock({ $0[key] }), entry.expires > now {
            let addresses = entry.ips.compactMap { SocketAddress(ip: $0, port: port) }
            completion(.success(Resolution(addresses: addresses, fromCache: true, duration: 0)))
            return
        }
        lookupQueue.async { [self] in
            lookupSlots.wait()
            let started = DispatchTime.now().uptimeNanoseconds
            let result = Resolver.getAddresses(host: key)
            lookupSlots.signal()
            let finished = DispatchTime.now().uptimeNanoseconds
            let duration = Double(finished - started) / 1e9
            if case .success(let ips) = result, cacheTTL > 0 {
                cache.withLock { cache in
                    if cache.count >= Resolver.maxEntries { cache.removeAll() }
                    cache[key] = Entry(ips: ips, expires: finished + UInt64(cacheTTL * 1e9))
                }
            }
            loop.execute {
                completion(result.map { ips in
                    Resolution(addresses: ips.compactMap { SocketAddress(ip: $0, port: port) },
                               fromCache: false, duration: duration)
                }.mapError { ResolveError(host: host, message: $0.message) })
            }
        }
    }

    private struct LookupFailure: Error {
        var message: String
    }

    /// RFC 6761 special-use names, answered without asking any DNS server: `localhost` names are
    /// loopback (§6.3) and `invalid` names never resolve (§6.4).
    private static func specialUseName(_ name: String, port: Int) -> Result<[SocketAddress], LookupFailure>? {
        let bare = name.hasSuffix(".") ? String(name.dropLast()) : name
        if bare == "localhost" || bare.hasSuffix(".localhost") {
            return .success([SocketAddress(ip: "127.0.0.1", port: port)!, SocketAddress(ip: "::1", port: port)!])
        }
        if bare == "invalid" || bare.hasSuffix(".invalid") {
            return .failure(LookupFailure(message: "\".invalid\" names never resolve (RFC 6761)"))
        }
        return nil
    }

    private static func getAddresses(host: String) -> Result<[String], LookupFailure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0, let first = list else {
            return .failure(LookupFailure(message: String(cString: gai_strerror(rc))))
        }
        defer { freeaddrinfo(first) }
        var ips: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let sa = info.pointee.ai_addr {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) {
                    $0.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: Int(info.pointee.ai_addrlen)))
                }
                let ip = SocketAddress(storage: storage, length: info.pointee.ai_addrlen).ipText
                if !ips.contains(ip) { ips.append(ip) }
            }
            cursor = info.pointee.ai_next
        }
        return ips.isEmpty ? .failure(LookupFailure(message: "no addresses")) : .success(ips)
    }
}
