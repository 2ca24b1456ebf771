#pragma once
// A directory that exists for one test and is removed after it.

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <stdlib.h>

namespace test_support {

class temp_dir {
public:
    temp_dir() {
        // mkdtemp: unique and created atomically, even across parallel test processes.
        std::string tmpl = (std::filesystem::temp_directory_path() / "strata-test-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
        path_ = tmpl;
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir() {
        // STRATA_KEEP_TEST_DIRS=1 keeps it, for reading a failed run's logs and state.
        if (const char* keep = std::getenv("STRATA_KEEP_TEST_DIRS"); keep != nullptr && std::string_view(keep) == "1") {
            return;
        }
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    [[nodiscard]] std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

}  // namespace test_support
