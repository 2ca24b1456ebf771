#pragma once
// What the exactly-once tests share: the input consumer of a processor (a
// group, read_committed, offsets committed only by its transactions), the
// group's committed input offset, and one round of a processor run in a
// child process and killed at a random moment.

#include <strata/kafka/handles.hpp>
#include <strata/kafka/transaction.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kafka_test {

/// A consumer in `group` that reads committed records only and commits
/// nothing by itself.
inline strata::kafka::client eos_input_consumer(const std::string& bootstrap, const std::string& group) {
    strata::kafka::conf c;
    c.set("bootstrap.servers", bootstrap);
    c.set("group.id", group);
    c.set("enable.auto.commit", "false");
    c.set("auto.offset.reset", "earliest");
    c.set("isolation.level", "read_committed");
    strata::kafka::client k(RD_KAFKA_CONSUMER, std::move(c));
    k.close_consumer_on_destroy();
    return k;
}

/// The group's committed offset of partition 0 of `topic` (0 when nothing was committed).
inline std::int64_t committed_input_offset(rd_kafka_t* consumer, const std::string& topic) {
    const strata::kafka::unique_partition_list l = strata::kafka::one_partition(topic, 0);
    strata::kafka::check(rd_kafka_committed(consumer, l.get(), 30'000), "read the committed offset");
    strata::kafka::check(l->elems[0].err, "read the committed offset");
    return l->elems[0].offset < 0 ? 0 : l->elems[0].offset;
}

/// Runs `processor` (which never returns) in a child process. With
/// `kill_after`, SIGKILLs it then and returns whether it was still running
/// (true) or had already finished with status 0 (false). Without, waits up
/// to 120 s for it to finish with status 0 and returns false.
/// @pre no librdkafka handle is alive in this process (fork)
template <class Processor>
bool run_processor_round(Processor processor, std::optional<std::chrono::milliseconds> kill_after) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) processor();
    int status = 0;
    if (kill_after) {
        std::this_thread::sleep_for(*kill_after);
        REQUIRE(::kill(child, SIGKILL) == 0);
        REQUIRE(::waitpid(child, &status, 0) == child);
        if (WIFSIGNALED(status)) return true;
        REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    pid_t done = 0;
    while ((done = ::waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (done == 0) {
        ::kill(child, SIGKILL);
        ::waitpid(child, &status, 0);
        FAIL("the last processor did not finish within 120 s");
    }
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return false;
}

}  // namespace kafka_test
