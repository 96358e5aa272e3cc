#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The folder operations the stores on disk share (the cache's, and the capture's in Lookout).
public enum Directories {
    /// Creates `path` and any missing parents (mode 0700); on failure, the folder that could not
    /// be made and the errno.
    public static func create(_ path: String) -> (path: String, errno: Int32)? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { return (prefix, errno) }
        }
        return nil
    }

    /// The names in a folder, `.` and `..` left out; empty when it cannot be read.
    public static func names(in directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
