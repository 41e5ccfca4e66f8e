import Foundation

/// One process-wide lock around every use of Foundation's XML types.
///
/// On Linux, `XMLParser` and `XMLDocument` sit on libxml2, whose global
/// state (parser initialisation, the structured error handler, the trees
/// behind `XMLNode`) the library documents as the caller's to synchronise;
/// Swift Testing and concurrent `check` runs build and free documents on
/// many threads. Documents here are small, so serialising them costs
/// nothing that shows.
public enum XMLSerialization {
    private static let lock = NSRecursiveLock()

    /// Runs `body` while no other thread uses Foundation's XML types
    /// through this function. Reentrant, so a caller that inspects a document
    /// may hold it across code that builds one.
    public static func exclusively<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
