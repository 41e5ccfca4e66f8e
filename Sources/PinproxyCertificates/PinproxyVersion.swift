/// The version of pinproxy, defined here and nowhere else.
///
/// `pinproxy --version` prints it; anything else that names the version
/// (a HAR file's creator, a report) reads it from here.
public enum PinproxyVersion {
    /// Semantic version: major.minor.patch.
    public static let current = "0.1.0"
}
