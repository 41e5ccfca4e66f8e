import PinproxyHTTP1

/// Basic Proxy-Authorization, checked on every request of a forward-proxy
/// connection (CONNECT included) when the proxy was started with credentials.
enum ProxyAuthorization {
    /// The 407 body's sentence.
    static let refusal = "this proxy requires Proxy-Authorization (Basic)"

    /// The 407 body's sentence for `head`: credentials that were sent and are wrong are said to be.
    static func refusal(for head: HTTP1RequestHead) -> String {
        head.headers["Proxy-Authorization"].isEmpty ? refusal : "the Proxy-Authorization credentials are wrong (this proxy takes Basic)"
    }

    /// Whether `head` carries the credentials (`nil`: none required).
    static func allows(_ head: HTTP1RequestHead, credentials: String?) -> Bool {
        guard let credentials else { return true }
        return head.headers["Proxy-Authorization"].contains { value in
            let parts = value.split(separator: " ", omittingEmptySubsequences: true)
            return parts.count == 2 && parts[0].lowercased() == "basic" && parts[1] == credentials
        }
    }

    /// Why a request was refused, for the log: never the credentials themselves.
    static func logReason(_ head: HTTP1RequestHead) -> String {
        head.headers["Proxy-Authorization"].isEmpty ? "no Proxy-Authorization" : "wrong Proxy-Authorization credentials"
    }
}
