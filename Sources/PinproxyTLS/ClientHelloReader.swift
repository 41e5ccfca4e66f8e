import PinproxyCertificates

/// Reads what the proxy decides on from a ClientHello's extension bytes:
/// the server name (server_name, RFC 6066 §3) and the offered application
/// protocols (ALPN, RFC 7301 §3.1), and picks the protocol to answer with.
///
/// OpenSSL has checked the ClientHello's framing before these run; a list
/// whose inner lengths do not add up is read as far as it makes sense, and
/// what cannot be read counts as not sent (no name, no more protocols).
enum ClientHelloReader {
    /// The ClientHello the proxy decides on, from the two extensions as sent
    /// (the bytes after each extension's type and length; nil when absent).
    static func clientHello(serverNameExtension: [UInt8]?, alpnExtension: [UInt8]?) -> ClientHello {
        let raw = serverNameExtension.flatMap(serverName(inExtension:))
        let alpn = alpnExtension.map(protocols(inExtension:)) ?? []
        var name: HostName? = nil
        var problem: String? = nil
        if let raw {
            do { name = try HostName(validating: raw) } catch let error as PinproxyError { problem = error.reason } catch { problem = "\(error)" }
            // A wildcard is a certificate pattern, not a name to connect to:
            // forging for it would give a leaf valid for every sibling host.
            if let wildcard = name, wildcard.isWildcard {
                name = nil
                problem = "invalid host name \"\(wildcard)\": a server name cannot be a wildcard"
            }
        }
        return ClientHello(serverNameRaw: raw, serverName: name, serverNameProblem: problem, alpn: alpn)
    }

    /// The first host_name entry of a server_name extension, its bytes
    /// decoded as Latin-1 so that hostile bytes survive for the log.
    static func serverName(inExtension ext: [UInt8]) -> String? {
        guard ext.count >= 5 else { return nil }
        // server_name_list: u16 length, then (u8 type, u16 length, name)*
        var i = 2
        while i + 3 <= ext.count {
            let type = ext[i]
            let length = Int(ext[i + 1]) << 8 | Int(ext[i + 2])
            let end = min(ext.count, i + 3 + length)
            if type == 0 { return String(String.UnicodeScalarView(ext[(i + 3)..<end].map { Unicode.Scalar($0) })) }
            i = end
        }
        return nil
    }

    /// The protocols of an ALPN extension (u16 list length, then
    /// length-prefixed names), in the client's order.
    static func protocols(inExtension ext: [UInt8]) -> [String] {
        guard ext.count >= 3 else { return [] }
        var protocols: [String] = []
        var i = 2
        while i < ext.count {
            let length = Int(ext[i])
            guard i + 1 + length <= ext.count else { break }
            protocols.append(String(decoding: ext[(i + 1)..<(i + 1 + length)], as: UTF8.self))
            i += 1 + length
        }
        return protocols
    }

    /// The first of `preferences` that `offered` (the client's protocol
    /// list without its u16 length, as OpenSSL's ALPN callback gets it)
    /// contains: where its name lies in `offered`, or nil when none is.
    static func select(from preferences: [String], offered: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        for wanted in preferences {
            var i = 0
            while i < offered.count {
                let length = Int(offered[i])
                guard i + 1 + length <= offered.count else { break }
                if UnsafeBufferPointer(rebasing: offered[(i + 1)..<(i + 1 + length)]).elementsEqual(wanted.utf8) {
                    return (i + 1)..<(i + 1 + length)
                }
                i += 1 + length
            }
        }
        return nil
    }
}
