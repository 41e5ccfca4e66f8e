import Foundation
import PinproxyHTTP1
import PinproxyHTTP2

/// A translated stream's request on its way to an HTTP/1.1 upstream: its
/// head in HTTP/1.1 form, and the body bytes that wait for a connection.
final class TranslatedRequest {
    let exchange: HTTP2Exchange
    /// The request line and fields as the upstream gets them; `framing`
    /// says how the body goes (chunked when the client gave no length).
    let head: HTTP1RequestHead
    /// Body bytes received and not yet on a connection. They still count
    /// against the client's windows, which bounds them.
    var pending: [UInt8] = []
    /// The client ended the request (END_STREAM or trailers).
    var ended: Bool
    var trailers = HTTPHeaders()
    /// The connection carrying it, once one was free.
    var leg: PooledHTTP1Connection?
    /// It was sent again, on a new connection, after a reused one closed (``UpstreamReplay``).
    var replayed = false

    init(exchange: HTTP2Exchange, head: HTTP1RequestHead, ended: Bool) {
        self.exchange = exchange
        self.head = head
        self.ended = ended
    }

    var stream: HTTP2StreamID { exchange.clientStream }
}

/// One HTTP/1.1 connection of a translated HTTP/2 connection: it carries
/// one client stream at a time as an HTTP/1.1 exchange, then waits for the
/// next when both sides kept it alive.
///
/// Flow control crosses it both ways. The client's DATA is given back to
/// its windows (`consume`) only once the bytes went to a socket that is not
/// congested, else when it drains. The response is read only while the
/// client's stream has at most about one stream window queued
/// (``HTTP2Session/bufferedBytes(on:)``); the pool resumes it when the
/// client session reports bytes written. A connection thus holds at most a
/// socket's congestion bound and a stream window, whatever the body's size.
final class PooledHTTP1Connection {
    let upstream: Upstream
    private unowned let pool: HTTP1UpstreamPool
    private(set) var ready = false
    private(set) var closed = false
    private(set) var request: TranslatedRequest?
    private var parser = HTTP1Parser(mode: .response)
    /// Request body bytes handed to the socket and not yet given back to the client.
    private var unconsumed = 0
    private var requestEndSent = false
    /// A byte of the body, or the end of a chunked one, went to this connection.
    private var bodySent = false
    private var inInterim = false
    /// The final head went to the client with END_STREAM (HEAD, 204, 304, empty bodies).
    private var headEndedStream = false
    private var keepAlive = true
    private(set) var readingPaused = false

    init(upstream: Upstream, pool: HTTP1UpstreamPool) {
        self.upstream = upstream
        self.pool = pool
    }

    /// Ready for a request, and none is on it.
    var isIdle: Bool { ready && !closed && request == nil }

    private var downstream: HTTP2Session { pool.downstream }

    /// The connection is usable: read it, and send the request waiting on it.
    func becameReady() {
        ready = true
        upstream.start()
        if request != nil { sendHead() }
    }

    /// Makes `next` this connection's exchange; it goes out once the connection is ready.
    func attach(_ next: TranslatedRequest) {
        request = next
        next.leg = self
        next.exchange.upstreamConnection = upstream
        parser = HTTP1Parser(mode: .response)
        requestEndSent = false
        bodySent = false
        inInterim = false
        headEndedStream = false
        keepAlive = true
        if ready { sendHead() }
    }

    private func sendHead() {
        guard let current = request, !closed else { return }
        parser.expectResponse(toMethod: current.head.method)
        upstream.sendRequest(current.head.serialized())
        pool.layer.armResponseTimer(current.exchange) { [weak self, weak current] reason in
            guard let self, let current, self.request === current else { return }
            self.fail(reason, status: 504)
        }
        sendBody()
    }

    /// Sends what the client sent of the body so far (chunked when the
    /// head says so) and the end of it once the client ended it.
    func sendBody() {
        guard ready, !closed, let current = request else { return }
        if !current.pending.isEmpty {
            let bytes = current.pending
            current.pending = []
            unconsumed += bytes.count
            bodySent = true
            switch current.head.framing {
            case .chunked: upstream.send(HTTP1ChunkedEncoder.chunk(bytes))
            case .none: break  // the head said there is no body; nghttp2 holds the client to its content-length
            default: upstream.send(bytes)
            }
        }
        if current.ended && !requestEndSent {
            requestEndSent = true
            current.exchange.requestSent = Date()
            if current.head.framing == .chunked {
                bodySent = true
                upstream.send(HTTP1ChunkedEncoder.end(trailers: HTTP2Translation.http1Trailers(current.trailers)))
            }
        }
        giveBack()
    }

    /// Gives the client's windows back what left for an uncongested socket.
    func giveBack() {
        guard unconsumed > 0, let current = request, !upstream.outputIsCongested else { return }
        downstream.consume(unconsumed, on: current.stream)
        unconsumed = 0
        pool.layer.extendResponseTimer(current.exchange)
    }

    // MARK: - The response

    /// Response bytes from the upstream.
    func received(_ bytes: ArraySlice<UInt8>) {
        guard !closed else { return }
        guard request != nil else {
            // Nothing was asked: an HTTP/1.1 server that speaks first is not one to reuse.
            return pool.retire(self)
        }
        let events: [HTTP1Event]
        do { events = try parser.feed(bytes) } catch {
            return fail("the upstream sent an invalid response: \(error.reason)")
        }
        handle(events)
        if let current = request, !closed, downstream.bufferedBytes(on: current.stream) > pool.streamBufferBound {
            readingPaused = true
            upstream.pauseReading()
        }
    }

    /// The client's session wrote some of the stream's body: read again once it is back under the bound.
    func responseWritten() {
        guard readingPaused, !closed, let current = request,
              downstream.bufferedBytes(on: current.stream) <= pool.streamBufferBound else { return }
        readingPaused = false
        upstream.resumeReading()
    }

    private func handle(_ events: [HTTP1Event]) {
        for (index, event) in events.enumerated() {
            guard !closed, let current = request else { return }
            let exchange = current.exchange
            switch event {
            case .responseHead(let head):
                if exchange.firstResponseByte == nil { exchange.firstResponseByte = Date() }
                if head.status == 101 { return fail("the upstream switched protocols (101), which HTTP/2 cannot carry") }
                let translated: HTTP2ResponseHead
                do { translated = try HTTP2ResponseHead(http1: head) } catch { return fail("\(error)") }
                if head.isInformational {
                    inInterim = true
                    pool.layer.extendResponseTimer(exchange)
                    do { try downstream.sendResponse(translated, on: current.stream, endStream: false) } catch { return fail("\(error)") }
                    continue
                }
                exchange.responseTimer?.cancel()
                keepAlive = head.keepAlive
                exchange.response = HTTP2Exchange.flowResponse(translated)
                // A body that ends at once (HEAD, 204, 304, length 0) ends the stream with the head.
                var endsNow = false
                if index + 1 < events.count, case .end(let trailers) = events[index + 1], trailers.isEmpty { endsNow = true }
                headEndedStream = endsNow
                do { try downstream.sendResponse(translated, on: current.stream, endStream: endsNow) } catch { return fail("\(error)") }
            case .body(let bytes):
                if inInterim { continue }
                exchange.responseBody.append(bytes)
                do { try downstream.sendData(Array(bytes), on: current.stream) } catch { return fail("\(error)") }
            case .end(let trailers):
                if inInterim {
                    inInterim = false
                    continue
                }
                if !headEndedStream {
                    let forwarded = HTTP2Translation.http2Trailers(trailers)
                    do {
                        if forwarded.isEmpty {
                            try downstream.sendData([], on: current.stream, endStream: true)
                        } else {
                            try downstream.sendTrailers(forwarded, on: current.stream)
                        }
                    } catch { return fail("\(error)") }
                }
                responseComplete(current)
            case .upgrade:
                return fail("the upstream switched protocols, which HTTP/2 cannot carry")
            case .raw, .requestHead:
                break
            }
        }
    }

    /// The whole response went to the client: the connection waits for the
    /// next stream if both sides keep it alive and the request was sent whole.
    private func responseComplete(_ current: TranslatedRequest) {
        let reusable = keepAlive && requestEndSent && parser.isIdle
        detach(current)
        // A response that came before the end of the request body (an early
        // 413 or 401) leaves the connection unusable; the rest of the body
        // goes nowhere (the pool consumes it as it comes).
        pool.finished(current)
        if reusable {
            if readingPaused {
                readingPaused = false
                upstream.resumeReading()
            }
            pool.legIdle(self)
        } else {
            pool.retire(self)
        }
    }

    /// The stream leaves this connection; what it sent is given back to the client.
    private func detach(_ current: TranslatedRequest) {
        current.exchange.responseTimer?.cancel()
        let owed = unconsumed + current.pending.count
        unconsumed = 0
        current.pending = []
        if owed > 0 { downstream.consume(owed, on: current.stream) }
        current.leg = nil
        request = nil
    }

    /// The upstream closed its side: a response framed by close ends here; any other is cut short.
    func upstreamEnded(_ end: TransportEnd) {
        guard !closed else { return }
        guard request != nil else { return pool.retire(self) }
        // Sent again, or the reason it was not (nothing said once a response began).
        guard let refused = replayElsewhere(upstream.endFailure(end)) else { return }
        let responded = request?.exchange.firstResponseByte != nil || !parser.isIdle
        if !responded { return fail(refused.reason) }
        do { handle(try parser.finish()) } catch {
            return fail("the upstream closed the connection early: \(error.reason)")
        }
        if request != nil {
            fail(upstream.endFailure(end, when: "before the response was complete").reason)
        }
    }

    /// The connection failed before it was ready (an idle one taken from
    /// the idle pool may close as it is taken).
    func failed(_ failure: UpstreamFailure) {
        guard let refused = replayElsewhere(failure) else { return }
        fail(refused.reason, status: refused.status)
    }

    /// The upstream ended (or reset) the connection: the request goes again,
    /// once, on a new connection when ``UpstreamReplay`` allows it (nil
    /// then); else `failure`, with the reason it was not sent again when there is one.
    private func replayElsewhere(_ failure: UpstreamFailure) -> UpstreamFailure? {
        guard !closed, let current = request, !failure.isRefusal else { return failure }
        let verdict = UpstreamReplay.verdict(reusedConnection: upstream.isReused,
                                             responded: current.exchange.firstResponseByte != nil || !parser.isIdle,
                                             alreadyReplayed: current.replayed, method: current.head.method,
                                             bodyDeclared: current.head.framing.declaresBody, bodySent: bodySent)
        guard verdict == .replay else { return failure.refused(verdict) }
        return pool.replay(current, after: failure, from: self) ? nil : failure
    }

    /// `current` leaves this connection, whose upstream closed it, to go
    /// again on `next`: nothing of its body went out, so nothing is owed to
    /// the client's windows but what still waits in `pending`, which goes with it.
    func handOver(_ current: TranslatedRequest, to next: PooledHTTP1Connection) {
        current.exchange.responseTimer?.cancel()
        current.leg = nil
        request = nil
        current.replayed = true
        next.attach(current)
    }

    /// The exchange on this connection failed: the client gets `status`
    /// when no head went to it yet, else its stream is reset; the
    /// connection is closed (it cannot carry another exchange).
    func fail(_ reason: String, status: Int = 502) {
        guard let current = request else { return pool.retire(self) }
        detach(current)
        pool.finished(current)
        let exchange = current.exchange
        if exchange.response == nil {
            pool.layer.answer(exchange, status: status, reason: reason)
        } else {
            if exchange.error == nil { exchange.error = reason }
            try? downstream.reset(current.stream, code: .internalError)
        }
        pool.retire(self)
    }

    /// The client reset the stream: the connection is mid-exchange and cannot be reused.
    func abandon() {
        if let current = request {
            current.exchange.responseTimer?.cancel()
            current.leg = nil
            request = nil
        }
        pool.retire(self)
    }

    /// The connection, idle, for the idle pool; this one is done with it.
    func takeConnection() -> Upstream? {
        guard isIdle else { return nil }
        closed = true
        return upstream
    }

    func close() {
        guard !closed else { return }
        closed = true
        upstream.close()
    }
}
