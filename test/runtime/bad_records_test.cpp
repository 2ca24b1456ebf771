// Input records whose value does not decode: with a dead-letter topic they
// go there, unchanged, with their coordinates and the error in headers, and
// processing goes on; without one the instance stops with an error naming
// the record.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <map>

using namespace runtime_test;

namespace {

struct dead_letter {
    std::string key, value;
    std::map<std::string, std::string> headers;
};

/// Every record of every partition of `topic`.
std::vector<dead_letter> read_dead_letters(const std::string& topic, std::int32_t partitions) {
    strata::kafka::conf c;
    c.set("bootstrap.servers", kafka_test::bootstrap());
    c.set("group.id", kafka_test::unique_name("dead-letter-reader"));
    c.set("enable.partition.eof", "true");
    c.set("isolation.level", "read_committed");
    strata::kafka::client consumer(RD_KAFKA_CONSUMER, std::move(c));
    consumer.close_consumer_on_destroy();
    strata::kafka::unique_partition_list l(rd_kafka_topic_partition_list_new(partitions));
    for (std::int32_t p = 0; p < partitions; ++p)
        rd_kafka_topic_partition_list_add(l.get(), topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    strata::kafka::check(rd_kafka_assign(consumer.get(), l.get()), "assign");
    std::vector<dead_letter> out;
    int at_end = 0;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (at_end < partitions && std::chrono::steady_clock::now() < deadline) {
        const strata::kafka::unique_message m(rd_kafka_consumer_poll(consumer.get(), 200));
        if (!m) continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            ++at_end;
            continue;
        }
        strata::kafka::check(m->err, "read the dead letters");
        dead_letter d{std::string(static_cast<const char*>(m->key), m->key_len),
                      std::string(static_cast<const char*>(m->payload), m->len), {}};
        rd_kafka_headers_t* h = nullptr;
        if (rd_kafka_message_headers(m.get(), &h) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const char* name = nullptr;
            const void* value = nullptr;
            std::size_t size = 0;
            for (std::size_t i = 0; rd_kafka_header_get_all(h, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i)
                d.headers[name] = std::string(static_cast<const char*>(value), size);
        }
        out.push_back(std::move(d));
    }
    REQUIRE(at_end == partitions);
    return out;
}

}  // namespace

TEST_CASE("runtime: a record that does not decode goes to the dead-letter topic, and processing goes on",
          "[kafka][runtime][bad-records]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    constexpr int keys = 20;
    const std::string app = kafka_test::unique_name("poison");
    const std::string input = kafka_test::make_topic("poison-in", partitions, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("poison-out", partitions, {{"cleanup.policy", "delete"}});
    input_writer in(input, partitions);
    for (std::int64_t i = 0; i < 1000; ++i) in.write(i, keys, i == 500 ? std::optional<std::string>("bad") : std::nullopt);
    in.flush();
    const std::string poison_key = key_of(500, keys);
    const std::int32_t poison_partition = partition_of(poison_key, partitions);
    std::int64_t poison_offset = -1;
    const auto& written = in.written()[static_cast<std::size_t>(poison_partition)];
    for (std::size_t o = 0; o < written.size(); ++o)
        if (written[o].amount < 0) poison_offset = static_cast<std::int64_t>(o);
    REQUIRE(poison_offset >= 0);

    instance_process one({"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input, "--output", output,
                          "--state", (dir / "state").string(), "--instance", "one", "--commit-ms", "200",
                          "--dead-letter"},
                         dir / "one.log");
    REQUIRE(await_committed(app, input, in.written(), 60s, [&] { return one.running(); }));
    one.kill(SIGTERM);
    REQUIRE(WIFEXITED(one.wait()));

    const auto letters = read_dead_letters(app + "-dead-letters", partitions);
    REQUIRE(letters.size() == 1);
    CHECK(letters[0].key == poison_key);
    CHECK(letters[0].value == "bad");
    CHECK(letters[0].headers.at("strata.topic") == input);
    CHECK(letters[0].headers.at("strata.partition") == std::to_string(poison_partition));
    CHECK(letters[0].headers.at("strata.offset") == std::to_string(poison_offset));
    CHECK_THAT(letters[0].headers.at("strata.error"), Catch::Contains("cannot decode"));

    // Every other input was processed, in order, as if the poison were not there.
    for (std::int32_t p = 0; p < partitions; ++p) {
        INFO("partition " << p);
        const auto expected = expected_output(in.written()[static_cast<std::size_t>(p)]);
        const auto actual = read_output(output, p);
        REQUIRE(actual.size() >= expected.size());  // at-least-once may repeat
        std::map<std::int64_t, update> by_offset;
        for (const auto& [k, u] : actual) by_offset[u.input_offset] = u;
        for (const auto& [k, u] : expected) REQUIRE(by_offset.at(u.input_offset) == u);
    }
}

TEST_CASE("runtime: without a dead-letter topic a record that does not decode stops the instance, named",
          "[kafka][runtime][bad-records]") {
    test_support::temp_dir dir;
    const std::string app = kafka_test::unique_name("poison-stop");
    const std::string input = kafka_test::make_topic("poison-stop-in", 1, {{"cleanup.policy", "delete"}});
    const std::string output = kafka_test::make_topic("poison-stop-out", 1, {{"cleanup.policy", "delete"}});
    input_writer in(input, 1);
    for (std::int64_t i = 0; i < 100; ++i) in.write(i, 5, i == 40 ? std::optional<std::string>("bad") : std::nullopt);
    in.flush();
    instance_process one({"--bootstrap", kafka_test::bootstrap(), "--app", app, "--input", input, "--output", output,
                          "--state", (dir / "state").string(), "--instance", "one", "--commit-ms", "200"},
                         dir / "one.log");
    const int status = one.wait(60s);
    INFO(one.output());
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 2);
    CHECK_THAT(one.output(), Catch::Contains("cannot decode the input record at " + input + "[0]@40"));
    // Nothing at or after the bad record was committed.
    CHECK(committed(app, input, 1)[0] <= 40);
}
