/// The state machine: lines read in place from the fed bytes, heads, bodies,
/// chunks and trailers, and the pause after a request that switches protocols.
extension HTTP1Parser {
    mutating func run(_ bytes: ArraySlice<UInt8>, into events: inout [HTTP1Event]) throws(HTTP1Error) {
        try bytes.withUnsafeBufferPointer { (buffer) throws(HTTP1Error) in
            try run(bytes, buffer, into: &events)
        }
        if case .upgradePending = state {
            events.append(.upgrade(tail: []))
            state = .upgraded
        }
    }

    /// The state machine over `buffer`, the bytes of `bytes`: lines are read
    /// from the buffer in place, and body events are slices of `bytes`.
    mutating func run(
        _ bytes: ArraySlice<UInt8>, _ buffer: UnsafeBufferPointer<UInt8>, into events: inout [HTTP1Event]
    ) throws(HTTP1Error) {
        let base = bytes.startIndex
        var index = 0
        let end = buffer.count
        while index < end {
            switch state {
            case .startLine, .headers, .trailers, .chunkSize:
                guard try takeLine(buffer, &index, into: &events) else { return }

            case .body(let remaining):
                let count = min(remaining, end - index)
                events.append(.body(bytes[(base + index)..<(base + index + count)]))
                index += count
                if count == remaining { endMessage(trailers: HTTPHeaders(), into: &events) }
                else { state = .body(remaining: remaining - count) }

            case .chunkData(let remaining):
                let count = min(remaining, end - index)
                events.append(.body(bytes[(base + index)..<(base + index + count)]))
                index += count
                state = count == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - count)

            case .chunkDataEnd(let sawCR):
                let byte = buffer[index]
                index += 1
                if byte == Byte.lf { state = .chunkSize }
                else if byte == Byte.cr && !sawCR { state = .chunkDataEnd(sawCR: true) }
                else { throw HTTP1Error(.badChunk, status: 400, "chunk data is longer than its declared size") }

            case .untilClose:
                events.append(.body(bytes[(base + index)...]))
                index = end

            case .paused:
                guard pausedBytes.count + (end - index) <= limits.maxBufferedWhilePaused else {
                    throw HTTP1Error.malformed(
                        "the client sent more than \(limits.maxBufferedWhilePaused) bytes before its upgrade request was answered")
                }
                pausedBytes.append(contentsOf: bytes[(base + index)...])
                index = end

            case .upgradePending:
                events.append(.upgrade(tail: bytes[(base + index)...]))
                state = .upgraded
                index = end

            case .upgraded:
                events.append(.raw(bytes[(base + index)...]))
                index = end

            case .finished:
                throw HTTP1Error(.stopped, status: 400, "bytes arrived after the end of the stream")

            case .failed:
                throw stoppingError
            }
        }
    }

    /// Takes one complete line and handles it, or keeps the partial line for
    /// the next feed and returns false. Checks limits as bytes arrive, so an
    /// endless line fails as soon as it is too long.
    ///
    /// A line that arrived whole is handled where it lies in `buffer`; only a
    /// line split across feeds is assembled in ``line``.
    mutating func takeLine(
        _ buffer: UnsafeBufferPointer<UInt8>, _ index: inout Int, into events: inout [HTTP1Event]
    ) throws(HTTP1Error) -> Bool {
        let end = buffer.count
        if state == .headers, line.isEmpty, head.fieldCount == 0, try takeRepeatedSection(buffer, &index, into: &events) { return true }
        let newline = HTTP1Bytes.firstIndex(of: Byte.lf, in: buffer, from: index)
        let chunk = UnsafeBufferPointer(rebasing: buffer[index..<(newline ?? end)])

        if case .startLine = state {
            if line.isEmpty, let first = chunk.first { try Self.checkFirstByte(first, mode: mode) }
            try Self.checkStartLineBytes(chunk, mode: mode)
        }
        let length = line.count + chunk.count
        // A CR that ends the bytes so far is the line's ending, whether its LF came in the
        // same read or is still to come: a line at its limit fits however the input is
        // split. (Should anything but an LF follow, the line is refused for its bare CR.)
        let lengthWithoutCR = (chunk.last ?? line.last) == Byte.cr ? length - 1 : length
        try Self.checkLineLength(lengthWithoutCR, soFar: line, chunk: chunk, state: state, mode: mode, limits: limits)
        if state.isSection, sectionBytes + length + (newline == nil ? 0 : 1) > limits.maxHeaderBlockSize {
            throw Self.tooLarge("the header section is larger than \(limits.maxHeaderBlockSize) bytes")
        }

        guard let newline else {
            line.append(contentsOf: chunk)
            index = end
            return false
        }
        index = newline + 1
        if state.isSection { sectionBytes += length + 1 }
        if line.isEmpty {
            try handle(rawLine: chunk, into: &events)
        } else {
            var whole = line
            line = []
            whole.append(contentsOf: chunk)
            try whole.withUnsafeBufferPointer { (whole) throws(HTTP1Error) in try handle(rawLine: whole, into: &events) }
        }
        return true
    }

    /// At the start of a field section, takes the whole section when it
    /// repeats the previous head's byte for byte (see
    /// ``HTTP1HeadReader/takeRepeatedSection(at:limits:room:)``). Returns
    /// false to read line by line.
    mutating func takeRepeatedSection(
        _ buffer: UnsafeBufferPointer<UInt8>, _ index: inout Int, into events: inout [HTTP1Event]
    ) throws(HTTP1Error) -> Bool {
        guard let section = head.takeRepeatedSection(at: UnsafeBufferPointer(rebasing: buffer[index...]), limits: limits,
                                                     room: limits.maxHeaderBlockSize - sectionBytes) else { return false }
        sectionBytes += section.size
        index += section.size
        try completeHead(into: &events, emptyLine: section.emptyLine)
        return true
    }

    /// Handles a complete line that may still end in CR, refusing a bare CR inside it.
    mutating func handle(rawLine: UnsafeBufferPointer<UInt8>, into events: inout [HTTP1Event]) throws(HTTP1Error) {
        var complete = rawLine
        if complete.last == Byte.cr { complete = UnsafeBufferPointer(rebasing: complete[..<(complete.count - 1)]) }
        if HTTP1Bytes.firstIndex(of: Byte.cr, in: complete) != nil {
            throw HTTP1Error.malformed("a line contains a bare CR; lines end with CRLF")
        }
        try handle(line: complete, raw: rawLine, into: &events)
    }

    /// Handles a complete line without its line ending; `raw` is the same
    /// line as it arrived, without its LF only (for ``HTTP1HeadMemory``).
    mutating func handle(
        line: UnsafeBufferPointer<UInt8>, raw: UnsafeBufferPointer<UInt8>, into events: inout [HTTP1Event]
    ) throws(HTTP1Error) {
        switch state {
        case .startLine:
            if line.isEmpty {
                sectionBytes = 0 // empty lines between messages are not part of a head
                return
            }
            try head.readStartLine(line)
            state = .headers
        case .headers:
            if line.isEmpty { try completeHead(into: &events, emptyLine: raw) } else { try addField(line, raw: raw) }
        case .trailers:
            if line.isEmpty { endMessage(trailers: fields, into: &events) } else { try addField(line, raw: raw) }
        case .chunkSize:
            let size = try HTTP1Syntax.parseChunkSize(line)
            if size == 0 {
                fields = HTTPHeaders()
                sectionBytes = 0
                state = .trailers
            } else {
                state = .chunkData(remaining: size)
            }
        default:
            break
        }
    }
}
