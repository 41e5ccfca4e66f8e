import Foundation

/// Host names written in Unicode, turned into the ASCII form certificates and pins use.
public enum IDNA {
    /// `σkhttp.com` → `xn--khttp-fde.com`: each label with a non-ASCII character becomes an
    /// `xn--` A-label (RFC 3492 Punycode) after nameprep's mapping (RFC 3491: case folding and
    /// compatibility normalisation, NFKC), as `java.net.IDN.toASCII` (IDNA2003) does for the
    /// names OkHttp 3 and 4 canonicalise: `。`, `．` and `｡` separate labels as `.` does, the
    /// characters nameprep maps to nothing (soft hyphen, zero-width joiners, variation
    /// selectors) go, and case folding turns `ß` into `ss` and `ς` into `σ` (`straße.example`
    /// → `strasse.example`; UTS 46's non-transitional processing, OkHttp 5's, would keep them).
    /// ASCII labels are only lower-cased. Nil when a label cannot be encoded.
    public static func toASCII(_ name: String) -> String? {
        var nameprepped = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            switch scalar.value {
            case 0x3002, 0xFF0E, 0xFF61: nameprepped.append(".")
            case _ where mappedToNothing(scalar.value): continue
            default: nameprepped.append(scalar)
            }
        }
        let mapped = String(nameprepped).precomposedStringWithCompatibilityMapping.lowercased()
            .replacingOccurrences(of: "ß", with: "ss").replacingOccurrences(of: "ς", with: "σ")
        var labels: [String] = []
        for label in mapped.split(separator: ".", omittingEmptySubsequences: false) {
            if label.unicodeScalars.allSatisfy(\.isASCII) {
                labels.append(String(label))
            } else {
                guard let encoded = Punycode.encode(String(label)) else { return nil }
                labels.append("xn--" + encoded)
            }
        }
        return labels.joined(separator: ".")
    }

    /// RFC 3454 table B.1, "commonly mapped to nothing", which nameprep drops.
    static func mappedToNothing(_ value: UInt32) -> Bool {
        switch value {
        case 0x00AD, 0x034F, 0x1806, 0x180B...0x180D, 0x200B...0x200D, 0x2060, 0xFE00...0xFE0F, 0xFEFF: return true
        default: return false
        }
    }
}

extension Punycode {
    /// RFC 3492 Punycode encoding of one label (without the `xn--` prefix).
    static func encode(_ input: String) -> String? {
        let base = Punycode.base, tMin = Punycode.tMin, tMax = Punycode.tMax
        let scalars = input.unicodeScalars.map { Int($0.value) }
        func digit(_ d: Int) -> Character {
            Character(UnicodeScalar(UInt8(d < 26 ? 0x61 + d : 0x30 + d - 26)))
        }
        var output = String(String.UnicodeScalarView(input.unicodeScalars.filter(\.isASCII)))
        let basicCount = output.unicodeScalars.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = 128, delta = 0, bias = 72
        while handled < scalars.count {
            guard let m = scalars.filter({ $0 >= n }).min() else { return nil }
            guard (m - n) <= (Int.max - delta) / (handled + 1) else { return nil }
            delta += (m - n) * (handled + 1)
            n = m
            for c in scalars {
                if c < n { delta += 1 }
                if c == n {
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    output.append(digit(q))
                    bias = adapt(delta, handled + 1, handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return output
    }
}
