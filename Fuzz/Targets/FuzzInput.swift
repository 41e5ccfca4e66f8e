import Foundation

/// Deterministic choices drawn from an input: where to split it, which
/// variant to run. The same input always makes the same choices, so a
/// crash replays exactly, and any mutation of it makes new ones.
struct FuzzChoices: RandomNumberGenerator {
    private var state: UInt64

    /// Choices seeded by the FNV-1a hash of `input`.
    init(seededBy input: some Collection<UInt8>) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in input { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        state = hash
    }

    /// SplitMix64.
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// `count` bytes cut into consecutive pieces at random points: mostly
    /// short pieces, so that lines and chunk headers straddle feeds.
    mutating func pieces(of count: Int) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var start = 0
        while start < count {
            let longest = Int.random(in: 0..<4, using: &self) == 0 ? 64 : 8
            let end = min(count, start + Int.random(in: 1...longest, using: &self))
            out.append(start..<end)
            start = end
        }
        return out
    }
}

extension Array where Element == UInt8 {
    /// The bytes as text, invalid UTF-8 replaced (what a `String` parameter receives).
    var text: String { String(decoding: self, as: UTF8.self) }

    /// The bytes as Latin-1 scalars, one per byte (how the TLS server reads a server name).
    var latin1: String { String(String.UnicodeScalarView(map { Unicode.Scalar($0) })) }
}

/// A private folder for the files a target must write (policy and key files
/// are read by path), made once per process and removed at exit.
enum FuzzScratch {
    static let directory: String = {
        let path = NSTemporaryDirectory() + "pinproxy-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: FuzzScratch.directory) }
        return path
    }()

    static func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// Writes `bytes` to `name` in the calling thread's own subfolder and
    /// returns the path: inputs replayed at once (the tests run them in
    /// parallel) must not overwrite each other's file between its write and
    /// its read. A thread reuses its one file for every input it runs.
    static func write(_ bytes: [UInt8], to name: String) throws(FuzzFailure) -> String {
        let folder = path("thread-" + String(pthread_self(), radix: 16))
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = (folder as NSString).appendingPathComponent(name)
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw fail("cannot write the scratch file \(path)")
        }
        return path
    }
}
