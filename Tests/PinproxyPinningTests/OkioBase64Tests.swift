import Foundation
@testable import PinproxyPinning
import Testing

/// okio 1.16.0's `ByteString.decodeBase64`, the answers taken from the real library on the JVM
/// (hex of the bytes, nil where it returns null).
@Suite struct OkioBase64Tests {
    static let cases: [(input: String, hex: String?)] = [
        ("/47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "ff8ec3110a63f070526befd32265bee4909eb90791926e4d329256646de14ae154"),
        ("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (" 47DE Qpj8 ", "e3b0c44298fc"),
        ("AB=CD", nil), ("A", nil), ("A===", nil), ("ABCD*", nil),
        ("AB", "00"), ("ABC", "0010"), ("", ""), ("===", ""),
        ("AB= ", "00"), ("ABC=\n", "0010"), ("AB =", "00"),
    ]

    @Test(arguments: cases)
    func decodesAsOkioDoes(input: String, hex: String?) {
        #expect(OkioBase64.decode(input).map { $0.map { String(format: "%02x", $0) }.joined() } == hex)
    }
}
