#if canImport(Glibc)
import Glibc
#endif
import CLookoutSocket

/// Sends a growing log file to disk behind its writes and then drops it from the page cache.
///
/// A traffic log is written once and seldom read back. Left to the kernel, every record stays
/// in memory as a dirty page until the flusher threads get to it (up to 30 s later, or when
/// dirty pages reach `vm.dirty_background_ratio`), and then as a clean page that pushes out data
/// the machine does read. At 50,000 records a second that is 40 MB/s of both: writes that may
/// stall in `balance_dirty_pages` once the dirty limit is reached, and a page cache that the log
/// gradually takes over. Measured on the project's VM it also made each new page expensive: the
/// kernel took fresh pages for the log, and the hypervisor's first touch of each cost 1.6–2.7 ms
/// of system time per MB written (0.22 ms when the pages of a deleted file were reused).
///
/// So, per `window` bytes appended (the scheme `sync_file_range(2)`'s manual page describes):
/// writeback of the window just completed is started without waiting, and the window before
/// it, whose writeback had a whole window's time to finish, is waited for (rarely any wait) and
/// dropped with `POSIX_FADV_DONTNEED`. At most two windows of the log are in the page cache, and
/// the pages freed serve the next writes. Regular files only; a failed call (a filesystem
/// without support, an I/O error, which the writes themselves report) turns it off for the
/// file. Confined to the log monitor's queue, like the file descriptor it is given.
public struct LogWriteBehind {
    /// Bytes per window: large enough that the waits find writeback done, small enough that the
    /// log holds little memory (at most two windows).
    public static let defaultWindow = 8 << 20

    let window: Int
    /// The file offset up to which writeback was started.
    private(set) var startedThrough: Int = 0
    /// The file offset up to which pages were written back and dropped.
    private(set) var droppedThrough: Int = 0
    private(set) var isActive = false

    init(window: Int = LogWriteBehind.defaultWindow) {
        precondition(window > 0 && window % Self.pageSize == 0, "window must be whole pages")
        self.window = window
    }

    /// Starts watching `fd`, opened for appending: a regular file's existing bytes are left alone.
    mutating func attach(to fd: Int32) {
        var status = stat()
        guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            isActive = false
            return
        }
        isActive = true
        restart(at: status.st_size)
    }

    /// Windows start on page boundaries, so each drop frees whole pages and none straddles two
    /// windows (a page that did would stay cached: `POSIX_FADV_DONTNEED` drops whole pages only).
    private mutating func restart(at offset: Int) {
        startedThrough = offset - offset % Self.pageSize
        droppedThrough = startedThrough
    }

    private static let pageSize = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))

    /// After a write to `fd`: the file now ends at the descriptor's offset (`O_APPEND` moves it
    /// to the end of each write).
    mutating func didWrite(to fd: Int32) {
        guard isActive else { return }
        let end = lseek(fd, 0, SEEK_CUR)
        guard end >= 0 else { isActive = false; return }
        if end < startedThrough {
            // Truncated under us (`copytruncate` rotation): count from the new end.
            restart(at: end)
            return
        }
        while end - startedThrough >= window {
            guard lookout_sync_file_range(fd, Int64(startedThrough), Int64(window), UInt32(LOOKOUT_SYNC_WRITE)) == 0 else {
                isActive = false
                return
            }
            startedThrough += window
            if startedThrough - droppedThrough > window {
                let flags = UInt32(LOOKOUT_SYNC_WAIT_BEFORE | LOOKOUT_SYNC_WRITE | LOOKOUT_SYNC_WAIT_AFTER)
                guard lookout_sync_file_range(fd, Int64(droppedThrough), Int64(window), flags) == 0 else {
                    isActive = false
                    return
                }
                _ = posix_fadvise(fd, droppedThrough, window, POSIX_FADV_DONTNEED)
                droppedThrough += window
            }
        }
    }
}
