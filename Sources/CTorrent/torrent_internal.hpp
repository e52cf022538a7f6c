// What torrent.cpp and alerts.cpp share: the C API's opaque types, and the string helpers.
#ifndef HAUL_TORRENT_INTERNAL_HPP
#define HAUL_TORRENT_INTERNAL_HPP

#include "haul_torrent.h"

#include <libtorrent/add_torrent_params.hpp>
#include <libtorrent/session.hpp>
#include <libtorrent/session_params.hpp>
#include <libtorrent/hex.hpp>
#include <libtorrent/info_hash.hpp>
#include <libtorrent/torrent_handle.hpp>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

namespace lt = libtorrent;

struct haul_torrent_params {
    lt::add_torrent_params params;
};

struct haul_torrent_session {
    lt::session session;
    // haul_torrent_session_wait's own condition: libtorrent's notify callback only sets `pending` (it must not
    // block nor call back into the session), and haul_torrent_session_wake sets `woken`.
    std::mutex lock;
    std::condition_variable changed;
    bool pending = false;
    bool woken = false;

    explicit haul_torrent_session(lt::session_params &&params) : session(std::move(params)) {}
};

struct haul_torrent_handle {
    lt::torrent_handle handle;
};

namespace haul {

// `text` into `out` (at most size - 1 bytes and a NUL).
inline void copy_string(const std::string &text, char *out, size_t size) {
    if (out == nullptr || size == 0) return;
    size_t length = text.size() < size - 1 ? text.size() : size - 1;
    std::memcpy(out, text.data(), length);
    out[length] = '\0';
}

// The hashes in hex into v1 and v2 ("" for a version the torrent has not).
inline void copy_info_hashes(const lt::info_hash_t &hashes, char v1[41], char v2[65]) {
    v1[0] = '\0';
    v2[0] = '\0';
    if (hashes.has_v1()) copy_string(lt::aux::to_hex(hashes.v1), v1, 41);
    if (hashes.has_v2()) copy_string(lt::aux::to_hex(hashes.v2), v2, 65);
}

}  // namespace haul

#endif
