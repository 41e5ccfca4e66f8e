extension HTTP1ExchangeLayer {
    /// Where a layer's requests go: chosen by the layer before it (forward
    /// mode's first layer, or TLS interception once the upstream is known).
    enum Kind {
        /// An explicit proxy: requests carry absolute-form URLs, or are CONNECT.
        case forwardProxy
        /// Every request goes to this origin (interception, reverse mode).
        case origin(UpstreamTarget)
        /// Every request is answered with this error (the upstream failed).
        case failing(status: Int, reason: String, target: UpstreamTarget)
    }
}
