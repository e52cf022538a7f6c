// haul's C API over libtorrent-rasterbar 2.0 (include/haul_torrent.h).
//
// A C API, not Swift's C++ interop: libtorrent's headers pull in Boost.Asio, whose templates the interop does
// not take cleanly, and an exception thrown through Swift frames ends the process. Here every libtorrent call
// is inside a try/catch whose message is handed back as a string, and only plain C types cross.

#include "torrent_internal.hpp"

#include <openssl/crypto.h>

#include <libtorrent/add_torrent_params.hpp>
#include <libtorrent/alert_types.hpp>
#include <libtorrent/error_code.hpp>
#include <libtorrent/extensions/smart_ban.hpp>
#include <libtorrent/extensions/ut_metadata.hpp>
#include <libtorrent/extensions/ut_pex.hpp>
#include <libtorrent/hex.hpp>
#include <libtorrent/load_torrent.hpp>
#include <libtorrent/magnet_uri.hpp>
#include <libtorrent/read_resume_data.hpp>
#include <libtorrent/session.hpp>
#include <libtorrent/session_params.hpp>
#include <libtorrent/settings_pack.hpp>
#include <libtorrent/torrent_handle.hpp>
#include <libtorrent/torrent_info.hpp>
#include <libtorrent/torrent_status.hpp>
#include <libtorrent/write_resume_data.hpp>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

namespace {

using haul::copy_string;

void fail(char *error, size_t error_size, const std::string &message) { copy_string(message, error, error_size); }

// The caught exception's words; what is not a std::exception is named as such.
std::string current_message() {
    try {
        throw;
    } catch (const std::exception &exception) {
        return exception.what();
    } catch (...) {
        return "unknown error in libtorrent";
    }
}

// A .torrent's bounds: a hostile file cannot make the decoder allocate without end. libtorrent's defaults,
// but for the file count: a million files is a torrent a user may have, not one that must be refused.
lt::load_torrent_limits limits() {
    lt::load_torrent_limits bounds;
    bounds.max_buffer_size = 64 * 1024 * 1024;
    bounds.max_decode_depth = 100;
    bounds.max_decode_tokens = 10000000;
    bounds.max_pieces = 0x400000;
    return bounds;
}

// Added torrents start now and stay started: haul, not libtorrent's queue, decides what runs.
void start_unmanaged(lt::add_torrent_params &params) {
    params.flags &= ~(lt::torrent_flags::auto_managed | lt::torrent_flags::paused);
}

}  // namespace

// OpenSSL frees its global locks and tables in an atexit handler unless its first init says not to, and haul
// says so (`haul_openssl_keep_at_exit`): the curl thread is not stopped before exit, and a handshake under
// way there would use them freed (a crash at exit, seen under ThreadSanitizer with SFTP). libtorrent's own
// initialiser (Boost.Asio's OpenSSL set-up) calls OpenSSL's init as the library loads, before `main`, which
// registered the handler. The executable's preinit functions run before any shared library's initialisers:
// this one asks first. (OpenSSL's init needs nothing of its own initialisers: it makes its locks on demand.)
static void haul_openssl_before_libraries() { OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr); }
__attribute__((section(".preinit_array"), used)) static void (*const haul_preinit)() = haul_openssl_before_libraries;

extern "C" {

haul_torrent_params *haul_torrent_params_from_buffer(const char *bytes, size_t length, char *error, size_t error_size) {
    try {
        auto *result = new haul_torrent_params;
        try {
            result->params = lt::load_torrent_buffer(lt::span<const char>(bytes, static_cast<std::ptrdiff_t>(length)), limits());
        } catch (...) {
            delete result;
            throw;
        }
        start_unmanaged(result->params);
        return result;
    } catch (...) {
        fail(error, error_size, current_message());
        return nullptr;
    }
}

haul_torrent_params *haul_torrent_params_from_magnet(const char *uri, char *error, size_t error_size) {
    try {
        lt::error_code code;
        lt::add_torrent_params params = lt::parse_magnet_uri(uri, code);
        if (code) {
            fail(error, error_size, code.message());
            return nullptr;
        }
        if (!params.info_hashes.has_v1() && !params.info_hashes.has_v2()) {
            fail(error, error_size, "no info-hash");
            return nullptr;
        }
        auto *result = new haul_torrent_params{std::move(params)};
        start_unmanaged(result->params);
        return result;
    } catch (...) {
        fail(error, error_size, current_message());
        return nullptr;
    }
}

haul_torrent_params *haul_torrent_params_from_resume(const char *bytes, size_t length, char *error, size_t error_size) {
    try {
        lt::error_code code;
        lt::add_torrent_params params = lt::read_resume_data(
            lt::span<const char>(bytes, static_cast<std::ptrdiff_t>(length)), code, limits());
        if (code) {
            fail(error, error_size, code.message());
            return nullptr;
        }
        auto *result = new haul_torrent_params{std::move(params)};
        start_unmanaged(result->params);
        return result;
    } catch (...) {
        fail(error, error_size, current_message());
        return nullptr;
    }
}

void haul_torrent_params_free(haul_torrent_params *params) { delete params; }

int haul_torrent_params_has_metadata(const haul_torrent_params *params) {
    return params->params.ti && params->params.ti->is_valid() ? 1 : 0;
}

void haul_torrent_params_info_hashes(const haul_torrent_params *params, char v1[41], char v2[65]) {
    v1[0] = '\0';
    v2[0] = '\0';
    try {
        haul::copy_info_hashes(params->params.ti ? params->params.ti->info_hashes() : params->params.info_hashes, v1, v2);
    } catch (...) {
    }
}

void haul_torrent_params_name(const haul_torrent_params *params, char *name, size_t size) {
    try {
        copy_string(params->params.ti ? params->params.ti->name() : params->params.name, name, size);
    } catch (...) {
        copy_string("", name, size);
    }
}

int haul_torrent_params_tracker_count(const haul_torrent_params *params) {
    size_t count = params->params.trackers.size();
    if (params->params.ti) count += params->params.ti->trackers().size();
    return static_cast<int>(count);
}

int haul_torrent_params_file_count(const haul_torrent_params *params) {
    return params->params.ti ? params->params.ti->files().num_files() : 0;
}

int haul_torrent_params_file(const haul_torrent_params *params, int index, haul_torrent_file *file, char *path,
                             size_t path_size) {
    try {
        if (!params->params.ti || index < 0 || index >= params->params.ti->files().num_files()) return -1;
        const lt::file_storage &files = params->params.ti->files();
        lt::file_index_t at(index);
        file->size = files.file_size(at);
        lt::file_flags_t flags = files.file_flags(at);
        file->kind = (flags & lt::file_storage::flag_pad_file) ? 1 : (flags & lt::file_storage::flag_symlink) ? 2 : 0;
        copy_string(files.file_path(at), path, path_size);
        return 0;
    } catch (...) {
        return -1;
    }
}

void haul_torrent_params_set_save_path(haul_torrent_params *params, const char *path) { params->params.save_path = path; }

void haul_torrent_params_rename_file(haul_torrent_params *params, int index, const char *path) {
    params->params.renamed_files[lt::file_index_t(index)] = path;
}

int haul_torrent_params_renamed_file(const haul_torrent_params *params, int index, char *path, size_t path_size) {
    auto found = params->params.renamed_files.find(lt::file_index_t(index));
    if (found == params->params.renamed_files.end()) return 0;
    copy_string(found->second, path, path_size);
    return 1;
}

void haul_torrent_params_set_file_priority(haul_torrent_params *params, int index, int priority) {
    auto &priorities = params->params.file_priorities;
    if (static_cast<int>(priorities.size()) <= index) {
        priorities.resize(static_cast<size_t>(index) + 1, lt::default_priority);
    }
    priorities[lt::file_index_t(index)] = lt::download_priority_t(static_cast<std::uint8_t>(priority));
}

void haul_torrent_params_add_tracker(haul_torrent_params *params, const char *url) {
    params->params.trackers.emplace_back(url);
    params->params.tracker_tiers.resize(params->params.trackers.size(), 0);
}

void haul_torrent_params_take_metadata(haul_torrent_params *to, const haul_torrent_params *from) {
    to->params.ti = from->params.ti;
}

void haul_torrent_params_set_upload_mode(haul_torrent_params *params, int on) {
    if (on) params->params.flags |= lt::torrent_flags::upload_mode;
    else params->params.flags &= ~lt::torrent_flags::upload_mode;
}

void haul_torrent_params_set_paused(haul_torrent_params *params, int paused) {
    if (paused) params->params.flags |= lt::torrent_flags::paused;
    else params->params.flags &= ~lt::torrent_flags::paused;
}

haul_torrent_session *haul_torrent_session_new(const haul_torrent_session_config *config, char *error,
                                               size_t error_size) {
    try {
        lt::settings_pack pack;
        pack.set_str(lt::settings_pack::listen_interfaces, config->listen_interfaces);
        pack.set_str(lt::settings_pack::outgoing_interfaces,
                     config->outgoing_interfaces ? config->outgoing_interfaces : "");
        pack.set_bool(lt::settings_pack::enable_dht, config->enable_dht != 0);
        pack.set_bool(lt::settings_pack::enable_lsd, config->enable_lsd != 0);
        pack.set_bool(lt::settings_pack::enable_upnp, config->enable_upnp != 0);
        pack.set_bool(lt::settings_pack::enable_natpmp, config->enable_natpmp != 0);
        pack.set_int(lt::settings_pack::download_rate_limit, config->download_rate_limit);
        pack.set_int(lt::settings_pack::upload_rate_limit, config->upload_rate_limit);
        if (config->connections_limit > 0) pack.set_int(lt::settings_pack::connections_limit, config->connections_limit);
        pack.set_bool(lt::settings_pack::allow_multiple_connections_per_ip, config->allow_same_address != 0);
        pack.set_int(lt::settings_pack::alert_mask,
                     static_cast<int>(static_cast<std::uint32_t>(
                         lt::alert_category::status | lt::alert_category::error | lt::alert_category::storage |
                         lt::alert_category::file_progress | lt::alert_category::tracker)));
        lt::session_params params(std::move(pack));
        // The extensions are chosen below: PEX only when asked for.
        params.extensions.clear();
        auto *result = new haul_torrent_session(std::move(params));
        result->session.add_extension(&lt::create_ut_metadata_plugin);
        result->session.add_extension(&lt::create_smart_ban_plugin);
        if (config->enable_pex) result->session.add_extension(&lt::create_ut_pex_plugin);
        result->session.set_alert_notify([result] {
            std::lock_guard<std::mutex> guard(result->lock);
            result->pending = true;
            result->changed.notify_all();
        });
        return result;
    } catch (...) {
        fail(error, error_size, current_message());
        return nullptr;
    }
}

void haul_torrent_session_free(haul_torrent_session *session) {
    try {
        session->session.set_alert_notify([] {});
    } catch (...) {
    }
    delete session;
}

int haul_torrent_session_listen_port(haul_torrent_session *session) {
    try {
        return session->session.listen_port();
    } catch (...) {
        return 0;
    }
}

haul_torrent_handle *haul_torrent_session_add(haul_torrent_session *session, const haul_torrent_params *params,
                                              char *error, size_t error_size) {
    try {
        lt::error_code code;
        lt::torrent_handle handle = session->session.add_torrent(params->params, code);
        if (code) {
            fail(error, error_size, code.message());
            return nullptr;
        }
        return new haul_torrent_handle{handle};
    } catch (...) {
        fail(error, error_size, current_message());
        return nullptr;
    }
}

void haul_torrent_session_remove(haul_torrent_session *session, const haul_torrent_handle *handle) {
    try {
        session->session.remove_torrent(handle->handle);
    } catch (...) {
    }
}

void haul_torrent_handle_free(haul_torrent_handle *handle) { delete handle; }

void haul_torrent_handle_info_hashes(const haul_torrent_handle *handle, char v1[41], char v2[65]) {
    haul::copy_info_hashes(handle->handle.info_hashes(), v1, v2);
}

int haul_torrent_handle_status(const haul_torrent_handle *handle, haul_torrent_status *status, char *error,
                               size_t error_size) {
    try {
        lt::torrent_status now = handle->handle.status();
        status->state = static_cast<int>(now.state);
        status->has_metadata = now.has_metadata ? 1 : 0;
        status->paused = (now.flags & lt::torrent_flags::paused) ? 1 : 0;
        status->total_wanted = now.total_wanted;
        status->total_wanted_done = now.total_wanted_done;
        status->total_payload_download = now.total_payload_download;
        status->total_payload_upload = now.total_payload_upload;
        status->download_rate = now.download_payload_rate;
        status->upload_rate = now.upload_payload_rate;
        status->num_peers = now.num_peers;
        status->num_seeds = now.num_seeds;
        status->need_save_resume = now.need_save_resume ? 1 : 0;
        copy_string(now.errc ? now.errc.message() : std::string(), status->error, sizeof status->error);
        return 0;
    } catch (...) {
        fail(error, error_size, current_message());
        return -1;
    }
}

haul_torrent_params *haul_torrent_handle_metadata(const haul_torrent_handle *handle) {
    try {
        std::shared_ptr<const lt::torrent_info> info = handle->handle.torrent_file();
        if (!info || !info->is_valid()) return nullptr;
        auto *result = new haul_torrent_params;
        result->params.ti = std::make_shared<lt::torrent_info>(*info);
        return result;
    } catch (...) {
        return nullptr;
    }
}

int haul_torrent_handle_file_progress(const haul_torrent_handle *handle, int64_t *bytes, int count) {
    try {
        std::vector<std::int64_t> progress;
        handle->handle.file_progress(progress, lt::torrent_handle::piece_granularity);
        int written = 0;
        for (; written < count && written < static_cast<int>(progress.size()); ++written) {
            bytes[written] = progress[static_cast<size_t>(written)];
        }
        return written;
    } catch (...) {
        return 0;
    }
}

void haul_torrent_handle_rename_file(const haul_torrent_handle *handle, int index, const char *path) {
    try {
        handle->handle.rename_file(lt::file_index_t(index), path);
    } catch (...) {
    }
}

void haul_torrent_handle_set_file_priority(const haul_torrent_handle *handle, int index, int priority) {
    try {
        handle->handle.file_priority(lt::file_index_t(index), lt::download_priority_t(static_cast<std::uint8_t>(priority)));
    } catch (...) {
    }
}

void haul_torrent_handle_file_path(const haul_torrent_handle *handle, int index, char *path, size_t size) {
    try {
        std::shared_ptr<const lt::torrent_info> info = handle->handle.torrent_file();
        // The torrent's own file list holds its renamed names.
        copy_string(info ? info->files().file_path(lt::file_index_t(index)) : std::string(), path, size);
    } catch (...) {
        copy_string("", path, size);
    }
}

void haul_torrent_handle_save_resume_data(const haul_torrent_handle *handle) {
    try {
        handle->handle.save_resume_data(lt::torrent_handle::save_info_dict | lt::torrent_handle::flush_disk_cache);
    } catch (...) {
    }
}

void haul_torrent_handle_pause(const haul_torrent_handle *handle) {
    try {
        handle->handle.pause();
    } catch (...) {
    }
}

void haul_torrent_handle_resume(const haul_torrent_handle *handle) {
    try {
        handle->handle.resume();
    } catch (...) {
    }
}

}  // extern "C"
