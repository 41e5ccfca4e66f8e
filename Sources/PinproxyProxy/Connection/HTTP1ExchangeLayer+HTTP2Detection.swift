import Foundation
import PinproxyHTTP1

/// How the HTTP/1 layer finds out that an upstream speaks only HTTP/2 (see
/// ``HTTP2OnlyUpstreams`` for the ways servers refuse HTTP/1.1), and what it
/// does then: connect again once, offering `h2` only, and translate.
///
/// With `--http2 on`, a request to a TLS upstream that is still connecting
/// is held, with the client's bytes after it, until the upstream is ready
/// and its protocol known: nothing of the request is lost when the first
/// connection is refused. A request is sent again on the second connection
/// only when no byte of its body went on the first one and no byte of a
/// response came back.
extension HTTP1ExchangeLayer {
    /// Whether requests to `up` wait until it is ready: it may yet turn out to speak only HTTP/2.
    func holdsRequests(for up: Upstream) -> Bool {
        services.http2 && up.target.tls && !up.isReady
    }

    /// Whether the exchange on `up`, which refused or dropped it, may be sent
    /// again on a connection offering `h2` only.
    private func mayOfferHTTP2Instead(of up: Upstream) -> Bool {
        guard services.http2, up.target.tls, !up.offeredHTTP2, up.tlsDetails?.alpn == nil else { return false }
        guard let current = exchange else { return true }
        return current.firstResponseByte == nil && current.requestBody.size == 0 && current.responseFraming == nil
    }

    /// The upstream failed to connect: a refusal of the offered protocols
    /// (alert `no_application_protocol`) is retried offering `h2` only.
    /// Whether it was.
    func retriedOfferingHTTP2(after failure: UpstreamFailure, _ up: Upstream) -> Bool {
        guard failure.refusedApplicationProtocol, mayOfferHTTP2Instead(of: up) else { return false }
        return reopenOfferingHTTP2(up.target)
    }

    /// The upstream ended without a byte of response, having chosen no
    /// protocol (nghttpd closes so): retried offering `h2` only. Whether it was.
    func retriedOfferingHTTP2(afterEndOf up: Upstream) -> Bool {
        guard exchange != nil, upstreamParser.isIdle, mayOfferHTTP2Instead(of: up) else { return false }
        return reopenOfferingHTTP2(up.target)
    }

    /// The upstream answered an HTTP/1.1 request with HTTP/2 frames: retried
    /// offering `h2` only. Whether it was.
    func retriedOfferingHTTP2(afterAnswer bytes: ArraySlice<UInt8>, from up: Upstream) -> Bool {
        guard services.http2, upstreamParser.isIdle, HTTP2OnlyUpstreams.looksLikeHTTP2Frames(bytes),
              mayOfferHTTP2Instead(of: up) else { return false }
        return reopenOfferingHTTP2(up.target)
    }

    /// Closes the current upstream and opens another to `target` offering
    /// `h2` only; the current request, if any, waits for it.
    private func reopenOfferingHTTP2(_ target: UpstreamTarget) -> Bool {
        upstream?.transport.close()
        upstream = nil
        http2Leg = nil
        upstreamParser = HTTP1Parser(mode: .response)
        do {
            upstream = try host.openUpstream(target, alpn: HTTP2OnlyUpstreams.offer)
        } catch {
            return false
        }
        if let current = exchange {
            heldRequest = forwardedRequest(current.request, names: current.names).bytes
            current.requestSent = nil
        }
        updateReading()
        return true
    }

    /// A connection ready for requests: HTTP/2 (translated), HTTP/2 frames
    /// where HTTP/1.1 was offered (connect again), or HTTP/1.1 (the held
    /// request goes).
    func adoptConsideringHTTP2(_ up: Upstream) {
        let early = upstreamEarlyBytes
        upstreamEarlyBytes = []
        if up.speaksHTTP2 {
            startHTTP2Leg(up, early: early)
            guard let leg = activeHTTP2Leg else { return }
            if exchange != nil, heldRequest != nil {
                heldRequest = nil
                sendRequestOverHTTP2(leg)
                if let current = exchange, current.requestEnded, activeHTTP2Leg === leg {
                    endRequestOverHTTP2(HTTPHeaders(), leg)
                }
                replayBacklog()
            }
            return
        }
        if up.offeredHTTP2 { services.http2OnlyUpstreams.forget(up.target) }
        if !early.isEmpty, retriedOfferingHTTP2(afterAnswer: early[...], from: up) { return }
        if let bytes = heldRequest, let current = exchange {
            heldRequest = nil
            upstreamParser.expectResponse(toMethod: current.request.method)
            up.transport.send(bytes)
            replayBacklog()
        }
    }
}
