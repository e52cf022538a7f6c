// The session's alerts for haul's C API (include/haul_torrent.h): the wait on libtorrent's notify callback,
// and each alert copied out of libtorrent's buffer into a plain struct.

#include "torrent_internal.hpp"

#include <libtorrent/alert_types.hpp>
#include <libtorrent/error_code.hpp>
#include <libtorrent/write_resume_data.hpp>

#include <chrono>
#include <cstdlib>
#include <vector>

using haul::copy_string;

extern "C" {

int haul_torrent_session_wait(haul_torrent_session *session, int timeout_ms) {
    std::unique_lock<std::mutex> guard(session->lock);
    auto ready = [session] { return session->pending || session->woken; };
    if (timeout_ms < 0) session->changed.wait(guard, ready);
    else session->changed.wait_for(guard, std::chrono::milliseconds(timeout_ms), ready);
    bool any = session->pending || session->woken;
    session->pending = false;
    session->woken = false;
    return any ? 1 : 0;
}

void haul_torrent_session_wake(haul_torrent_session *session) {
    std::lock_guard<std::mutex> guard(session->lock);
    session->woken = true;
    session->changed.notify_all();
}

}  // extern "C"

namespace {

void set_error(haul_torrent_alert &out, const lt::error_code &code) {
    out.error_code = code.value();
    out.disk_full = code == boost::system::errc::no_space_on_device ? 1 : 0;
}

// The parts of `alert` haul reads, into `out` (already zeroed, index -1).
void copy_alert(lt::alert *alert, haul_torrent_alert &out) {
    // alert_cast matches the exact type only: the base class of every torrent's alert needs dynamic_cast.
    // A torrent's hashes from its handle while libtorrent holds it; its removal's own, after.
    if (auto *removed = lt::alert_cast<lt::torrent_removed_alert>(alert)) {
        haul::copy_info_hashes(removed->info_hashes, out.v1, out.v2);
    } else if (auto *torrent = dynamic_cast<lt::torrent_alert *>(alert)) {
        haul::copy_info_hashes(torrent->handle.info_hashes(), out.v1, out.v2);
    }
    copy_string(alert->message(), out.message, sizeof out.message);
    if (lt::alert_cast<lt::metadata_received_alert>(alert)) {
        out.kind = HAUL_ALERT_METADATA_RECEIVED;
    } else if (auto *a = lt::alert_cast<lt::metadata_failed_alert>(alert)) {
        out.kind = HAUL_ALERT_METADATA_FAILED;
        set_error(out, a->error);
    } else if (auto *a = lt::alert_cast<lt::file_completed_alert>(alert)) {
        out.kind = HAUL_ALERT_FILE_COMPLETED;
        out.index = static_cast<int>(a->index);
    } else if (lt::alert_cast<lt::torrent_finished_alert>(alert)) {
        out.kind = HAUL_ALERT_TORRENT_FINISHED;
    } else if (lt::alert_cast<lt::torrent_checked_alert>(alert)) {
        out.kind = HAUL_ALERT_TORRENT_CHECKED;
    } else if (auto *a = lt::alert_cast<lt::torrent_error_alert>(alert)) {
        out.kind = HAUL_ALERT_TORRENT_ERROR;
        set_error(out, a->error);
    } else if (auto *a = lt::alert_cast<lt::file_error_alert>(alert)) {
        out.kind = HAUL_ALERT_FILE_ERROR;
        set_error(out, a->error);
    } else if (auto *a = lt::alert_cast<lt::save_resume_data_alert>(alert)) {
        out.kind = HAUL_ALERT_SAVE_RESUME_DATA;
        std::vector<char> data = lt::write_resume_data_buf(a->params);
        out.data = static_cast<char *>(std::malloc(data.size() ? data.size() : 1));
        if (out.data != nullptr) {
            std::memcpy(out.data, data.data(), data.size());
            out.length = data.size();
        }
    } else if (auto *a = lt::alert_cast<lt::save_resume_data_failed_alert>(alert)) {
        out.kind = HAUL_ALERT_SAVE_RESUME_FAILED;
        set_error(out, a->error);
    } else if (auto *a = lt::alert_cast<lt::file_renamed_alert>(alert)) {
        out.kind = HAUL_ALERT_FILE_RENAMED;
        out.index = static_cast<int>(a->index);
    } else if (auto *a = lt::alert_cast<lt::file_rename_failed_alert>(alert)) {
        out.kind = HAUL_ALERT_FILE_RENAME_FAILED;
        out.index = static_cast<int>(a->index);
        set_error(out, a->error);
    } else if (auto *a = lt::alert_cast<lt::state_changed_alert>(alert)) {
        out.kind = HAUL_ALERT_STATE_CHANGED;
        out.index = static_cast<int>(a->state);
    } else if (auto *a = lt::alert_cast<lt::tracker_error_alert>(alert)) {
        out.kind = HAUL_ALERT_TRACKER_ERROR;
        set_error(out, a->error);
    } else if (auto *a = lt::alert_cast<lt::listen_failed_alert>(alert)) {
        out.kind = HAUL_ALERT_LISTEN_FAILED;
        set_error(out, a->error);
    } else if (auto *a = lt::alert_cast<lt::hash_failed_alert>(alert)) {
        out.kind = HAUL_ALERT_HASH_FAILED;
        out.index = static_cast<int>(a->piece_index);
    } else if (lt::alert_cast<lt::torrent_removed_alert>(alert)) {
        out.kind = HAUL_ALERT_TORRENT_REMOVED;
    } else {
        out.kind = HAUL_ALERT_OTHER;
    }
}

}  // namespace

extern "C" {

haul_torrent_alert *haul_torrent_session_pop_alerts(haul_torrent_session *session, size_t *count) {
    *count = 0;
    try {
        std::vector<lt::alert *> alerts;
        session->session.pop_alerts(&alerts);
        if (alerts.empty()) return nullptr;
        auto *out = static_cast<haul_torrent_alert *>(std::calloc(alerts.size(), sizeof(haul_torrent_alert)));
        if (out == nullptr) return nullptr;
        for (size_t at = 0; at < alerts.size(); ++at) {
            out[at].index = -1;
            try {
                copy_alert(alerts[at], out[at]);
            } catch (...) {
                out[at].kind = HAUL_ALERT_OTHER;
            }
        }
        *count = alerts.size();
        return out;
    } catch (...) {
        return nullptr;
    }
}

void haul_torrent_alerts_free(haul_torrent_alert *alerts, size_t count) {
    if (alerts == nullptr) return;
    for (size_t at = 0; at < count; ++at) std::free(alerts[at].data);
    std::free(alerts);
}

}  // extern "C"
