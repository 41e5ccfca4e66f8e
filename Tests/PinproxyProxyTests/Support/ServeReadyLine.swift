import Foundation

/// The first line `pinproxy serve` prints on standard output ("pinproxy
/// ready: forward proxy on 127.0.0.1:PORT; …"), read from `pipe` until its
/// newline, the end of the output, or `deadline`.
func serveReadyLine(_ pipe: Pipe, deadline: Date = .distantFuture) -> String {
    var ready = Data()
    while !ready.contains(0x0a) && Date() < deadline {
        let chunk = pipe.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        ready += chunk
    }
    return String(decoding: ready, as: UTF8.self)
}

/// The port of the `127.0.0.1:PORT` address a ready line names, if any.
func readyLinePort(_ line: String) -> Int? {
    line.split(separator: " ").first { $0.hasPrefix("127.0.0.1:") }
        .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: CharacterSet(charactersIn: ";"))) }
}
