/// Path text without Foundation's `NSString` path methods.
///
/// `NSString.deletingLastPathComponent` traps on a one-character relative
/// path such as `x` (swift-corelibs-foundation in Swift 6.3), and a user may
/// well name a policy or report file that way.
public enum FilePaths {
    /// The directory part of `path`, as `dirname` without the `.`: `a/b` → `a`,
    /// `/x` → `/`, `x` → `` (the current directory), `a/b/` → `a`, `a//b` → `a`.
    public static func parent(of path: String) -> String {
        var scalars = Array(path.unicodeScalars)
        // Trailing slashes name the same file (`a/b/` is `a/b`), but `/` stays `/`.
        while scalars.count > 1 && scalars.last == "/" { scalars.removeLast() }
        guard let slash = scalars.lastIndex(of: "/") else { return "" }
        var end = slash
        while end > 0 && scalars[end - 1] == "/" { end -= 1 }
        if end == 0 { return "/" }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars[..<end])
        return String(out)
    }
}
