import Synchronization

/// A `Synchronization.Mutex` in a class, so it can be stored in `let`s of
/// other reference types and shared.
public final class Locked<Value: ~Copyable>: Sendable {
    private let mutex: Mutex<Value>
    public init(_ value: consuming sending Value) { mutex = Mutex(value) }
    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock(body)
    }
}
