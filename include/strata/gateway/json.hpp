#pragma once
/// @file
/// @brief How keys and values cross HTTP: JSON through nlohmann::json's own
/// customization (a `to_json`/`from_json` pair found by ADL, or a
/// specialization of `nlohmann::adl_serializer<T>`), and a key in a URL
/// as `key_text<K>` reads it.

#include <strata/gateway/error.hpp>
#include <strata/gateway/http.hpp>
#include <strata/runtime/metadata.hpp>

#include <nlohmann/json.hpp>

#include <charconv>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace strata::gateway {

/// @brief How a key of type K is written in a URL (a path segment or a
/// query parameter, after percent-decoding): a string key as itself, an
/// integral key as its decimal digits, anything else as its JSON text
/// (`{"region":"eu","id":7}`). Specialize it for another spelling.
///
/// A string key must be UTF-8: the answer carries the key as a JSON string,
/// and JSON cannot carry other bytes. A key that is not is a bad request,
/// refused before any store is read.
template <class K>
struct key_text {
    static K parse(std::string_view text) {
        if constexpr (std::is_same_v<K, std::string>) {
            if (!valid_utf8(text))
                throw bad_request("the key '" + url_encode(text) +
                                  "' (percent-encoded here) is not valid UTF-8: JSON cannot carry it");
            return std::string(text);
        } else if constexpr (std::is_integral_v<K> && !std::is_same_v<K, bool>) {
            K k{};
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
            if (ec != std::errc() || end != text.data() + text.size())
                throw bad_request("'" + std::string(text) + "' is not a valid integer key");
            return k;
        } else {
            const json j = json::parse(text, nullptr, false);
            if (j.is_discarded()) throw bad_request("the key '" + std::string(text) + "' is not valid JSON");
            return from_json_checked<K>(j, "key");
        }
    }

    static std::string print(const K& k) {
        if constexpr (std::is_same_v<K, std::string>) return k;
        else if constexpr (std::is_integral_v<K> && !std::is_same_v<K, bool>) return std::to_string(k);
        else return json(k).dump();
    }

    /// @brief Converts JSON to T, as a bad request when it does not fit.
    template <class T>
    static T from_json_checked(const json& j, std::string_view what) {
        try {
            return j.get<T>();
        } catch (const json::exception& e) {
            throw bad_request("the " + std::string(what) + " " + j.dump() + " does not fit: " + e.what());
        }
    }
};

/// @brief Whether T converts to JSON through nlohmann::json.
template <class T>
concept json_convertible = requires(const T& t) { json(t); };

/// @brief The metadata as GET /instances answers it.
[[nodiscard]] inline json to_json(const runtime::application_metadata& md) {
    json instances = json::array();
    for (const runtime::instance_metadata& i : md.instances()) {
        json lags = json::object();
        for (const runtime::standby_lag& l : i.standby_lags) lags[std::to_string(l.task)] = l.lag;
        instances.push_back(json{{"instance", i.instance},
                                 {"endpoint", i.endpoint},
                                 {"active", i.active},
                                 {"standbys", i.standbys},
                                 {"standby_lags", lags},
                                 {"published_ms", i.published_ms}});
    }
    json partitions = json::array();
    for (std::int32_t p = 0; p < md.partitions(); ++p) {
        const runtime::partition_metadata where = md.partition(p);
        partitions.push_back(json{{"partition", p},
                                  {"active", where.active},
                                  {"active_endpoint", where.active_endpoint},
                                  {"standbys", where.standbys}});
    }
    return json{{"version", md.version()},
                {"leader", md.leader()},
                {"decided_ms", md.decided_ms()},
                {"partitions", partitions},
                {"instances", instances}};
}

}  // namespace strata::gateway
