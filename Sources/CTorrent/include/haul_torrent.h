// haul's C API over libtorrent-rasterbar (Sources/CTorrent/torrent.cpp). Only plain C crosses it: opaque
// handles, structs of numbers and fixed-size strings, and buffers the caller owns or frees with the matching
// `_free`. No C++ type and no exception crosses: every libtorrent call is inside a try/catch whose message
// becomes the `error` string (at most `error_size` bytes, NUL-terminated) of a call that failed.
#ifndef HAUL_TORRENT_H
#define HAUL_TORRENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// What a torrent is added with: a .torrent's metadata, a magnet's info-hashes and trackers, or resume data;
// then the download's folder, each file's name on disk and which files are wanted.
typedef struct haul_torrent_params haul_torrent_params;
// One libtorrent session: its listen socket, its peers, its disk threads, its alerts.
typedef struct haul_torrent_session haul_torrent_session;
// A torrent in a session (a copy of libtorrent's handle; free it with haul_torrent_handle_free).
typedef struct haul_torrent_handle haul_torrent_handle;

/// A .torrent file's bytes (bencoded; libtorrent's decoder bounds its depth and item count).
haul_torrent_params *haul_torrent_params_from_buffer(const char *bytes, size_t length, char *error, size_t error_size);
/// A magnet link: v1 (hex or base32 btih) and v2 (btmh) info-hashes, trackers, name, peers.
haul_torrent_params *haul_torrent_params_from_magnet(const char *uri, char *error, size_t error_size);
/// Resume data that haul_torrent_alert's `data` held (bencoded), with the metadata it saved when it had it.
haul_torrent_params *haul_torrent_params_from_resume(const char *bytes, size_t length, char *error, size_t error_size);
void haul_torrent_params_free(haul_torrent_params *params);

/// 1 when the params hold the metadata (the file list), 0 for a magnet that has not got it yet.
int haul_torrent_params_has_metadata(const haul_torrent_params *params);
/// The info-hashes in lower-case hex, "" when the torrent has none of that version (v1: 40 digits, v2: 64).
void haul_torrent_params_info_hashes(const haul_torrent_params *params, char v1[41], char v2[65]);
/// The torrent's name (its metadata's, else the magnet's dn=), truncated to `size` bytes with a NUL.
void haul_torrent_params_name(const haul_torrent_params *params, char *name, size_t size);
/// The number of trackers the params name.
int haul_torrent_params_tracker_count(const haul_torrent_params *params);

typedef struct {
    int64_t size;
    /// 1 for a BEP 47 pad file (never written), 2 for a symbolic link, 0 otherwise.
    int kind;
} haul_torrent_file;

/// The number of files of the metadata (0 without metadata).
int haul_torrent_params_file_count(const haul_torrent_params *params);
/// File `index`: its size and kind, and its path inside the torrent as the metadata gives it ('/' between the
/// parts, the torrent's own folder first in a multi-file torrent), truncated to `path_size` with a NUL.
/// Returns 0, or -1 for an index out of range.
int haul_torrent_params_file(const haul_torrent_params *params, int index, haul_torrent_file *file,
                             char *path, size_t path_size);

/// Where the files go: the folder names are resolved against it.
void haul_torrent_params_set_save_path(haul_torrent_params *params, const char *path);
/// File `index` is written at `path` (relative to the save path) from the first byte.
void haul_torrent_params_rename_file(haul_torrent_params *params, int index, const char *path);
/// The path file `index` is renamed to (resume data keeps them), into `path`: 1 when it has one, else 0.
int haul_torrent_params_renamed_file(const haul_torrent_params *params, int index, char *path, size_t path_size);
/// 0 to leave file `index` out, 1...7 to download it (libtorrent's priorities; 4 is the default).
void haul_torrent_params_set_file_priority(haul_torrent_params *params, int index, int priority);
/// Another tracker (tier 0).
void haul_torrent_params_add_tracker(haul_torrent_params *params, const char *url);
/// `to` gets `from`'s metadata (a magnet's, once fetched), keeping its own trackers and name.
void haul_torrent_params_take_metadata(haul_torrent_params *to, const haul_torrent_params *from);
/// In upload mode a torrent requests no piece: a magnet fetches its metadata so, and writes nothing.
void haul_torrent_params_set_upload_mode(haul_torrent_params *params, int on);
/// Start the torrent paused (for a test, or a queue that starts it later).
void haul_torrent_params_set_paused(haul_torrent_params *params, int paused);

typedef struct {
    /// "127.0.0.1:0" and the like: libtorrent's listen_interfaces (port 0: the system picks one).
    const char *listen_interfaces;
    /// Where outgoing connections come from ("" for any): "127.0.0.1" keeps a test's swarm on loopback.
    const char *outgoing_interfaces;
    int enable_dht;
    int enable_pex;
    int enable_lsd;
    int enable_upnp;
    int enable_natpmp;
    /// Bytes per second, 0 for no limit.
    int download_rate_limit;
    int upload_rate_limit;
    /// Most connections over all torrents (0: libtorrent's default).
    int connections_limit;
    /// Peers on the same address (a test's swarm is all on 127.0.0.1).
    int allow_same_address;
} haul_torrent_session_config;

haul_torrent_session *haul_torrent_session_new(const haul_torrent_session_config *config, char *error,
                                               size_t error_size);
/// Ends the session: its peers are disconnected, its trackers told, its files closed. Blocks until done.
void haul_torrent_session_free(haul_torrent_session *session);
/// The port the session listens on (0 before it listens).
int haul_torrent_session_listen_port(haul_torrent_session *session);

/// Adds a torrent (the params are copied; the caller still frees them). NULL and `error` when libtorrent
/// refuses it (a duplicate, a save path it cannot use).
haul_torrent_handle *haul_torrent_session_add(haul_torrent_session *session, const haul_torrent_params *params,
                                              char *error, size_t error_size);
/// Takes the torrent out of the session (its files stay).
void haul_torrent_session_remove(haul_torrent_session *session, const haul_torrent_handle *handle);

void haul_torrent_handle_free(haul_torrent_handle *handle);
/// The torrent's info-hashes in hex ("" for a version it has not), as its alerts carry them
/// (`haul_torrent_alert.v1`, `.v2`): what names a torrent for good. libtorrent's own id for a handle is
/// its object's address, 0 once the torrent is gone, and the next torrent may get it.
void haul_torrent_handle_info_hashes(const haul_torrent_handle *handle, char v1[41], char v2[65]);

enum {
    HAUL_TORRENT_CHECKING_FILES = 1,
    HAUL_TORRENT_DOWNLOADING_METADATA = 2,
    HAUL_TORRENT_DOWNLOADING = 3,
    HAUL_TORRENT_FINISHED = 4,
    HAUL_TORRENT_SEEDING = 5,
    HAUL_TORRENT_CHECKING_RESUME_DATA = 7,
};

typedef struct {
    int state;
    int has_metadata;
    int paused;
    /// Bytes of the wanted files, and of those the pieces that passed their hash check.
    int64_t total_wanted;
    int64_t total_wanted_done;
    /// Payload bytes received and sent in this session.
    int64_t total_payload_download;
    int64_t total_payload_upload;
    /// Payload bytes per second.
    int download_rate;
    int upload_rate;
    int num_peers;
    int num_seeds;
    /// 1 when the torrent changed since its resume data was last saved (a piece verified, a file renamed).
    int need_save_resume;
    /// What the torrent's error is, "" when it has none.
    char error[256];
} haul_torrent_status;

int haul_torrent_handle_status(const haul_torrent_handle *handle, haul_torrent_status *status, char *error,
                               size_t error_size);
/// The metadata of a torrent that has it (a magnet's, once fetched), as params to read its files from; NULL
/// before.
haul_torrent_params *haul_torrent_handle_metadata(const haul_torrent_handle *handle);
/// Each file's bytes in pieces that passed their hash check, into `bytes[0..count)`. Returns the count written.
int haul_torrent_handle_file_progress(const haul_torrent_handle *handle, int64_t *bytes, int count);
void haul_torrent_handle_rename_file(const haul_torrent_handle *handle, int index, const char *path);
void haul_torrent_handle_set_file_priority(const haul_torrent_handle *handle, int index, int priority);
/// The file's path now, relative to the save path.
void haul_torrent_handle_file_path(const haul_torrent_handle *handle, int index, char *path, size_t size);
/// Asks for resume data (a SAVE_RESUME_DATA or SAVE_RESUME_FAILED alert answers), with the metadata in it.
void haul_torrent_handle_save_resume_data(const haul_torrent_handle *handle);
void haul_torrent_handle_pause(const haul_torrent_handle *handle);
void haul_torrent_handle_resume(const haul_torrent_handle *handle);

enum {
    HAUL_ALERT_OTHER = 0,
    HAUL_ALERT_METADATA_RECEIVED = 1,
    HAUL_ALERT_FILE_COMPLETED = 2,
    HAUL_ALERT_TORRENT_FINISHED = 3,
    HAUL_ALERT_TORRENT_ERROR = 4,
    HAUL_ALERT_FILE_ERROR = 5,
    HAUL_ALERT_SAVE_RESUME_DATA = 6,
    HAUL_ALERT_SAVE_RESUME_FAILED = 7,
    HAUL_ALERT_FILE_RENAMED = 8,
    HAUL_ALERT_FILE_RENAME_FAILED = 9,
    HAUL_ALERT_STATE_CHANGED = 10,
    HAUL_ALERT_TORRENT_CHECKED = 11,
    HAUL_ALERT_TRACKER_ERROR = 12,
    HAUL_ALERT_LISTEN_FAILED = 13,
    HAUL_ALERT_METADATA_FAILED = 14,
    HAUL_ALERT_HASH_FAILED = 15,
    HAUL_ALERT_TORRENT_REMOVED = 16,
};

typedef struct {
    int kind;
    /// The info-hashes of the torrent it is about, in hex; both "" for the session's own.
    char v1[41];
    char v2[65];
    /// The file (FILE_COMPLETED, FILE_RENAMED...), piece (HASH_FAILED), or new state (STATE_CHANGED); else -1.
    int index;
    /// libtorrent's error code's value, 0 when none; `disk_full` is 1 when it is ENOSPC.
    int error_code;
    int disk_full;
    /// libtorrent's words for it (its message()), truncated.
    char message[512];
    /// SAVE_RESUME_DATA: the bencoded resume data, malloc'd, freed by haul_torrent_alerts_free.
    char *data;
    size_t length;
} haul_torrent_alert;

/// Blocks until libtorrent has alerts, haul_torrent_session_wake is called, or `timeout_ms` passed
/// (-1: no bound). Returns 1 when there may be alerts, 0 otherwise. A dedicated thread calls it.
int haul_torrent_session_wait(haul_torrent_session *session, int timeout_ms);
/// Wakes haul_torrent_session_wait (to stop the thread that waits).
void haul_torrent_session_wake(haul_torrent_session *session);
/// The alerts since the last call, copied out of libtorrent's; *count is their number. Free with
/// haul_torrent_alerts_free (NULL when there are none).
haul_torrent_alert *haul_torrent_session_pop_alerts(haul_torrent_session *session, size_t *count);
void haul_torrent_alerts_free(haul_torrent_alert *alerts, size_t count);

#ifdef __cplusplus
}
#endif

#endif
