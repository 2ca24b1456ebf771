#pragma once
/// @file
/// @brief The exceptions of the stream runtime. Both derive from
/// `strata::error`; the runtime's other failures are the core's
/// (strata/core/error.hpp) and strata::kafka's (`kafka::error`).

#include <strata/core/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::runtime {

/// @brief An error in the processor, with the coordinates of the record it
/// was processing. The original exception is nested.
class processing_error : public error {
public:
    processing_error(const std::string& task, std::string_view topic, std::int32_t partition, std::int64_t offset,
                     std::string_view what)
        : error("strata::runtime: task " + task + " failed on the record at " + std::string(topic) + "[" +
                std::to_string(partition) + "]@" + std::to_string(offset) + ": " + std::string(what)) {}
};

/// @brief An input record whose key or value does not decode, under
/// `bad_record_action::fail`.
class bad_record_error : public error {
public:
    bad_record_error(std::string_view topic, std::int32_t partition, std::int64_t offset, std::string_view what)
        : error("strata::runtime: cannot decode the input record at " + std::string(topic) + "[" +
                std::to_string(partition) + "]@" + std::to_string(offset) + ": " + std::string(what)) {}
};

}  // namespace strata::runtime
