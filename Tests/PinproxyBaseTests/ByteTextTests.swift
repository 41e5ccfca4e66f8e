import PinproxyBase
import Testing

@Suite("Byte arrays written in place")
struct ByteTextTests {
    @Test("an array written through scratch space holds exactly the bytes written, at any size", arguments: [0, 1, 200, 1024, 70_000])
    func writtenThroughScratch(size: Int) {
        let bytes = [UInt8](writingAtMost: size + 16) { buffer in
            #expect(buffer.count >= size + 16)
            for index in 0..<size { buffer[index] = UInt8(truncatingIfNeeded: index &* 31 &+ 7) }
            return size
        }
        #expect(bytes.count == size)
        #expect(bytes == (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    }

    @Test("no room asked for still gives room for nothing written")
    func zeroCapacity() {
        #expect([UInt8](writingAtMost: 0) { _ in 0 } == [])
    }
}
