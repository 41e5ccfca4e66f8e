import Foundation
import PinproxyCertificates

extension ListenAddress {
    /// Binds the address and lets it go again: whether `serve` can listen there, asked before
    /// anything is written, so that a port in use leaves no new CA, HAR or events file behind.
    /// With port 0 only the address is tried (the kernel picks a free port when the proxy starts).
    /// A port in use is refused with the `flag` that chose it, so the way out is in the message.
    public func checkCanListen(flag: String) throws {
        do {
            let listener = try Socket.listen(self, backlog: 1)
            listener.close()
        } catch let error as PinproxyError where error.code == .addressInUse {
            throw PinproxyError(.addressInUse, "\(error.reason) (\(flag)): another process holds that port; give \(flag) another address (\(flag) \(host.contains(":") ? "[\(host)]" : host):0 picks a free port, which the ready line names)")
        }
    }
}
