#pragma once
/// @file
/// @brief The exception of the query gateway. It derives from
/// `strata::error`; the gateway's other failures are those of the runtime
/// and of strata::http.

#include <strata/core/error.hpp>

#include <string>

namespace strata::gateway {

/// @brief A request the gateway cannot serve as asked (bad key, bad
/// parameter): answered with 400 and the message.
class bad_request : public error {
public:
    explicit bad_request(const std::string& what) : error(what) {}
};

}  // namespace strata::gateway
