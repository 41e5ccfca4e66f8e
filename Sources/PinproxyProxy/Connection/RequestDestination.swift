/// Where an HTTP/1 layer's requests go: chosen by the layer before it
/// (forward mode's first layer, or TLS interception once the upstream is known).
enum RequestDestination {
    /// An explicit proxy: requests carry absolute-form URLs, or are CONNECT.
    case forwardProxy
    /// Every request goes to this origin (interception, reverse mode).
    case origin(UpstreamTarget)
    /// Every request is answered with this error (the upstream failed).
    case failing(status: Int, reason: String, target: UpstreamTarget)

    /// The one target every request goes to; nil in forward mode.
    var fixedTarget: UpstreamTarget? {
        switch self {
        case .origin(let target), .failing(_, _, let target): return target
        case .forwardProxy: return nil
        }
    }
}
