/// okio 1.x `ByteString.decodeBase64` (`Base64.decode`), which OkHttp 3's `CertificatePinner`
/// reads pins with: trailing `=` and whitespace dropped, whitespace anywhere skipped, both the
/// standard (`+/`) and the URL-safe (`-_`) alphabet, any other character (an `=` inside too) nil,
/// a last group of one character nil, of two or three the one or two bytes they hold. Checked
/// against okio 1.16.0's own answers (`OkioBase64Tests`).
enum OkioBase64 {
    static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf16)
        var limit = input.count
        while limit > 0, [0x3D, 0x0A, 0x0D, 0x20, 0x09].contains(input[limit - 1]) { limit -= 1 }
        var out: [UInt8] = []
        out.reserveCapacity(limit * 6 / 8)
        var word: UInt32 = 0
        var count = 0
        for c in input[0..<limit] {
            let bits: UInt32
            switch c {
            case 0x41...0x5A: bits = UInt32(c - 0x41)
            case 0x61...0x7A: bits = UInt32(c - 0x61 + 26)
            case 0x30...0x39: bits = UInt32(c - 0x30 + 52)
            case 0x2B, 0x2D: bits = 62
            case 0x2F, 0x5F: bits = 63
            case 0x0A, 0x0D, 0x20, 0x09: continue
            default: return nil
            }
            word = (word << 6) | bits
            count += 1
            if count % 4 == 0 {
                out += [UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)]
            }
        }
        switch count % 4 {
        case 1: return nil
        case 2: out.append(UInt8(truncatingIfNeeded: (word << 12) >> 16))
        case 3:
            word <<= 6
            out += [UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8)]
        default: break
        }
        return out
    }
}
