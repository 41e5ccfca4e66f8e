// Certificates speak in the base module's types (`PinproxyError`, `HostName`,
// `FileIO`) in their public API, so importing this module brings them along.
@_exported import PinproxyBase
