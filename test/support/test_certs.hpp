#pragma once
// The TLS tests' CA and certificates: scripts/make-test-certs.sh run into a
// directory (ca.pem, server.pem/.key for 127.0.0.1, ::1 and localhost,
// client.pem/.key named strata-peer, and a stranger's and another CA's).
// Needs STRATA_SOURCE_DIR (test/CMakeLists.txt defines it for these tests).

#include <cstdlib>
#include <filesystem>
#include <string>

namespace test_support {

/// @returns whether the script made them
inline bool make_test_certs(const std::filesystem::path& dir) {
    const std::string cmd =
        std::string("'") + STRATA_SOURCE_DIR + "/scripts/make-test-certs.sh' '" + dir.string() + "'";
    return std::system(cmd.c_str()) == 0;
}

}  // namespace test_support
