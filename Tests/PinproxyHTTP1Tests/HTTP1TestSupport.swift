@testable import PinproxyHTTP1
import Testing

/// Parser events with body pieces merged, so that results of different input
/// splits can be compared.
enum Parsed: Equatable, CustomStringConvertible {
    case request(HTTP1RequestHead)
    case response(HTTP1ResponseHead)
    case body([UInt8])
    case end(HTTPHeaders)
    /// The upgrade tail and everything relayed raw after it.
    case upgraded([UInt8])

    var description: String {
        switch self {
        case .request(let head): return "request \(head.method) \(head.target) \(head.framing)"
        case .response(let head): return "response \(head.status) \(head.framing)"
        case .body(let bytes): return "body(\(String(decoding: bytes, as: UTF8.self)))"
        case .end(let trailers): return "end(\(trailers.fields.map { "\($0.name)=\($0.value)" }))"
        case .upgraded(let bytes): return "upgraded(\(String(decoding: bytes, as: UTF8.self)))"
        }
    }

    static func merge(_ events: [HTTP1Event]) -> [Parsed] {
        var out: [Parsed] = []
        for event in events {
            switch event {
            case .requestHead(let head): out.append(.request(head))
            case .responseHead(let head): out.append(.response(head))
            case .body(let slice):
                guard !slice.isEmpty else { continue }
                if case .body(let previous)? = out.last { out[out.count - 1] = .body(previous + slice) }
                else { out.append(.body(Array(slice))) }
            case .end(let trailers): out.append(.end(trailers))
            case .upgrade(let tail): out.append(.upgraded(Array(tail)))
            case .raw(let bytes):
                if case .upgraded(let previous)? = out.last { out[out.count - 1] = .upgraded(previous + bytes) }
                else { out.append(.upgraded(Array(bytes))) }
            }
        }
        return out
    }
}

extension HTTP1Parser {
    /// Feeds `pieces` in order (and optionally reports EOF), returning merged events.
    mutating func parse(_ pieces: [[UInt8]], finish: Bool = false) throws(HTTP1Error) -> [Parsed] {
        var events: [HTTP1Event] = []
        for piece in pieces { events += try feed(piece) }
        if finish { events += try self.finish() }
        return Parsed.merge(events)
    }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Parses `input` whole, and returns the events (or the error).
func parseWhole(
    _ input: [UInt8], mode: HTTP1Parser.Mode = .request, limits: HTTP1Limits = .default,
    methods: [String] = [], finish: Bool = false
) -> Result<[Parsed], HTTP1Error> {
    var parser = HTTP1Parser(mode: mode, limits: limits)
    for method in methods { parser.expectResponse(toMethod: method) }
    do { return .success(try parser.parse([input], finish: finish)) } catch { return .failure(error) }
}

/// Parses `input` one byte per feed.
func parseBytewise(
    _ input: [UInt8], mode: HTTP1Parser.Mode = .request, limits: HTTP1Limits = .default,
    methods: [String] = [], finish: Bool = false
) -> Result<[Parsed], HTTP1Error> {
    var parser = HTTP1Parser(mode: mode, limits: limits)
    for method in methods { parser.expectResponse(toMethod: method) }
    do { return .success(try parser.parse(input.map { [$0] }, finish: finish)) } catch { return .failure(error) }
}

/// The head of the request `text` starts with.
func parsedRequestHead(_ text: String) throws -> HTTP1RequestHead {
    let events = try #require(parseWhole(bytes(text)).value)
    guard case .request(let head)? = events.first else { throw HTTP1Error.malformed("no head in \(events)") }
    return head
}

/// The head of the response `text` starts with, answering a `method` request.
func parsedResponseHead(_ text: String, method: String = "GET") throws -> HTTP1ResponseHead {
    let events = try #require(parseWhole(bytes(text), mode: .response, methods: [method]).value)
    guard case .response(let head)? = events.first else { throw HTTP1Error.malformed("no head in \(events)") }
    return head
}

/// The error `input` produces, or nil when it parses.
func parseError(
    _ text: String, mode: HTTP1Parser.Mode = .request, limits: HTTP1Limits = .default, finish: Bool = false
) -> HTTP1Error? {
    if case .failure(let error) = parseWhole(bytes(text), mode: mode, limits: limits, finish: finish) { return error }
    return nil
}

extension Result {
    var value: Success? { if case .success(let v) = self { return v } else { return nil } }
    var error: Failure? { if case .failure(let e) = self { return e } else { return nil } }
}


/// The HTTP/1 layer's rules as first written, before the fast paths: the
/// tests hold the fast code to these answers.
enum Reference {
    static func keepAlive(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        let connection = headers.tokens(name: "Connection")
        if connection.contains("close") { return false }
        if version == .http1_1 { return true }
        return connection.contains("keep-alive")
    }

    static func expectsContinue(_ head: HTTP1RequestHead) -> Bool {
        head.version == .http1_1 && head.headers.tokens(name: "Expect").contains("100-continue")
    }

    static func upgradeProtocols(_ headers: HTTPHeaders) -> [String] {
        guard headers.tokens(name: "Connection").contains("upgrade") else { return [] }
        return headers["Upgrade"].flatMap { $0.split(separator: ",").map { $0.trimmingHTTPWhitespace() } }.filter { !$0.isEmpty }
    }

    static func removingHopByHop(_ headers: HTTPHeaders, keepingUpgrade: Bool) -> HTTPHeaders {
        var drop = HTTP1Forwarding.hopByHopFields
        for token in headers.tokens(name: "Connection") where token != "upgrade" || !keepingUpgrade { drop.insert(token) }
        if keepingUpgrade { drop.remove("upgrade") }
        // Host is end-to-end: named in Connection, it stays (RFC 9110 §7.6.1).
        drop.remove("host")
        var result = HTTPHeaders()
        for field in headers where !drop.contains(field.name.lowercased()) { result.add(field) }
        return result
    }

    /// The first index of a field called `name` (ASCII letters fold, nothing else), by comparing every name.
    static func firstIndex(_ headers: HTTPHeaders, _ name: String, from start: Int = 0) -> Int? {
        func fold(_ byte: UInt8) -> UInt8 { (0x41...0x5a).contains(byte) ? byte | 0x20 : byte }
        return headers.fields.indices.first { position in
            position >= start && headers.fields[position].name.utf8.map(fold) == name.utf8.map(fold)
        }
    }

    static func serialized(_ head: HTTP1ResponseHead) -> [UInt8] {
        var out = Array("\(head.version) \(head.status) ".utf8)
        out += sanitized(head.reason).utf8
        out += [0x0d, 0x0a]
        append(head.headers, to: &out)
        return out + [0x0d, 0x0a]
    }

    static func serialized(_ head: HTTP1RequestHead) -> [UInt8] {
        var out = Array(sanitized(head.method).utf8) + [0x20] + Array(sanitized(head.target.description).utf8) + [0x20]
        out += head.version.description.utf8
        out += [0x0d, 0x0a]
        append(head.headers, to: &out)
        return out + [0x0d, 0x0a]
    }

    private static func append(_ headers: HTTPHeaders, to out: inout [UInt8]) {
        for field in headers where !field.name.isEmpty && field.name.utf8.allSatisfy(isTokenByte) {
            out += field.name.utf8
            out += [0x3a, 0x20]
            out += sanitized(field.value).utf8
            out += [0x0d, 0x0a]
        }
    }

    private static func sanitized(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x0d || $0 == 0x0a || $0 == 0 }) else { return text }
        return String(text.map { $0 == "\r" || $0 == "\n" || $0 == "\r\n" || $0 == "\0" ? " " : $0 })
    }

    /// `tchar` of RFC 9110 §5.6.2, spelled out.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        let punctuation = Array("!#$%&'*+-.^_`|~".utf8)
        return (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
            || punctuation.contains(byte)
    }
}
