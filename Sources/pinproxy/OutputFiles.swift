import ArgumentParser
import Foundation
import PinproxyCertificates

/// The files a command will write, checked before it writes any: two options naming one file
/// would leave only the last writer's content (a HAR and event lines mixed, a chain overwritten by
/// its key), and a file of the CA directory under a capture or a forged chain would lose the CA.
enum OutputFiles {
    /// Throws when two of `outputs` name the same file, or one names a file of `caDirectory`.
    static func check(_ outputs: [(option: String, path: String?)], caDirectory: CADirectory? = nil) throws {
        let named = outputs.compactMap { output in output.path.map { (option: output.option, path: $0) } }
        for (index, output) in named.enumerated() {
            for other in named.dropFirst(index + 1) where sameFile(output.path, other.path) {
                throw ValidationError("\(output.option) and \(other.option) both name \(output.path): each needs a file of its own")
            }
            guard let caDirectory else { continue }
            for own in [caDirectory.certificatePEMPath, caDirectory.privateKeyPath, caDirectory.certificateDERPath, caDirectory.pkcs12Path]
            where sameFile(output.path, own) {
                throw ValidationError("\(output.option) \(output.path) is the CA's own \((own as NSString).lastPathComponent): "
                                      + "writing there would destroy the CA; name another file")
            }
        }
    }

    /// Whether `a` and `b` name one file: the same path once made absolute and its links
    /// resolved, or, both existing, the same device and inode (a hard link).
    static func sameFile(_ a: String, _ b: String) -> Bool {
        func resolved(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path }
        if resolved(a) == resolved(b) { return true }
        var first = stat(), second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }
}
