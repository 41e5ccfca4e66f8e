import Foundation

extension ListenAddress {
    /// Binds the address and lets it go again: whether `serve` can listen there, asked before
    /// anything is written, so that a port in use leaves no new CA, HAR or events file behind.
    /// With port 0 only the address is tried (the kernel picks a free port when the proxy starts).
    public func checkCanListen() throws {
        let listener = try Socket.listen(self, backlog: 1)
        listener.close()
    }
}
