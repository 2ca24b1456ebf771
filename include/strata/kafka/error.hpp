#pragma once
/// @file
/// @brief How librdkafka failures become strata exceptions: every one is a
/// `strata::changelog_error` whose message names what strata was doing,
/// librdkafka's error name (e.g. `_TRANSPORT`, `TOPIC_AUTHORIZATION_FAILED`)
/// and librdkafka's own description.

#include <strata/core/error.hpp>

#include <memory>
#include <string>
#include <string_view>

#include <librdkafka/rdkafka.h>

namespace strata::kafka {

/// @brief A `changelog_error` raised by librdkafka, keeping its error code so
/// that callers can tell, say, a fenced producer from a broker that went away.
class error : public strata::changelog_error {
public:
    /// @param what what strata was doing, e.g. "create topic app-s-changelog"
    /// @param code librdkafka's error code
    /// @param detail librdkafka's error string, when it gave a more specific one
    error(std::string_view what, rd_kafka_resp_err_t code, std::string_view detail = {})
        : changelog_error(format(what, code, detail)), code_(code) {}

    [[nodiscard]] rd_kafka_resp_err_t code() const noexcept { return code_; }

private:
    static std::string format(std::string_view what, rd_kafka_resp_err_t code, std::string_view detail) {
        std::string m = "strata::kafka: ";
        m += what;
        m += ": ";
        m += rd_kafka_err2name(code);
        m += ": ";
        m += detail.empty() ? std::string_view(rd_kafka_err2str(code)) : detail;
        return m;
    }

    rd_kafka_resp_err_t code_;
};

/// @brief Throws `kafka::error` unless `code` is NO_ERROR.
inline void check(rd_kafka_resp_err_t code, std::string_view what) {
    if (code != RD_KAFKA_RESP_ERR_NO_ERROR) throw error(what, code);
}

/// @brief Whether a request to a group coordinator failed because there was
/// none that answered: it moved or is loading (its broker died), or the
/// request went unanswered. Nothing is wrong with the request itself.
inline bool group_coordinator_unavailable(rd_kafka_resp_err_t code) noexcept {
    return code == RD_KAFKA_RESP_ERR__WAIT_COORD || code == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE ||
           code == RD_KAFKA_RESP_ERR_NOT_COORDINATOR || code == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
           code == RD_KAFKA_RESP_ERR__TRANSPORT || code == RD_KAFKA_RESP_ERR__TIMED_OUT ||
           code == RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE || code == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
}

namespace detail {
/// A deleter that calls one of librdkafka's destroy functions.
template <auto Destroy>
struct destroy_with {
    template <class T>
    void operator()(T* p) const noexcept {
        Destroy(p);
    }
};
}  // namespace detail

/// @brief Owns an `rd_kafka_error_t` (the transactional API's richer error).
using unique_error = std::unique_ptr<rd_kafka_error_t, detail::destroy_with<&rd_kafka_error_destroy>>;

/// @brief Takes ownership of an `rd_kafka_error_t` and throws it as
/// `kafka::error`; does nothing for null.
inline void check(rd_kafka_error_t* err, std::string_view what) {
    const unique_error owned(err);
    if (!owned) return;
    throw error(what, rd_kafka_error_code(err), rd_kafka_error_string(err));
}

}  // namespace strata::kafka
