import Foundation

/// One HTTP exchange seen by the proxy, with everything the exports need.
///
/// Filled in by the connection as the exchange progresses and recorded once
/// complete (or failed) with ``CaptureRecorder/record(_:)-(Flow)``.
///
/// A value type kept in one shared, copy-on-write box: a flow is copied into
/// the recent-flows ring and every sink for each exchange, and copying two
/// dozen strings and arrays field by field (a retain each, and a release each
/// when the copy goes) showed in the proxy's per-request profile.
public struct Flow: Hashable, Sendable, Codable, Identifiable {
    private final class Storage: @unchecked Sendable {
        // Sendable: never mutated once shared (see `unique()`).
        // Written only while uniquely held, read-only once shared: no two
        // accesses can overlap, so the run-time exclusivity checks (ten
        // per flow, in building and logging it) are skipped.
        @exclusivity(unchecked) var id: String
        @exclusivity(unchecked) var startedAt: Date
        @exclusivity(unchecked) var clientAddress: String
        @exclusivity(unchecked) var scheme: String
        @exclusivity(unchecked) var host: String
        @exclusivity(unchecked) var port: Int
        @exclusivity(unchecked) var request: FlowRequest
        @exclusivity(unchecked) var response: FlowResponse?
        @exclusivity(unchecked) var timings: FlowTimings
        @exclusivity(unchecked) var clientTLS: ClientTLSDetails?
        @exclusivity(unchecked) var upstreamTLS: UpstreamTLSDetails?
        @exclusivity(unchecked) var outcome: TLSOutcomeEvent?
        @exclusivity(unchecked) var error: String?

        init(id: String, startedAt: Date, clientAddress: String, scheme: String, host: String, port: Int,
             request: FlowRequest, response: FlowResponse?, timings: FlowTimings, clientTLS: ClientTLSDetails?,
             upstreamTLS: UpstreamTLSDetails?, outcome: TLSOutcomeEvent?, error: String?) {
            self.id = id
            self.startedAt = startedAt
            self.clientAddress = clientAddress
            self.scheme = scheme
            self.host = host
            self.port = port
            self.request = request
            self.response = response
            self.timings = timings
            self.clientTLS = clientTLS
            self.upstreamTLS = upstreamTLS
            self.outcome = outcome
            self.error = error
        }

        func copy() -> Storage {
            Storage(id: id, startedAt: startedAt, clientAddress: clientAddress, scheme: scheme, host: host, port: port,
                    request: request, response: response, timings: timings, clientTLS: clientTLS,
                    upstreamTLS: upstreamTLS, outcome: outcome, error: error)
        }
    }

    // Fields below are read through `_read`: a reader borrows the box's
    // field instead of copying it (a copy retains every string and array in
    // it, and the capture writer reads each flow's fields twice).
    private var storage: Storage

    /// The box, copied first if another flow value shares it.
    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    public var id: String {
        _read { yield storage.id }
        _modify { yield &unique().id }
        set { unique().id = newValue }
    }
    /// When the request's first byte arrived.
    public var startedAt: Date {
        _read { yield storage.startedAt }
        _modify { yield &unique().startedAt }
        set { unique().startedAt = newValue }
    }
    /// `address:port` of the client.
    public var clientAddress: String {
        _read { yield storage.clientAddress }
        _modify { yield &unique().clientAddress }
        set { unique().clientAddress = newValue }
    }
    /// `http` or `https`.
    public var scheme: String {
        _read { yield storage.scheme }
        _modify { yield &unique().scheme }
        set { unique().scheme = newValue }
    }
    public var host: String {
        _read { yield storage.host }
        _modify { yield &unique().host }
        set { unique().host = newValue }
    }
    public var port: Int {
        _read { yield storage.port }
        _modify { yield &unique().port }
        set { unique().port = newValue }
    }
    public var request: FlowRequest {
        _read { yield storage.request }
        _modify { yield &unique().request }
        set { unique().request = newValue }
    }
    /// Nil when no response came (see ``error``).
    public var response: FlowResponse? {
        _read { yield storage.response }
        _modify { yield &unique().response }
        set { unique().response = newValue }
    }
    public var timings: FlowTimings {
        _read { yield storage.timings }
        _modify { yield &unique().timings }
        set { unique().timings = newValue }
    }
    public var clientTLS: ClientTLSDetails? {
        _read { yield storage.clientTLS }
        _modify { yield &unique().clientTLS }
        set { unique().clientTLS = newValue }
    }
    public var upstreamTLS: UpstreamTLSDetails? {
        _read { yield storage.upstreamTLS }
        _modify { yield &unique().upstreamTLS }
        set { unique().upstreamTLS = newValue }
    }
    /// The TLS outcome of the client connection that carried this exchange.
    public var outcome: TLSOutcomeEvent? {
        _read { yield storage.outcome }
        _modify { yield &unique().outcome }
        set { unique().outcome = newValue }
    }
    /// Why the exchange failed, e.g. the reason sent with a 502.
    public var error: String? {
        _read { yield storage.error }
        _modify { yield &unique().error }
        set { unique().error = newValue }
    }

    public init(
        id: String = FlowID.next(), startedAt: Date = Date(), clientAddress: String,
        scheme: String, host: String, port: Int, request: FlowRequest, response: FlowResponse? = nil,
        timings: FlowTimings = FlowTimings(), clientTLS: ClientTLSDetails? = nil,
        upstreamTLS: UpstreamTLSDetails? = nil, outcome: TLSOutcomeEvent? = nil, error: String? = nil
    ) {
        storage = Storage(id: id, startedAt: startedAt, clientAddress: clientAddress, scheme: scheme, host: host, port: port,
                          request: request, response: response, timings: timings, clientTLS: clientTLS,
                          upstreamTLS: upstreamTLS, outcome: outcome, error: error)
    }

    // Equality, hashing and coding by the fields, as if they were stored inline.

    public static func == (a: Flow, b: Flow) -> Bool {
        if a.storage === b.storage { return true }
        return a.id == b.id
            && a.startedAt == b.startedAt
            && a.clientAddress == b.clientAddress
            && a.scheme == b.scheme
            && a.host == b.host
            && a.port == b.port
            && a.request == b.request
            && a.response == b.response
            && a.timings == b.timings
            && a.clientTLS == b.clientTLS
            && a.upstreamTLS == b.upstreamTLS
            && a.outcome == b.outcome
            && a.error == b.error
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(startedAt)
        hasher.combine(clientAddress)
        hasher.combine(scheme)
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(request)
        hasher.combine(response)
        hasher.combine(timings)
        hasher.combine(clientTLS)
        hasher.combine(upstreamTLS)
        hasher.combine(outcome)
        hasher.combine(error)
    }

    private enum CodingKeys: String, CodingKey {
        case id, startedAt, clientAddress, scheme, host, port, request, response, timings, clientTLS, upstreamTLS, outcome, error
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        storage = Storage(
            id: try c.decode(String.self, forKey: .id),
            startedAt: try c.decode(Date.self, forKey: .startedAt),
            clientAddress: try c.decode(String.self, forKey: .clientAddress),
            scheme: try c.decode(String.self, forKey: .scheme),
            host: try c.decode(String.self, forKey: .host),
            port: try c.decode(Int.self, forKey: .port),
            request: try c.decode(FlowRequest.self, forKey: .request),
            response: try c.decodeIfPresent(FlowResponse.self, forKey: .response),
            timings: try c.decode(FlowTimings.self, forKey: .timings),
            clientTLS: try c.decodeIfPresent(ClientTLSDetails.self, forKey: .clientTLS),
            upstreamTLS: try c.decodeIfPresent(UpstreamTLSDetails.self, forKey: .upstreamTLS),
            outcome: try c.decodeIfPresent(TLSOutcomeEvent.self, forKey: .outcome),
            error: try c.decodeIfPresent(String.self, forKey: .error))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode(clientAddress, forKey: .clientAddress)
        try c.encode(scheme, forKey: .scheme)
        try c.encode(host, forKey: .host)
        try c.encode(port, forKey: .port)
        try c.encode(request, forKey: .request)
        try c.encodeIfPresent(response, forKey: .response)
        try c.encode(timings, forKey: .timings)
        try c.encodeIfPresent(clientTLS, forKey: .clientTLS)
        try c.encodeIfPresent(upstreamTLS, forKey: .upstreamTLS)
        try c.encodeIfPresent(outcome, forKey: .outcome)
        try c.encodeIfPresent(error, forKey: .error)
    }
}
