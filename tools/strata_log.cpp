// strata-log: checks a file_log directory, and on request repairs it.
//
//   strata-log verify DIR   reports the first damage, if any; changes nothing
//   strata-log repair DIR   cuts the log to its last intact flush
//
// Exit status: 0 the log is intact (verify) or was repaired (repair);
// 1 verify found damage; 2 a usage or I/O error.

#include <strata/changelog/file_log.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string_view>

namespace {

int usage() {
    std::fputs("usage: strata-log verify DIR   check a file_log, changing nothing\n"
               "       strata-log repair DIR   cut a damaged file_log to its last intact flush\n",
               stderr);
    return 2;
}

void print(const std::filesystem::path& dir, const strata::file_log_check& c) {
    std::printf("log:              %s\n", dir.c_str());
    std::printf("intact:           %s\n", c.intact ? "yes" : "no");
    if (!c.intact) {
        std::printf("damage:           %s at byte offset %llu: %s\n", c.damaged_file.c_str(),
                    static_cast<unsigned long long>(c.damaged_byte), c.problem.c_str());
    }
    std::printf("intact end:       offset %llu (%llu records before it)\n",
                static_cast<unsigned long long>(c.intact_end), static_cast<unsigned long long>(c.records));
    if (c.unfinished_bytes > 0)
        std::printf("unfinished flush: %llu bytes after the last commit frame (opening the log cuts them)\n",
                    static_cast<unsigned long long>(c.unfinished_bytes));
    for (const auto& f : c.stray_files)
        std::printf("stray segment:    %s (not in the manifest; opening the log removes it)\n", f.c_str());
    // Not damage: an index only saves reading. A log written before sealed
    // segments had indexes lists them all; opening it writes them.
    for (const auto& f : c.unindexed_segments)
        std::printf("no usable index:  %s (opening the log reads it whole, and writes its index)\n", f.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) return usage();
    const std::string_view command = argv[1];
    const std::filesystem::path dir = argv[2];
    try {
        if (!std::filesystem::is_directory(dir)) {
            std::fprintf(stderr, "strata-log: %s is not a directory\n", dir.c_str());
            return 2;
        }
        if (command == "verify") {
            const auto c = strata::file_log::verify(dir);
            print(dir, c);
            return c.intact ? 0 : 1;
        }
        if (command == "repair") {
            const auto c = strata::file_log::repair(dir);
            print(dir, c);
            if (!c.intact || c.unfinished_bytes > 0 || !c.stray_files.empty())
                std::printf("repaired:         cut %llu bytes, removed %zu segment files; the log now ends at offset %llu\n",
                            static_cast<unsigned long long>(c.bytes_cut), c.segments_removed,
                            static_cast<unsigned long long>(c.intact_end));
            else
                std::printf("repaired:         nothing to do\n");
            return 0;
        }
        return usage();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strata-log: %s\n", e.what());
        return 2;
    }
}
