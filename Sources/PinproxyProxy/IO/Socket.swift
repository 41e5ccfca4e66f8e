internal import CPinproxyIO
import Foundation
import PinproxyCertificates

extension PinproxyError.Code {
    /// A socket call failed (bind, connect, accept).
    public static let socket = Self("socket")
    /// Another socket holds the address a listener asked for (`EADDRINUSE`).
    public static let addressInUse = Self("address-in-use")
}

/// Thin wrappers over BSD socket calls; errno is captured into errors at the call site.
package enum Socket {
    static func errorText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    static func setNonBlocking(_ descriptor: Descriptor) {
        let flags = fcntl(descriptor.rawValue, F_GETFL)
        // The sockets made here are non-blocking from the start (accept4, SOCK_NONBLOCK): then this only looks.
        if flags >= 0 && flags & O_NONBLOCK == 0 { _ = fcntl(descriptor.rawValue, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Raises the soft descriptor limit to the hard one: every intercepted
    /// connection holds two descriptors, and the usual soft limit of 1,024
    /// would cap the proxy at about 500 of them.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    static func setNoDelay(_ descriptor: Descriptor) {
        var one: Int32 = 1
        _ = setsockopt(descriptor.rawValue, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Fills a sockaddr for a numeric address.
    package static func withSockaddr<T>(host: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t, Int32) throws -> T) throws -> T {
        /// `address` as the `sockaddr` its family's calls take, with its length.
        func call<Address>(_ address: inout Address, _ family: Int32, filling: (inout Address) -> Int32) throws -> T {
            guard filling(&address) == 1 else {
                throw PinproxyError(.socket, "'\(host)' is not a numeric IPv\(family == AF_INET6 ? 6 : 4) address")
            }
            return try withUnsafePointer(to: &address) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<Address>.size), family) }
            }
        }
        let networkPort = in_port_t(UInt16(port).bigEndian)
        if host.contains(":") {
            var address = sockaddr_in6()
            return try call(&address, AF_INET6) { a in
                (a.sin6_family, a.sin6_port) = (sa_family_t(AF_INET6), networkPort)
                return inet_pton(AF_INET6, host, &a.sin6_addr)
            }
        }
        var address = sockaddr_in()
        return try call(&address, AF_INET) { a in
            (a.sin_family, a.sin_port) = (sa_family_t(AF_INET), networkPort)
            return inet_pton(AF_INET, host, &a.sin_addr)
        }
    }

    /// A non-blocking listening socket bound to `address`.
    package static func listen(_ address: ListenAddress, backlog: Int32 = 1024) throws -> Descriptor {
        try withSockaddr(host: address.host, port: address.port) { sa, length, family in
            let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw PinproxyError(.socket, "socket: \(errorText())") }
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            guard bind(fd, sa, length) == 0 else {
                let e = errno
                close(fd)
                throw PinproxyError(e == EADDRINUSE ? .addressInUse : .socket, "cannot listen on \(address): \(errorText(e))")
            }
            guard Glibc.listen(fd, backlog) == 0 else {
                let e = errno
                close(fd)
                throw PinproxyError(.socket, "cannot listen on \(address): \(errorText(e))")
            }
            let listener = Descriptor(fd)
            setNonBlocking(listener)
            return listener
        }
    }

    /// Takes the next pending connection from a listening socket, already
    /// non-blocking and close-on-exec (`accept4`); the error when there is
    /// none (EAGAIN) or the accept failed.
    static func accept(_ listener: Descriptor) -> Result<Descriptor, Errno> {
        let fd = pp_accept(listener.rawValue)
        guard fd >= 0 else { return .failure(Errno.current) }
        return .success(Descriptor(fd))
    }

    /// The port a socket is bound to.
    package static func localPort(_ descriptor: Descriptor) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor.rawValue, $0, &length) }
        }
        let family = storage.ss_family
        return withUnsafePointer(to: &storage) { p -> Int in
            if family == sa_family_t(AF_INET6) {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// The peer's address as text.
    static func peerName(_ descriptor: Descriptor) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor.rawValue, $0, &length) }
        }
        guard ok == 0 else { return "?" }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let r = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard r == 0 else { return "?" }
        let h = text(host)
        return (h.contains(":") ? "[\(h)]" : h) + ":" + text(service)
    }

    /// A NUL-terminated C string filled into a buffer, as text.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// This end's address and port (`getsockname`): what a client connected to.
    static func localAddress(_ descriptor: Descriptor) -> (address: [UInt8], port: Int)? {
        endpoint(descriptor, peer: false)
    }

    /// The peer's address bytes (IPv4-mapped IPv6 as IPv4) and port (`getpeername`), nil when not connected.
    static func peerAddress(_ descriptor: Descriptor) -> (address: [UInt8], port: Int)? {
        endpoint(descriptor, peer: true)
    }

    private static func endpoint(_ descriptor: Descriptor, peer: Bool) -> (address: [UInt8], port: Int)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                peer ? getpeername(descriptor.rawValue, $0, &length) : getsockname(descriptor.rawValue, $0, &length)
            }
        }
        guard ok == 0 else { return nil }
        return withUnsafeBytes(of: storage) { address(ofSockaddr: $0.baseAddress!) }
    }

    /// The addresses of this machine's network interfaces (loopback included).
    @Sendable static func interfaceAddresses() -> [[UInt8]] {
        var list: UnsafeMutablePointer<ifaddrs>? = nil
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var out: [[UInt8]] = []
        var next = list
        while let entry = next {
            next = entry.pointee.ifa_next
            if let sa = entry.pointee.ifa_addr, let found = address(ofSockaddr: UnsafeRawPointer(sa)) {
                out.append(OwnAddresses.unmapped(found.address))
            }
        }
        return out
    }

    /// Address bytes and port of a `sockaddr_in` or `sockaddr_in6`.
    private static func address(ofSockaddr raw: UnsafeRawPointer) -> (address: [UInt8], port: Int)? {
        switch Int32(raw.load(as: sockaddr.self).sa_family) {
        case AF_INET:
            let v4 = raw.load(as: sockaddr_in.self)
            return (withUnsafeBytes(of: v4.sin_addr) { Array($0) }, Int(UInt16(bigEndian: v4.sin_port)))
        case AF_INET6:
            let v6 = raw.load(as: sockaddr_in6.self)
            return (OwnAddresses.unmapped(withUnsafeBytes(of: v6.sin6_addr) { Array($0) }), Int(UInt16(bigEndian: v6.sin6_port)))
        default:
            return nil
        }
    }

    /// Starts a non-blocking connect to `host:port` (resolving names synchronously).
    /// Returns the socket; completion is signalled by writability.
    static func startConnect(host: String, port: Int) throws -> Descriptor {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>? = nil
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let rc = getaddrinfo(bare, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            throw PinproxyError(.socket, "cannot resolve \(bare): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(result) }
        var lastError: Int32 = 0
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            if fd < 0 { lastError = errno; continue }
            let descriptor = Descriptor(fd)
            setNoDelay(descriptor)
            if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 || errno == EINPROGRESS {
                return descriptor
            }
            lastError = errno
            close(fd)
        }
        throw PinproxyError(.socket, "cannot connect to \(bare):\(port): \(errorText(lastError))")
    }

    /// Whether connecting to `host` needs a name lookup that may wait on DNS
    /// (anything but an IP literal or `localhost`).
    static func needsLookup(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" { return false }
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, bare, &v4) != 1 && inet_pton(AF_INET6, bare, &v6) != 1
    }

    /// A non-blocking IPv6 socket that also reaches IPv4 addresses (as
    /// v4-mapped), so it can exist before the name is resolved; nil where
    /// the host has no IPv6.
    static func dualStackSocket() -> Descriptor? {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        var zero: Int32 = 0
        guard setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            close(fd)
            return nil
        }
        let descriptor = Descriptor(fd)
        setNoDelay(descriptor)
        return descriptor
    }

    /// Resolves `host` to one address for a dual-stack socket (IPv4 as
    /// v4-mapped). Blocks on DNS: never call it on an event loop.
    static func resolveForDualStack(host: String, port: Int) -> Result<sockaddr_in6, PinproxyError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>? = nil
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let rc = getaddrinfo(bare, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            return .failure(PinproxyError(.socket, "cannot resolve \(bare): \(String(cString: gai_strerror(rc)))"))
        }
        defer { freeaddrinfo(result) }
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            guard let sa = info.pointee.ai_addr else { continue }
            if info.pointee.ai_family == AF_INET6 {
                return .success(UnsafeRawPointer(sa).load(as: sockaddr_in6.self))
            }
            if info.pointee.ai_family == AF_INET {
                let v4 = UnsafeRawPointer(sa).load(as: sockaddr_in.self)
                var mapped = sockaddr_in6()
                mapped.sin6_family = sa_family_t(AF_INET6)
                mapped.sin6_port = v4.sin_port
                withUnsafeMutableBytes(of: &mapped.sin6_addr) { bytes in
                    bytes[10] = 0xff
                    bytes[11] = 0xff
                    withUnsafeBytes(of: v4.sin_addr) { for i in 0..<4 { bytes[12 + i] = $0[i] } }
                }
                return .success(mapped)
            }
        }
        return .failure(PinproxyError(.socket, "\(bare) has no IPv4 or IPv6 address"))
    }

    /// Starts a non-blocking connect; nil when it is under way (or done),
    /// else why it failed.
    static func startConnect(_ descriptor: Descriptor, to address: sockaddr_in6) -> Errno? {
        var address = address
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor.rawValue, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
        if rc == 0 { return nil }
        let error = Errno.current
        return error == .inProgress ? nil : error
    }

    /// The pending error of a connecting socket; nil once connected.
    static func pendingError(_ descriptor: Descriptor) -> Errno? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(descriptor.rawValue, SOL_SOCKET, SO_ERROR, &value, &length)
        return value == 0 ? nil : Errno(value)
    }

    /// Whether a connected socket is still open with nothing to read: no
    /// byte and no end pending (a non-blocking `MSG_PEEK` of one byte).
    static func isQuiet(_ descriptor: Descriptor) -> Bool {
        var byte: UInt8 = 0
        let n = recv(descriptor.rawValue, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }
}
