#pragma once
/// @file
/// @brief The exceptions strata throws. Every failure strata can detect at run
/// time is one of these, with a message that names what went wrong and where.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace strata {

/// @brief Base of every exception strata throws.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// @brief Bytes that do not decode as the type asked for: truncated input,
/// an impossible length, trailing garbage.
class serde_error : public error {
public:
    /// @param type_name the type being decoded, for the message
    /// @param offset byte offset in the input where decoding failed
    /// @param what what was wrong at that offset
    serde_error(std::string_view type_name, std::size_t offset, std::string_view what)
        : error("strata: cannot decode " + std::string(type_name) + " at byte offset " +
                std::to_string(offset) + ": " + std::string(what)),
          type_name_(type_name), offset_(offset) {}

    [[nodiscard]] const std::string& type_name() const noexcept { return type_name_; }
    [[nodiscard]] std::size_t offset() const noexcept { return offset_; }

private:
    std::string type_name_;
    std::size_t offset_;
};

/// @brief Durable bytes (a changelog segment, a checkpoint) that fail their
/// integrity check somewhere other than a torn tail. Data written before the
/// damaged spot is intact; strata refuses to guess past it.
class corruption_error : public error {
public:
    corruption_error(std::string file, std::uint64_t byte_offset, std::string_view what)
        : error("strata: corrupt data in " + file + " at byte offset " +
                std::to_string(byte_offset) + ": " + std::string(what)),
          file_(std::move(file)), byte_offset_(byte_offset) {}

    [[nodiscard]] const std::string& file() const noexcept { return file_; }
    [[nodiscard]] std::uint64_t byte_offset() const noexcept { return byte_offset_; }

private:
    std::string file_;
    std::uint64_t byte_offset_;
};

/// @brief A changelog could not do what was asked: an I/O error, a broker
/// that refused or went away, a record that was not acknowledged.
class changelog_error : public error {
public:
    using error::error;
};

/// @brief A changelog record could not be restored into its store: the
/// codec rejected it (bytes that do not decode as the store's state, a key
/// of the wrong shape). Names the store and the record's offset; the
/// codec's own error is nested (std::rethrow_if_nested).
class restore_error : public error {
public:
    restore_error(std::string_view store, std::uint64_t offset, std::string_view what)
        : error("strata: cannot restore store '" + std::string(store) + "' from the changelog record at offset " +
                std::to_string(offset) + ": " + std::string(what)),
          offset_(offset) {}

    [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }

private:
    std::uint64_t offset_;
};

/// @brief A store's engine refused an operation (RocksDB could not open its
/// directory or write its batch, SQLite rejected a statement): names the
/// store, what it was doing, and the engine's own message.
class store_error : public error {
public:
    using error::error;
};

/// @brief The API was used in a way its contract forbids, found at run time
/// (what can be found at compile time is a static_assert instead).
class usage_error : public error {
public:
    using error::error;
};

}  // namespace strata
